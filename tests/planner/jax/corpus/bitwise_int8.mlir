// Hand-written in the form `jax.jit(f).lower(x, s).as_text()` prints (JAX 0.4.3x), not a real
// export. Bit ops act at int8's own width: shifts by 8 or more give 0 (or the sign fill), and
// the logical shift reads the value's 8 bits unsigned.
//   def f(x, s):  # x, s: int8 (4,)
//     return (x & s) ^ ~x, x << s, lax.shift_right_logical(x, s), x >> s
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi8> {mhlo.layout_mode = "default"}, %arg1: tensor<4xi8> {mhlo.layout_mode = "default"}) -> (tensor<4xi8> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<4xi8> {jax.result_info = "[1]", mhlo.layout_mode = "default"}, tensor<4xi8> {jax.result_info = "[2]", mhlo.layout_mode = "default"}, tensor<4xi8> {jax.result_info = "[3]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.and %arg0, %arg1 : tensor<4xi8>
    %1 = stablehlo.not %arg0 : tensor<4xi8>
    %2 = stablehlo.xor %0, %1 : tensor<4xi8>
    %3 = stablehlo.shift_left %arg0, %arg1 : tensor<4xi8>
    %4 = stablehlo.shift_right_logical %arg0, %arg1 : tensor<4xi8>
    %5 = stablehlo.shift_right_arithmetic %arg0, %arg1 : tensor<4xi8>
    return %2, %3, %4, %5 : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>
  }
}
