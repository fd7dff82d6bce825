module @jit_g attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf64> loc("a"), %arg1: tensor<3x2xf16> loc("b"), %arg2: tensor<i64>) -> (tensor<2x2xf32> {jax.result_info = "result[0]"}, tensor<4x3xf64> {jax.result_info = "result[1]"}, tensor<2xi32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<2x3xf64>) -> tensor<2x3xf32>
    %1 = stablehlo.convert %arg1 : (tensor<3x2xf16>) -> tensor<3x2xf32>
    %2:2 = stablehlo.optimization_barrier %0, %1 : tensor<2x3xf32>, tensor<3x2xf32>
    %3 = stablehlo.dot %2#0, %2#1, precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %cst = stablehlo.constant dense<0x3FF0000000000000> : tensor<f64>
    %4 = stablehlo.pad %arg0, %cst, low = [1, 0], high = [1, 0], interior = [0, 0] : (tensor<2x3xf64>, tensor<f64>) -> tensor<4x3xf64>
    %5 = stablehlo.iota dim = 1 : tensor<2x3xi32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %6:2 = stablehlo.reduce(%0 init: %cst_0), (%5 init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg3: tensor<f32> loc("x"), %arg5: tensor<f32> loc("x")) (%arg4: tensor<i32> loc("x"), %arg6: tensor<i32> loc("x"))  {
      %7 = stablehlo.compare  GT, %arg3, %arg5,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.compare  NE, %arg3, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %9 = stablehlo.or %7, %8 : tensor<i1>
      %10 = stablehlo.compare  EQ, %arg3, %arg5,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %11 = stablehlo.compare  LT, %arg4, %arg6,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %12 = stablehlo.and %10, %11 : tensor<i1>
      %13 = stablehlo.or %9, %12 : tensor<i1>
      %14 = stablehlo.select %9, %arg3, %arg5 : tensor<i1>, tensor<f32>
      %15 = stablehlo.select %13, %arg4, %arg6 : tensor<i1>, tensor<i32>
      stablehlo.return %14, %15 : tensor<f32>, tensor<i32>
    } loc(#loc2)
    return %3, %4, %6#1 : tensor<2x2xf32>, tensor<4x3xf64>, tensor<2xi32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("/tmp/g.py":7:11)
#loc2 = loc("jit(g)/jit(main)/argmax[axes=(1,) index_dtype=int32]"(#loc1))
