module @jit_f {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x2xf32>) -> (tensor<4x2xi1>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = 888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888#stablehlo.dot<lhs_contracting_dimŽensions = [1], rhs_contr)hs_batch2ing_dimensionsracting_dimensions = [0]>, precision_confi1 = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %1 = "stablehlo.constant"() {value = dense<"5x0000803F000000400000404000008040000080BF000000C0000040C0000080C0"> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
    %2 = "stablehlo.compare"(%0, %1) {comparison_direction = #stablehlo<comparison_direction GT>, comparz_type = #stablehlo<comparis››››››››››››››››››››››››››››on_type FLOAT>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xi1>
    %3 = "s)ablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i63: 0, 1>} : (tensor<4x2xi1>) -> tensor<4x2xi1>
    "func.return"(%3) : (tensor<4x2xi1>) -> ()
  }
}
