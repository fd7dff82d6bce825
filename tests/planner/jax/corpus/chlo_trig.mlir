module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32> {mhlo.layout_mode = "default"}) -> (tensor<8xf32> {jax.result_info = "[0]"}, tensor<8xf32> {jax.result_info = "[1]"}, tensor<8xf32> {jax.result_info = "[2]"}, tensor<8xf32> {jax.result_info = "[3]"}, tensor<8xf32> {jax.result_info = "[4]"}, tensor<8xf32> {jax.result_info = "[5]"}, tensor<8xf32> {jax.result_info = "[6]"}, tensor<8xf32> {jax.result_info = "[7]"}, tensor<8xf32> {jax.result_info = "[8]"}) {
    %0 = chlo.sinh %arg0 : tensor<8xf32> -> tensor<8xf32>
    %1 = chlo.cosh %arg0 : tensor<8xf32> -> tensor<8xf32>
    %2 = chlo.tan %arg0 : tensor<8xf32> -> tensor<8xf32>
    %3 = chlo.asin %arg0 : tensor<8xf32> -> tensor<8xf32>
    %4 = chlo.acos %arg0 : tensor<8xf32> -> tensor<8xf32>
    %5 = chlo.atan %arg0 : tensor<8xf32> -> tensor<8xf32>
    %6 = chlo.asinh %arg0 : tensor<8xf32> -> tensor<8xf32>
    %7 = chlo.acosh %arg0 : tensor<8xf32> -> tensor<8xf32>
    %8 = chlo.atanh %arg0 : tensor<8xf32> -> tensor<8xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
