func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %x: tensor<2x4x8xf32>, %y: tensor<2x8x5xf32>, %c: tensor<8xf32>, %d: tensor<4xf32>) -> (tensor<4x6xf32>, tensor<2x4x5xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x4xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %1 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x5xf32>) -> tensor<2x4x5xf32>
  %bc = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %bd = stablehlo.broadcast_in_dim %d, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %2 = stablehlo.add %a, %bc : tensor<4x8xf32>
  %3 = stablehlo.multiply %2, %bd : tensor<4x8xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %4 = stablehlo.reduce(%3 init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %5 = stablehlo.compare  GT, %a, %2,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %6 = stablehlo.select %5, %a, %2 : tensor<4x8xi1>, tensor<4x8xf32>
  %i = stablehlo.iota dim = 1 : tensor<4x8xi32>
  %f = stablehlo.convert %i : (tensor<4x8xi32>) -> tensor<4x8xf32>
  %7 = stablehlo.add %6, %f : tensor<4x8xf32>
  %8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %9 = "stablehlo.custom_call"(%8) {call_target_name = "meshplan.softmax", meshplan.dim = -1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0, %1, %7, %4, %9 : tensor<4x6xf32>, tensor<2x4x5xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8x4xf32>
}
