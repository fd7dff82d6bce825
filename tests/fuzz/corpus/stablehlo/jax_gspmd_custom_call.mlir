module @jit_h attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"} loc("x")) -> (tensor<8x4xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32> loc(#loc3)
    %1 = call @double(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32> loc(#loc3)
    return %1 : tensor<8x4xf32> loc(#loc)
  } loc(#loc)
  func.func private @double(%arg0: tensor<8x4xf32> loc("x")) -> tensor<8x4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8x4xf32> loc(#loc3)
    return %0 : tensor<8x4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("jit(h)/jit(main)/sharding_constraint"("/tmp/h.py":4:8))
