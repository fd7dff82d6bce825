// Hand-written in the form `jax.jit(f).lower(x, y).as_text()` prints (JAX 0.4.3x), not a real
// export: jnp.concatenate([x, y]) with x of shape (0, 4), y of shape (3, 4).
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x4xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<3x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x4xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<0x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
}
