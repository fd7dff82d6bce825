module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<7xf32> {mhlo.layout_mode = "default"}) -> (tensor<7xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = "stablehlo.sort"(%arg0) ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.compare  GT, %arg1, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    }) {dimension = 0 : i64, is_stable = true} : (tensor<7xf32>) -> tensor<7xf32>
    return %0 : tensor<7xf32>
  }
}
