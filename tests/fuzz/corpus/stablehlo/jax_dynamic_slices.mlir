module @jit_cache attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4x3xf32>, %arg1: tensor<2x1x3xf32>, %arg2: tensor<i32>) -> (tensor<2x4x3xf32> {jax.result_info = "[0]"}, tensor<2x2x3xf32> {jax.result_info = "[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_update_slice %arg0, %arg1, %c, %arg2, %c : (tensor<2x4x3xf32>, tensor<2x1x3xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x4x3xf32>
    %1 = stablehlo.dynamic_slice %0, %c, %arg2, %c, sizes = [2, 2, 3] : (tensor<2x4x3xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x2x3xf32>
    %2 = "stablehlo.dynamic_slice"(%0, %c, %arg2, %c) <{slice_sizes = array<i64: 2, 2, 3>}> : (tensor<2x4x3xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x2x3xf32>
    %3 = stablehlo.add %1, %2 : tensor<2x2x3xf32>
    return %0, %3 : tensor<2x4x3xf32>, tensor<2x2x3xf32>
  }
}
