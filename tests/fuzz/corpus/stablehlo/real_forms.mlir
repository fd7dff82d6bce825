module @real_forms {
  func.func @main(%a: tensor<2x3xsi32>, %x: tensor<2x3xf32>, %y: tensor<3x4xf32>, %t: tensor<2x6xf32>) -> (tensor<2x3xsi32>, tensor<4x2xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x3xi32>) {
    %c = stablehlo.constant() <{value = dense<[[1, -2, 3], [4, 5, -6]]> : tensor<2x3xsi32>}> : () -> tensor<2x3xsi32>
    %0 = stablehlo.add %a, %c : tensor<2x3xsi32>
    %e = tensor.empty() : tensor<2x3xf32>
    %1 = stablehlo.maximum %x, %e : tensor<2x3xf32>
    %2 = stablehlo.einsum %1, %y, config = "ij,jk->ki" : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
    %3 = "stablehlo.unary_einsum"(%1) {einsum_config = "ij->i"} : (tensor<2x3xf32>) -> tensor<2xf32>
    %4:2 = stablehlo.custom_call @mhlo.topk(%t) {mhlo.attributes = {k = 3 : i64, largest = false}, mhlo.version = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
    return %0, %2, %3, %4#0, %4#1 : tensor<2x3xsi32>, tensor<4x2xf32>, tensor<2xf32>, tensor<2x3xf32>, tensor<2x3xi32>
  }
}
