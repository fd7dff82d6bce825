module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xi32> {mhlo.layout_mode = "default"}) -> (tensor<6xi32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.iota dim = 0 : tensor<6xi32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<6xi32>
    return %1 : tensor<6xi32>
  }
}
