module @jit_mlp attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "tp"=8]>
  func.func public @main(%arg0: tensor<64x128xf32>, %arg1: tensor<128x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg2: tensor<256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}, %arg3: tensor<256x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<64x128xf32> {jax.result_info = ""}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %2 = stablehlo.add %0, %1 : tensor<64x256xf32>
    %3 = stablehlo.constant dense<0.0> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<64x256xf32>
    %5 = stablehlo.maximum %2, %4 : tensor<64x256xf32>
    %6 = stablehlo.dot_general %5, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x256xf32>, tensor<256x128xf32>) -> tensor<64x128xf32>
    return %6 : tensor<64x128xf32>
  }
}
