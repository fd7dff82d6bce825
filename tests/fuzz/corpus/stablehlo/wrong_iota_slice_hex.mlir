sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[0, 1, 1, 7]>
func.func @main(%a: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"x"}]>}) -> tensor<2x8xf32> {
  %0 = stablehlo.iota dim = 3 : tensor<4x8xf32>
  %1 = stablehlo.slice %a [0:2] : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %2 = stablehlo.constant dense<0x3F80> : tensor<f32>
  %3 = stablehlo.constant dense<"0x0000803F00"> : tensor<2xf32>
  return %1 : tensor<2x8xf32>
}
