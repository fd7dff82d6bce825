// Hand-written in the form `jax.jit(f).lower(x, y).as_text()` prints (JAX 0.4.3x), not a real
// export. A max pool and a sum pool with 'SAME'-style padding over an array with no rows: every
// window holds only padding, so the results are the init values (-inf and 0).
//   def f(x, y):  # x: float32 (0, 3), y: float32 (1, 3)
//     m = lax.reduce_window(x, -jnp.inf, lax.max, (2, 1), (1, 1), ((1, 1), (0, 0)))
//     s = lax.reduce_window(x, 0.0, lax.add, (2, 1), (1, 1), ((1, 1), (0, 0)))
//     return jnp.maximum(m, y) + s
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x3xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<1x3xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x3xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %4 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }) : (tensor<0x3xf32>, tensor<f32>) -> tensor<1x3xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %cst_0) <{padding = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %4 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }) : (tensor<0x3xf32>, tensor<f32>) -> tensor<1x3xf32>
    %2 = stablehlo.maximum %0, %arg1 : tensor<1x3xf32>
    %3 = stablehlo.add %2, %1 : tensor<1x3xf32>
    return %3 : tensor<1x3xf32>
  }
}
