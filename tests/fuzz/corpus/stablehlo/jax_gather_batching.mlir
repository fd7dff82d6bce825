func.func public @main(%arg0: tensor<2x3x2xf32>, %arg1: tensor<2x1xi64>) -> tensor<2x2xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = true, slice_sizes = array<i64: 1, 1, 2>}> : (tensor<2x3x2xf32>, tensor<2x1xi64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
