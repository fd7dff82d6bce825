// Hand-written in the form `jax.jit(f).lower(x).as_text()` prints (JAX 0.4.3x), not a real
// export. Slices past the end are empty; padding an empty array gives only the padding value.
//   def f(x):  # x: (4,)
//     return jnp.concatenate([x[4:], np.zeros(0, np.float32), x * 2,
//                             jnp.pad(x[4:], (1, 2), constant_values=7)])
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.layout_mode = "default"}) -> (tensor<7xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.slice %arg0 [4:4] : (tensor<4xf32>) -> tensor<0xf32>
    %cst = stablehlo.constant dense<> : tensor<0xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %2 = stablehlo.multiply %arg0, %1 : tensor<4xf32>
    %3 = stablehlo.slice %arg0 [4:4] : (tensor<4xf32>) -> tensor<0xf32>
    %cst_1 = stablehlo.constant dense<7.000000e+00> : tensor<f32>
    %4 = stablehlo.pad %3, %cst_1, low = [1], high = [2], interior = [0] : (tensor<0xf32>, tensor<f32>) -> tensor<3xf32>
    %5 = stablehlo.concatenate %0, %cst, %2, %4, dim = 0 : (tensor<0xf32>, tensor<0xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<7xf32>
    return %5 : tensor<7xf32>
  }
}
