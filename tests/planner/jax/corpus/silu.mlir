module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xbf16> {mhlo.layout_mode = "default"}) -> (tensor<8x8xbf16> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = call @silu(%arg0) : (tensor<8x8xbf16>) -> tensor<8x8xbf16>
    return %0 : tensor<8x8xbf16>
  }
  func.func private @silu(%arg0: tensor<8x8xbf16>) -> tensor<8x8xbf16> {
    %0 = stablehlo.logistic %arg0 : tensor<8x8xbf16>
    %1 = stablehlo.multiply %arg0, %0 : tensor<8x8xbf16>
    return %1 : tensor<8x8xbf16>
  }
}
