// Hand-written in the form `jax.jit(f).lower(x, y).as_text()` prints (JAX 0.4.3x), not a real
// export. int8 arithmetic wraps modulo 2^8: 1 + 127 = -128.
//   def f(x, y):  # x, y: int8 (4,)
//     return (x + jnp.int8(127)) * y
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi8> {mhlo.layout_mode = "default"}, %arg1: tensor<4xi8> {mhlo.layout_mode = "default"}) -> (tensor<4xi8> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<127> : tensor<i8>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i8>) -> tensor<4xi8>
    %1 = stablehlo.add %arg0, %0 : tensor<4xi8>
    %2 = stablehlo.multiply %1, %arg1 : tensor<4xi8>
    return %2 : tensor<4xi8>
  }
}
