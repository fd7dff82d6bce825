// Hand-written in the generic form JAX (0.4.3x) prints scatters in, not a real export: the
// variadic stablehlo.scatter (two inputs and two updates sharing one index set; the region
// takes both inputs' elements, then both updates', and returns one value per result). Rows of
// x get u added; the same rows of n are replaced by v.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x3xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<5x3xi32> {mhlo.layout_mode = "default"}, %arg2: tensor<2xi32> {mhlo.layout_mode = "default"}, %arg3: tensor<2x3xf32> {mhlo.layout_mode = "default"}, %arg4: tensor<2x3xi32> {mhlo.layout_mode = "default"}) -> (tensor<5x3xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<5x3xi32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %1:2 = "stablehlo.scatter"(%arg0, %arg1, %0, %arg3, %arg4) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<f32>, %arg8: tensor<i32>):
      %2 = stablehlo.add %arg5, %arg7 : tensor<f32>
      stablehlo.return %2, %arg8 : tensor<f32>, tensor<i32>
    }) : (tensor<5x3xf32>, tensor<5x3xi32>, tensor<2x1xi32>, tensor<2x3xf32>, tensor<2x3xi32>) -> (tensor<5x3xf32>, tensor<5x3xi32>)
    return %1#0, %1#1 : tensor<5x3xf32>, tensor<5x3xi32>
  }
}
