module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x6xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<2x3xi32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<2x6xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
    return %values, %indices : tensor<2x3xf32>, tensor<2x3xi32>
  }
}
