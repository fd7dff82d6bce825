module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xbf16> {mhlo.layout_mode = "default"}, %arg1: tensor<8x16xbf16> {mhlo.layout_mode = "default"}) -> (tensor<4x16xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}
