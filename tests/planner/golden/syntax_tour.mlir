module {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}p1, {"y":(1)2}], replicated={"y":(2)2}>}, %arg1: tensor<4x8xf32>) -> (tensor<4x8xi1>, tensor<8x4xf32>) {
    %0 = stablehlo.compare  GT, %arg0, %arg1,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %1 = stablehlo.select %0, %arg0, %arg1 : tensor<4x8xi1>, tensor<4x8xf32>
    %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %3 = stablehlo.slice %2 [0:8, 0:4:2] : (tensor<8x4xf32>) -> tensor<8x2xf32>
    %4 = stablehlo.concatenate %3, %3, dim = 1 : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x4xf32>
    %5 = stablehlo.iota dim = 0 : tensor<8x4xi32>
    %6 = stablehlo.convert %5 : (tensor<8x4xi32>) -> tensor<8x4xf32>
    %7 = stablehlo.constant dense<[[1.5, 2.0, -3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<2x4xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x4xf32>) -> tensor<8xf32>
    %9 = stablehlo.constant dense<0.0> : tensor<f32>
    %10 = stablehlo.reduce(%6 init: %9) across dimensions = [0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%arg2: tensor<f32>, %arg3: tensor<f32>)  {
      %15 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %15 : tensor<f32>
    }
    %11 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %16 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %16 : tensor<f32>
    }) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %12 = sdy.all_to_all [{"x"}: 0->1] %11 out_sharding=<@mesh, [{}, {"x"}]> : tensor<8x4xf32>
    %13 = stablehlo.negate %12 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>} : tensor<8x4xf32>
    %14 = stablehlo.dot_general %13, %6, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
    return %0, %13 : tensor<4x8xi1>, tensor<8x4xf32>
  }
}
