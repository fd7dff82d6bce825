module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32> {mhlo.layout_mode = "default"}) -> (tensor<8xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.exponential_minus_one %arg0 : tensor<8xf32>
    %1 = stablehlo.abs %arg0 : tensor<8xf32>
    %2 = stablehlo.log_plus_one %1 : tensor<8xf32>
    %3 = stablehlo.add %0, %2 : tensor<8xf32>
    return %3 : tensor<8xf32>
  }
}
