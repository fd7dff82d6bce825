module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<5x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<5x3xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<5x4xf32>, tensor<3x4xf32>) -> tensor<5x3xf32>
    return %0 : tensor<5x3xf32>
  }
}
