module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10xf32> {mhlo.layout_mode = "default"}) -> (tensor<10xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<10xf32>
    %1 = stablehlo.round_nearest_afz %arg0 : tensor<10xf32>
    %2 = stablehlo.add %0, %1 : tensor<10xf32>
    return %2 : tensor<10xf32>
  }
}
