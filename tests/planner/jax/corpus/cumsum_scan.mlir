module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.layout_mode = "default"}) -> (tensor<4xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = call @cumsum(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @cumsum(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.slice %arg0 [0:3:2] : (tensor<4xf32>) -> tensor<2xf32>
    %1 = stablehlo.slice %arg0 [1:4:2] : (tensor<4xf32>) -> tensor<2xf32>
    %2 = stablehlo.add %0, %1 : tensor<2xf32>
    %3 = stablehlo.slice %2 [0:1:2] : (tensor<2xf32>) -> tensor<1xf32>
    %4 = stablehlo.slice %2 [1:2:2] : (tensor<2xf32>) -> tensor<1xf32>
    %5 = stablehlo.add %3, %4 : tensor<1xf32>
    %6 = stablehlo.slice %5 [0:0] : (tensor<1xf32>) -> tensor<0xf32>
    %7 = stablehlo.slice %2 [2:2:2] : (tensor<2xf32>) -> tensor<0xf32>
    %8 = stablehlo.add %6, %7 : tensor<0xf32>
    %9 = stablehlo.slice %2 [0:1] : (tensor<2xf32>) -> tensor<1xf32>
    %10 = stablehlo.concatenate %9, %8, dim = 0 : (tensor<1xf32>, tensor<0xf32>) -> tensor<1xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.pad %10, %cst, low = [0], high = [1], interior = [1] : (tensor<1xf32>, tensor<f32>) -> tensor<2xf32>
    %12 = stablehlo.pad %5, %cst, low = [1], high = [0], interior = [1] : (tensor<1xf32>, tensor<f32>) -> tensor<2xf32>
    %13 = stablehlo.add %11, %12 : tensor<2xf32>
    %14 = stablehlo.slice %13 [0:1] : (tensor<2xf32>) -> tensor<1xf32>
    %15 = stablehlo.slice %arg0 [2:4:2] : (tensor<4xf32>) -> tensor<1xf32>
    %16 = stablehlo.add %14, %15 : tensor<1xf32>
    %17 = stablehlo.slice %arg0 [0:1] : (tensor<4xf32>) -> tensor<1xf32>
    %18 = stablehlo.concatenate %17, %16, dim = 0 : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
    %19 = stablehlo.pad %18, %cst, low = [0], high = [1], interior = [1] : (tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
    %20 = stablehlo.pad %13, %cst, low = [1], high = [0], interior = [1] : (tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
    %21 = stablehlo.add %19, %20 : tensor<4xf32>
    return %21 : tensor<4xf32>
  }
}
