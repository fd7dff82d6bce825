sdy.mesh @m = <["x"=2, "y"=2]>
sdy.mesh @n = <["a"=4]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@n, [{"a"}, {}]>}) {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {"y"}]>]>} : tensor<8x4xf32>
  %1 = sdy.reshard %0 <@n, [{"a"}, {}]> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
