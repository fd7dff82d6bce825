module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x5xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x5xi32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %i = stablehlo.iota dim = 1 : tensor<3x5xi32>
    %0:2 = "stablehlo.sort"(%arg0, %i) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %lz = stablehlo.compare  EQ, %arg1, %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %la = stablehlo.select %lz, %cst, %arg1 : tensor<i1>, tensor<f32>
      %ln = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lb = stablehlo.select %ln, %cst_0, %la : tensor<i1>, tensor<f32>
      %rz = stablehlo.compare  EQ, %arg2, %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %ra = stablehlo.select %rz, %cst, %arg2 : tensor<i1>, tensor<f32>
      %rn = stablehlo.compare  NE, %arg2, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %rb = stablehlo.select %rn, %cst_0, %ra : tensor<i1>, tensor<f32>
      %c = stablehlo.compare  LT, %lb, %rb,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<3x5xf32>, tensor<3x5xi32>) -> (tensor<3x5xf32>, tensor<3x5xi32>)
    return %0#1 : tensor<3x5xi32>
  }
}
