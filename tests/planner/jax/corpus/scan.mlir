module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<4xf32> {jax.result_info = "[0]"}, tensor<3x4xf32> {jax.result_info = "[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2:4 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c, %iterArg_1 = %0, %iterArg_2 = %1) : tensor<3x4xf32>, tensor<i32>, tensor<4xf32>, tensor<3x4xf32>
     cond {
      %c_3 = stablehlo.constant dense<3> : tensor<i32>
      %3 = stablehlo.compare  LT, %iterArg_0, %c_3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    } do {
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %3 = stablehlo.dynamic_slice %iterArg, %iterArg_0, %c_3, sizes = [1, 4] : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
      %4 = stablehlo.reshape %3 : (tensor<1x4xf32>) -> tensor<4xf32>
      %5 = stablehlo.add %iterArg_1, %4 : tensor<4xf32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
      %7 = stablehlo.dynamic_update_slice %iterArg_2, %6, %iterArg_0, %c_3 : (tensor<3x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x4xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg_0, %c_4 : tensor<i32>
      stablehlo.return %iterArg, %8, %5, %7 : tensor<3x4xf32>, tensor<i32>, tensor<4xf32>, tensor<3x4xf32>
    }
    return %2#2, %2#3 : tensor<4xf32>, tensor<3x4xf32>
  }
}
