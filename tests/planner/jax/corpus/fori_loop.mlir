// Hand-written in the form `jax.jit(f).lower(x).as_text()` prints (JAX 0.4.3x), not a real
// export: jax.lax.fori_loop(0, n, body, x) on its while_loop path (bounds that are not Python
// ints): the counter and the upper bound travel in the loop state; here the bound is the
// constant 3.
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.layout_mode = "default"}) -> (tensor<4xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c, %iterArg_1 = %c_0, %iterArg_2 = %arg0) : tensor<i32>, tensor<i32>, tensor<4xf32>
     cond {
      %1 = stablehlo.compare  LT, %iterArg, %iterArg_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = func.call @body(%iterArg_2) : (tensor<4xf32>) -> tensor<4xf32>
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg, %c_3 : tensor<i32>
      stablehlo.return %2, %iterArg_1, %1 : tensor<i32>, tensor<i32>, tensor<4xf32>
    }
    return %0#2 : tensor<4xf32>
  }
  func.func private @body(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<4xf32>
    %3 = stablehlo.sine %2 : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
}
