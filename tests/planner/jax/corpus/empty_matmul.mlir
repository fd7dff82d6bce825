// Hand-written in the form `jax.jit(f).lower(a, b, c).as_text()` prints (JAX 0.4.3x), not a
// real export. A matmul over an empty contracting axis is a sum of no products: zeros.
//   def f(a, b, c):  # a: (3, 0), b: (0, 2), c: (3, 2)
//     return a @ b + c
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x0xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<0x2xf32> {mhlo.layout_mode = "default"}, %arg2: tensor<3x2xf32> {mhlo.layout_mode = "default"}) -> (tensor<3x2xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x0xf32>, tensor<0x2xf32>) -> tensor<3x2xf32>
    %1 = stablehlo.add %0, %arg2 : tensor<3x2xf32>
    return %1 : tensor<3x2xf32>
  }
}
