func.func @main() -> tensor<1099511627776xf32> {
  %0 = stablehlo.constant dense<1.0> : tensor<1099511627776xf32>
  %1 = stablehlo.iota dim = 0 : tensor<4611686018427387904xf32>
  return %0 : tensor<1099511627776xf32>
}
