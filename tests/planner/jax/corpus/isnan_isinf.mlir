module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32> {mhlo.layout_mode = "default"}) -> (tensor<8xi1> {jax.result_info = "[0]"}, tensor<8xi1> {jax.result_info = "[1]"}) {
    %0 = stablehlo.compare  NE, %arg0, %arg0,  FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    %1 = stablehlo.abs %arg0 : tensor<8xf32>
    %cst = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %3 = stablehlo.compare  EQ, %1, %2,  FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    return %0, %3 : tensor<8xi1>, tensor<8xi1>
  }
}
