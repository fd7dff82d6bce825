func.func @main(%x: tensor<1x9x9x4xf32>, %w: tensor<3x3x4x6xf32>, %xc: tensor<1x4x9x9xf32>, %wc: tensor<6x2x3x3xf32>) -> (tensor<1x5x5x6xf32>, tensor<1x6x9x9xf32>) {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x9x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x5x5x6xf32>
  %1 = stablehlo.convolution(%xc, %wc) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[2, 2], [2, 2]], rhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x9x9xf32>
  return %0, %1 : tensor<1x5x5x6xf32>, tensor<1x6x9x9xf32>
}
