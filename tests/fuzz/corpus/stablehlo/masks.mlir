func.func @main(%s: tensor<4x8xf32>, %pad: tensor<1x8xf32>, %k: tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x8xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<4x8xf32>
  %neg = stablehlo.constant dense<-1.0e9> : tensor<4x8xf32>
  %pb = stablehlo.broadcast_in_dim %pad, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<4x8xf32>
  %keep = stablehlo.compare  GT, %pb, %zero,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %i = stablehlo.iota dim = 0 : tensor<4x8xi32>
  %j = stablehlo.iota dim = 1 : tensor<4x8xi32>
  %causal = stablehlo.compare  LE, %j, %i,  SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
  %m0 = stablehlo.select %keep, %s, %neg : tensor<4x8xi1>, tensor<4x8xf32>
  %m1 = stablehlo.select %causal, %m0, %neg : tensor<4x8xi1>, tensor<4x8xf32>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<6.0> : tensor<f32>
  %r6 = stablehlo.clamp %lo, %m1, %hi : (tensor<f32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %rmin = stablehlo.reduce(%s init: %inf) applies stablehlo.minimum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %prod = stablehlo.reduce(%s init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
  %z = stablehlo.constant dense<0> : tensor<4x8xi32>
  %pos = stablehlo.compare  NE, %k, %z,  SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
  %pf = stablehlo.convert %pos : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %w = stablehlo.clamp %zero, %s, %pf : tensor<4x8xf32>
  return %m1, %r6, %rmin, %prod, %w : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x8xf32>
}
