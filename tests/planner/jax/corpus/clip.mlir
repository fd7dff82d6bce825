module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10xf32> {mhlo.layout_mode = "default"}) -> (tensor<10xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = call @clip(%arg0, %cst, %cst_0) : (tensor<10xf32>, tensor<f32>, tensor<f32>) -> tensor<10xf32>
    return %0 : tensor<10xf32>
  }
  func.func private @clip(%arg0: tensor<10xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<10xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %1 = stablehlo.maximum %0, %arg0 : tensor<10xf32>
    %2 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %3 = stablehlo.minimum %2, %1 : tensor<10xf32>
    return %3 : tensor<10xf32>
  }
}
