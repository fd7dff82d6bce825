func.func public @main(%arg0: tensor<64x96xf32>, %arg1: tensor<96x128xf32>, %arg2: tensor<128x32xf32>) -> tensor<64x32xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x128xf32>) -> tensor<64x128xf32>
  %1 = stablehlo.tanh %0 : tensor<64x128xf32>
  %2 = stablehlo.dot_general %1, %arg2, contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x32xf32>) -> tensor<64x32xf32>
  %3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %4 = stablehlo.reduce(%2 init: %3) applies stablehlo.maximum across dimensions = [1] : (tensor<64x32xf32>, tensor<f32>) -> tensor<64xf32>
  %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<64xf32>) -> tensor<64x32xf32>
  %6 = stablehlo.subtract %2, %5 : tensor<64x32xf32>
  %7 = stablehlo.exponential %6 : tensor<64x32xf32>
  return %7 : tensor<64x32xf32>
}
