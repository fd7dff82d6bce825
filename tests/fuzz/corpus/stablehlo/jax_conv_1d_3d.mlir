module @jit_convs attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x16x4xf32> loc("x"), %arg1: tensor<3x4x8xf32> loc("w"), %arg2: tensor<1x4x6x6x2xf32> loc("v"), %arg3: tensor<2x3x3x2x4xf32> loc("k")) -> (tensor<2x8x8xf32> {jax.result_info = "result[0]"}, tensor<2x31x8xf32> {jax.result_info = "result[1]"}, tensor<1x2x4x4x4xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [2], pad = [[1, 1]], lhs_dilate = [1], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x16x4xf32>, tensor<3x4x8xf32>) -> tensor<2x8x8xf32> loc(#loc2)
    %1 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]], lhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x16x4xf32>, tensor<3x4x8xf32>) -> tensor<2x31x8xf32> loc(#loc3)
    %2 = stablehlo.convolution(%arg2, %arg3) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f], window = {stride = [2, 1, 1], pad = [[0, 1], [0, 0], [0, 0]], rhs_dilate = [1, 1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x6x6x2xf32>, tensor<2x3x3x2x4xf32>) -> tensor<1x2x4x4x4xf32> loc(#loc4)
    return %0, %1, %2 : tensor<2x8x8xf32>, tensor<2x31x8xf32>, tensor<1x2x4x4x4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("/tmp/convs.py":4:9)
#loc2 = loc("jit(convs)/jit(main)/conv_general_dilated"(#loc1))
#loc3 = loc("jit(convs)/jit(main)/conv_transpose"(#loc1))
#loc4 = loc("jit(convs)/jit(main)/conv3d"(#loc1))
