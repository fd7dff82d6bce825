#loc1 = loc("x")
module @jit_pools attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8x8x4xf32> loc("x"), %arg1: tensor<2x4x4x4xf32> loc("g")) -> (tensor<2x4x4x4xf32> {jax.result_info = "result[0]"}, tensor<2x4x4x4xf32> {jax.result_info = "result[1]"}, tensor<2x8x8x4xf32> {jax.result_info = "result[2]"}, tensor<2x8xf32> {jax.result_info = "result[3]"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32> loc(#loc2)
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown)):
      %6 = stablehlo.maximum %arg2, %arg3 : tensor<f32> loc(#loc2)
      stablehlo.return %6 : tensor<f32> loc(#loc2)
    }) : (tensor<2x8x8x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32> loc(#loc2)
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc3)
    %1 = "stablehlo.reduce_window"(%arg0, %cst_0) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown)):
      %6 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc3)
      stablehlo.return %6 : tensor<f32> loc(#loc3)
    }) : (tensor<2x8x8x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32> loc(#loc3)
    %cst_1 = stablehlo.constant dense<4.000000e+00> : tensor<f32> loc(#loc3)
    %2 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x4x4x4xf32> loc(#loc3)
    %3 = stablehlo.divide %1, %2 : tensor<2x4x4x4xf32> loc(#loc3)
    %4 = "stablehlo.select_and_scatter"(%arg0, %arg1, %cst_0) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown)):
      %6 = stablehlo.compare  GE, %arg2, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1> loc(#loc4)
      stablehlo.return %6 : tensor<i1> loc(#loc4)
    }, {
    ^bb0(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown)):
      %6 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc4)
      stablehlo.return %6 : tensor<f32> loc(#loc4)
    }) : (tensor<2x8x8x4xf32>, tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x8x8x4xf32> loc(#loc4)
    %5 = stablehlo.reshape %arg0 : (tensor<2x8x8x4xf32>) -> tensor<2x256xf32> loc(#loc5)
    %7 = stablehlo.slice %5 [0:2, 0:8] : (tensor<2x256xf32>) -> tensor<2x8xf32> loc(#loc5)
    %8 = "stablehlo.reduce_window"(%7, %cst_0) <{padding = dense<[[0, 0], [7, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 8>}> ({
    ^bb0(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown)):
      %6 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc5)
      stablehlo.return %6 : tensor<f32> loc(#loc5)
    }) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc(#loc5)
    return %0, %3, %4, %8 : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>, tensor<2x8xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc6 = loc("/tmp/pools.py":5:9)
#loc2 = loc("jit(pools)/jit(main)/reduce_window_max"(#loc6))
#loc3 = loc("jit(pools)/jit(main)/reduce_window_sum"(#loc6))
#loc4 = loc("jit(pools)/jit(main)/select_and_scatter_add"(#loc6))
#loc5 = loc("jit(pools)/jit(main)/cumsum"(#loc6))
