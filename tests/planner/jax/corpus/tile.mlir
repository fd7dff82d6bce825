module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = "default"}) -> (tensor<4x6xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [1, 3] : (tensor<2x3xf32>) -> tensor<2x2x2x3xf32>
    %1 = stablehlo.reshape %0 : (tensor<2x2x2x3xf32>) -> tensor<4x6xf32>
    return %1 : tensor<4x6xf32>
  }
}
