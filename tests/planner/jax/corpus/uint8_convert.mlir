// Hand-written in the form `jax.jit(f).lower(x).as_text()` prints (JAX 0.4.3x), not a real
// export. Integer converts keep the low bits (300 -> uint8 44) and uint8/int16 arithmetic
// wraps at its own width.
//   def f(x):  # x: int32 (4,)
//     return x.astype(jnp.uint8) + jnp.uint8(250), x.astype(jnp.int16) * jnp.int16(1000)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi32> {mhlo.layout_mode = "default"}) -> (tensor<4xui8> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<4xi16> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xui8>
    %c = stablehlo.constant dense<250> : tensor<ui8>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui8>) -> tensor<4xui8>
    %2 = stablehlo.add %0, %1 : tensor<4xui8>
    %3 = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xi16>
    %c_0 = stablehlo.constant dense<1000> : tensor<i16>
    %4 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i16>) -> tensor<4xi16>
    %5 = stablehlo.multiply %3, %4 : tensor<4xi16>
    return %2, %5 : tensor<4xui8>, tensor<4xi16>
  }
}
