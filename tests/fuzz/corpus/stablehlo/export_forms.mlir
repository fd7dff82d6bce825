#loc = loc(unknown)
module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]> loc(#loc)
  func.func private @add_mul(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %0 = stablehlo.add %a, %b : tensor<2x4xf32>
    %1 = stablehlo.multiply %0, %b : tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
  func.func public @main(%x: tensor<2x4xf32>, %init: tensor<f32>, %s: tensor<4xf32>, %o: tensor<4xf32>) -> (tensor<2xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xi32>) {
    %c = arith.constant dense<[[0.5, -1.0, 2.0, 0.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<2x4xf32>
    %0 = stablehlo.composite "my.add_mul" %x, %c {composite_attributes = {k = 1 : i64}, decomposition = @add_mul, version = 1 : i32} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc(#loc)
    %1 = stablehlo.reduce(%0 init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %r, %m, %v = "stablehlo.batch_norm_training"(%0, %s, %o) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
    %n = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x4xf32>) -> tensor<i32>
    %sh = stablehlo.constant dense<[2, 4]> : tensor<2xi64>
    %io = "stablehlo.dynamic_iota"(%sh) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> tensor<2x4xi32>
    %t = stablehlo.transpose %r, dims = [0, 1] {result_layout = dense<[1, 0]> : tensor<2xindex>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %srt:2 = "stablehlo.sort"(%t, %io) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %p: tensor<i32>, %q: tensor<i32>):
      %lt = stablehlo.compare  LT, %a, %b,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) : (tensor<2x4xf32>, tensor<2x4xi32>) -> (tensor<2x4xf32>, tensor<2x4xi32>)
    return %1, %srt#0, %m, %srt#1 : tensor<2xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xi32>
  } loc(#loc)
} loc(#loc)
