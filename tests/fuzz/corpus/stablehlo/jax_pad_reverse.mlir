module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> (tensor<5x9xf32> {jax.result_info = ""}, tensor<2x2xf32>) {
    %0 = stablehlo.pad %arg0, %arg1, low = [0, 1], high = [2, 1], interior = [1, 2] : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x9xf32>
    %1 = stablehlo.reverse %0, dims = [0, 1] : tensor<5x9xf32>
    %2 = "stablehlo.pad"(%arg0, %arg1) <{edge_padding_high = array<i64: 0, -2>, edge_padding_low = array<i64: 0, -1>, interior_padding = array<i64: 0, 1>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x2xf32>
    return %1, %2 : tensor<5x9xf32>, tensor<2x2xf32>
  }
}
