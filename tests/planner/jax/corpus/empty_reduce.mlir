// Hand-written in the form `jax.jit(f).lower(x, y).as_text()` prints (JAX 0.4.3x), not a real
// export. Reductions over an empty axis give their init value; the mean divides 0 by 0.
//   def f(x, y):  # x: (0, 4), y: (4,)
//     return jnp.maximum((y + x.sum(0)) * x.prod(0), x.max(0, initial=-jnp.inf)), x.mean(0)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x4xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<4xf32> {mhlo.layout_mode = "default"}) -> (tensor<4xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<4xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.add %arg1, %0 : tensor<4xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.multiply across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    %3 = stablehlo.multiply %1, %2 : tensor<4xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.maximum across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    %5 = stablehlo.maximum %3, %4 : tensor<4xf32>
    %6 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %8 = stablehlo.divide %6, %7 : tensor<4xf32>
    return %5, %8 : tensor<4xf32>, tensor<4xf32>
  }
}
