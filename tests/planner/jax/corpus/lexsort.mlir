module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xi32> {mhlo.layout_mode = "default"}, %arg1: tensor<6xf32> {mhlo.layout_mode = "default"}) -> (tensor<6xi32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.iota dim = 0 : tensor<6xi32>
    %1:3 = "stablehlo.sort"(%arg0, %arg1, %0) <{dimension = 0 : i64, is_stable = true, num_keys = 2 : i64}> ({
    ^bb0(%arg2: tensor<i32>, %arg3: tensor<i32>, %arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<i32>):
      %2 = stablehlo.compare  LT, %arg2, %arg3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %3 = stablehlo.compare  EQ, %arg2, %arg3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %10 = stablehlo.compare  EQ, %arg4, %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %11 = stablehlo.select %10, %cst, %arg4 : tensor<i1>, tensor<f32>
      %12 = stablehlo.compare  NE, %arg4, %arg4,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %13 = stablehlo.select %12, %cst_0, %11 : tensor<i1>, tensor<f32>
      %14 = stablehlo.compare  EQ, %arg5, %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %15 = stablehlo.select %14, %cst, %arg5 : tensor<i1>, tensor<f32>
      %16 = stablehlo.compare  NE, %arg5, %arg5,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %17 = stablehlo.select %16, %cst_0, %15 : tensor<i1>, tensor<f32>
      %4 = stablehlo.compare  LT, %13, %17,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = stablehlo.and %3, %4 : tensor<i1>
      %6 = stablehlo.or %2, %5 : tensor<i1>
      stablehlo.return %6 : tensor<i1>
    }) : (tensor<6xi32>, tensor<6xf32>, tensor<6xi32>) -> (tensor<6xi32>, tensor<6xf32>, tensor<6xi32>)
    return %1#2 : tensor<6xi32>
  }
}
