// The OpModel/emulator contract as a property, over every op and a sweep of operand and result
// layouts (DRAM/L1 interleaved, height/width/block sharded in both orientations), dtypes and
// matmul program configs: whatever validate() accepts runs and matches the f32 reference;
// whatever it rejects, launch() refuses with the same reason.
#include <doctest/doctest.h>

#include "device/layout_sweep.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::device::sweep;

TEST_CASE("matmul: validate() and launch() agree over layouts x program configs") {
  Sweep s;
  const std::vector<int64_t> as{64, 96}, bs{96, 128}, os{64, 128};  // out 2x4 tiles, K 3 tiles
  auto ha = random_values(as, 1), hb = random_values(bs, 2);
  std::vector<OpConfig> configs;
  OpConfig c = grid_config();
  configs.push_back(c);  // program none
  c.program = MatmulProgram::mcast_1d;
  configs.push_back(c);  // split N
  c.mcast_in0 = false;
  configs.push_back(c);  // split M
  c.program = MatmulProgram::mcast_2d;
  c.mcast_in0 = true;
  configs.push_back(c);
  c.in0_block_w = 1;
  configs.push_back(c);
  c.transpose_mcast = true;
  c.grid_x = 2;
  c.grid_y = 4;
  configs.push_back(c);
  c = grid_config();
  c.program = MatmulProgram::mcast_2d;
  c.in0_block_w = 2;  // does not divide K = 3 tiles
  configs.push_back(c);
  c = grid_config();
  c.program = MatmulProgram::mcast_1d;
  c.per_core_n = 2;
  c.out_subblock_w = 2;
  c.in0_block_w = 1;
  c.activation = Activation::relu;
  configs.push_back(c);
  // K in one-tile steps for each multicast program (more sharded pairs they accept).
  c = grid_config();
  c.program = MatmulProgram::mcast_1d;
  c.in0_block_w = 1;
  configs.push_back(c);  // split N
  c.mcast_in0 = false;
  configs.push_back(c);  // split M
  c = grid_config();
  c.program = MatmulProgram::mcast_2d;
  c.transpose_mcast = true;
  c.grid_x = 2;
  c.grid_y = 4;
  c.in0_block_w = 3;
  configs.push_back(c);
  for (Kind ka : kKinds)
    for (Kind kb : {Kind::dram, Kind::l1, Kind::width})
      for (Kind ko : kKinds)
        for (size_t ci = 0; ci < configs.size(); ++ci) {
          CAPTURE(kind_name(ka));
          CAPTURE(kind_name(kb));
          CAPTURE(kind_name(ko));
          CAPTURE(ci);
          s.check(OpKind::matmul,
                  {place("a", as, DType::bf16, ka), place("b", bs, DType::bf16, kb)},
                  place("c", os, DType::bf16, ko), configs[ci], {ha, hb}, 0.01);
        }
  MESSAGE("matmul sweep: ", s.accepted, " accepted (", s.accepted_sharded,
          " with sharded tensors), ", s.rejected, " rejected");
  // Program none writes interleaved results only (tt-metal's MatmulMultiCoreProgramConfig).
  CHECK(s.accepted > 150);
  CHECK(s.accepted_sharded > 80);
  CHECK(s.rejected > 200);
}

TEST_CASE("add, relu, to_memory_config: validate() and launch() agree over layouts and dtypes") {
  Sweep s;
  const std::vector<int64_t> shape{2, 40, 96};  // 4 x 3 tiles, a padded row per batch
  auto h0 = random_values(shape, 3), h1 = random_values(shape, 4);
  const std::vector<int64_t> row{1, 96};
  auto hr = random_values(row, 5);
  OpConfig c = grid_config();
  for (Kind k0 : kKinds)
    for (Kind k1 : kKinds) {
      CAPTURE(kind_name(k0));
      CAPTURE(kind_name(k1));
      s.check(OpKind::add, {place("x", shape, DType::bf16, k0), place("y", shape, DType::bf16, k1)},
              place("z", shape, DType::bf16, k0), c, {h0, h1}, 0.01);
      s.check(OpKind::add,
              {place("x", shape, DType::bf16, k0), place("r", row, DType::bf16, Kind::dram)},
              place("z", shape, DType::bf16, k1), c, {h0, hr}, 0.01);
      s.check(OpKind::relu, {place("x", shape, DType::bf16, k0)},
              place("y", shape, DType::bf16, k1), c, {h0}, 1e-6);
      // Compute ops take tiled operands only.
      s.check(OpKind::relu, {place("x", shape, DType::bf16, k0, TileLayout::row_major)},
              place("y", shape, DType::bf16, k1), c, {h0}, 1e-6);
      // Reshard between any two layouts, tiled or row-major, converting dtype on the way.
      for (TileLayout lin : {TileLayout::tile, TileLayout::row_major})
        for (TileLayout lout : {TileLayout::tile, TileLayout::row_major})
          for (DType from : {DType::f32, DType::bf16})
            for (DType to : {DType::f32, DType::bf16, DType::bf8b}) {
              CAPTURE(dtype_name(from));
              CAPTURE(dtype_name(to));
              CAPTURE(static_cast<int>(lin));
              CAPTURE(static_cast<int>(lout));
              if (lout == TileLayout::row_major && to == DType::bf8b)
                continue;  // not constructible
              s.check(OpKind::to_memory_config, {place("x", shape, from, k0, lin)},
                      place("y", shape, to, k1, lout), c, {h0}, to == DType::bf8b ? 0.01 : 1e-6);
            }
    }
  MESSAGE("eltwise/reshard sweep: ", s.accepted, " accepted (", s.accepted_sharded,
          " with sharded tensors), ", s.rejected, " rejected");
  // Lower since the binary eltwise, softmax and norm layout rules (layout_rules.cpp) and the
  // sharded_to_interleaved rules (row-major shard rows L1-aligned, casts between tiled only).
  CHECK(s.accepted > 700);
  CHECK(s.accepted_sharded > 600);
  CHECK(s.rejected > 50);
}

TEST_CASE("the rest of the op set: validate() and launch() agree over operand and result layouts") {
  Sweep s;
  const std::vector<int64_t> shape{2, 40, 96};
  auto h0 = random_values(shape, 6), h1 = random_values(shape, 7);
  struct Case {
    OpKind kind;
    int operands;
    std::vector<int64_t> out;
    OpConfig config;
    DType out_dtype = DType::bf16;
  };
  std::vector<Case> cases;
  OpConfig c = grid_config();
  for (OpKind k : {OpKind::gelu, OpKind::silu, OpKind::sigmoid, OpKind::tanh, OpKind::exp,
                   OpKind::neg, OpKind::abs})
    cases.push_back({k, 1, shape, c});
  for (OpKind k : {OpKind::subtract, OpKind::multiply, OpKind::maximum, OpKind::minimum})
    cases.push_back({k, 2, shape, c});
  OpConfig last = c;
  last.num_dims = 1;
  last.dims[0] = -1;
  cases.push_back({OpKind::softmax, 1, shape, last});
  last.keepdim = true;
  cases.push_back({OpKind::reduce_sum, 1, {2, 40, 1}, last});
  cases.push_back({OpKind::reduce_max, 1, {2, 40, 1}, last});
  OpConfig perm = c;
  perm.num_dims = 3;
  perm.dims[0] = 0;
  perm.dims[1] = 2;
  perm.dims[2] = 1;
  cases.push_back({OpKind::permute, 1, {2, 96, 40}, perm});
  OpConfig reshape = c;
  reshape.num_shape = 2;
  reshape.shape[0] = 80;
  reshape.shape[1] = 96;
  cases.push_back({OpKind::reshape, 1, {80, 96}, reshape});
  OpConfig cast = c;
  cast.dtype = DType::f32;
  cases.push_back({OpKind::typecast, 1, shape, cast, DType::f32});
  for (const Case& k : cases)
    for (Kind k0 : kKinds)
      for (Kind k1 : kKinds) {
        CAPTURE(op_name(k.kind));
        CAPTURE(kind_name(k0));
        CAPTURE(kind_name(k1));
        std::vector<TensorPlacement> ins{place("x", shape, DType::bf16, k0)};
        std::vector<std::vector<float>> host{h0};
        if (k.operands == 2) {
          ins.push_back(place("y", shape, DType::bf16, k1));
          host.push_back(h1);
        }
        s.check(k.kind, ins, place("z", k.out, k.out_dtype, k1), k.config, host, 0.02);
      }
  // linear = matmul + broadcast bias, on the program-aware matmul kernel.
  const std::vector<int64_t> as{64, 96}, ws{96, 128}, bias{128}, os{64, 128};
  auto ha = random_values(as, 8), hw = random_values(ws, 9), hb = random_values(bias, 10);
  OpConfig two_d = grid_config();
  two_d.program = MatmulProgram::mcast_2d;
  two_d.in0_block_w = 1;
  for (const OpConfig& cfg : {grid_config(), two_d})
    for (Kind ka : kKinds)
      for (Kind ko : kKinds) {
        CAPTURE(kind_name(ka));
        CAPTURE(kind_name(ko));
        s.check(OpKind::linear,
                {place("a", as, DType::bf16, ka), place("w", ws, DType::bf16, Kind::dram),
                 place("b", bias, DType::bf16, Kind::l1)},
                place("c", os, DType::bf16, ko), cfg, {ha, hw, hb}, 0.01);
      }
  MESSAGE("op-set sweep: ", s.accepted, " accepted (", s.accepted_sharded,
          " with sharded tensors), ", s.rejected, " rejected");
  // Lower since the binary eltwise, softmax and norm layout rules (layout_rules.cpp).
  CHECK(s.accepted > 1100);
  CHECK(s.accepted_sharded > 1000);
  CHECK(s.rejected > 100);
}

TEST_CASE(
    "softmax over every dim, reductions over dim sets, the norms: validate() and launch() "
    "agree over operand and result layouts") {
  Sweep s;
  const std::vector<int64_t> shape{2, 40, 96};
  auto h0 = random_values(shape, 11);
  const std::vector<int64_t> vec{96};
  auto hw = random_values(vec, 12), hb = random_values(vec, 13);
  for (float& v : hw) v += 1.5f;  // weights away from zero
  struct Case {
    OpKind kind;
    OpConfig config;
    int params = 0;  ///< Norm weight (1) and bias (2).
  };
  std::vector<Case> cases;
  auto with_dims = [](OpKind kind, std::vector<int> dims, bool keepdim) {
    OpConfig c = grid_config();
    c.num_dims = static_cast<uint8_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) c.dims[i] = static_cast<int8_t>(dims[i]);
    c.keepdim = keepdim;
    return Case{kind, c};
  };
  cases.push_back(Case{OpKind::softmax, grid_config()});  // no dim: the last
  for (int d : {0, 1, 2, -2, -3}) cases.push_back(with_dims(OpKind::softmax, {d}, false));
  cases.push_back(with_dims(OpKind::reduce_sum, {0}, false));
  cases.push_back(with_dims(OpKind::reduce_sum, {1}, true));
  cases.push_back(with_dims(OpKind::reduce_sum, {0, 2}, false));
  cases.push_back(with_dims(OpKind::reduce_mean, {-2, -1}, true));
  cases.push_back(with_dims(OpKind::reduce_mean, {}, false));  // every dim
  cases.push_back(with_dims(OpKind::reduce_max, {0, 1}, false));
  cases.push_back(with_dims(OpKind::reduce_max, {2}, true));
  cases.push_back(Case{OpKind::layer_norm, grid_config(), 2});
  cases.push_back(Case{OpKind::layer_norm, grid_config(), 0});
  cases.push_back(Case{OpKind::rms_norm, grid_config(), 1});
  int softmax_accepted = 0, reduce_accepted = 0, norm_accepted = 0;
  for (const Case& k : cases) {
    std::vector<std::span<const int64_t>> shapes{shape};
    for (int i = 0; i < k.params; ++i) shapes.emplace_back(vec);
    auto out = infer_shape(k.kind, shapes, k.config);
    REQUIRE_MESSAGE(out, out.error().message);
    std::vector<int64_t> out_shape(out->begin(), out->end());
    for (Kind k0 : kKinds)
      for (Kind k1 : kKinds) {
        CAPTURE(op_name(k.kind));
        CAPTURE(static_cast<int>(k.config.dims[0]));
        CAPTURE(kind_name(k0));
        CAPTURE(kind_name(k1));
        std::vector<TensorPlacement> ins{place("x", shape, DType::bf16, k0)};
        std::vector<std::vector<float>> host{h0};
        if (k.params >= 1) {
          ins.push_back(place("w", vec, DType::bf16, Kind::dram));
          host.push_back(hw);
        }
        if (k.params >= 2) {
          ins.push_back(place("b", vec, DType::bf16, Kind::l1));
          host.push_back(hb);
        }
        int before = s.accepted;
        s.check(k.kind, ins, place("z", out_shape, DType::bf16, k1), k.config, host, 0.02);
        int& counter = k.kind == OpKind::softmax ? softmax_accepted
                       : k.kind == OpKind::layer_norm || k.kind == OpKind::rms_norm
                           ? norm_accepted
                           : reduce_accepted;
        counter += s.accepted - before;
      }
  }
  MESSAGE("dims sweep: ", s.accepted, " accepted (", s.accepted_sharded, " with sharded tensors; ",
          softmax_accepted, " softmax, ", reduce_accepted, " reductions, ", norm_accepted,
          " norms), ", s.rejected, " rejected");
  // Lower since the binary eltwise, softmax and norm layout rules (layout_rules.cpp).
  CHECK(softmax_accepted > 100);
  CHECK(reduce_accepted > 300);
  CHECK(norm_accepted > 70);
  CHECK(s.rejected > 50);
}

TEST_CASE(
    "comparisons, where, clamp, reduce_min, reduce_prod: validate() and launch() agree over "
    "operand and result layouts, with and without broadcasting") {
  Sweep s;
  const std::vector<int64_t> shape{2, 40, 96}, row{1, 96}, col{2, 40, 1};
  auto h0 = random_values(shape, 21), h1 = random_values(shape, 22);
  for (size_t i = 0; i < h1.size(); i += 3) h1[i] = h0[i];  // ties, so eq/le/ge see both answers
  auto hr = random_values(row, 23), hc = random_values(col, 24);
  OpConfig c = grid_config();
  OpConfig clamp = c;
  clamp.clamp_min = -0.25f;
  clamp.clamp_max = 0.5f;
  int compare_accepted = 0, where_accepted = 0, clamp_accepted = 0, reduce_accepted = 0;
  auto count = [&](int& counter, int before) { counter += s.accepted - before; };
  for (Kind k0 : kKinds)
    for (Kind k1 : kKinds) {
      CAPTURE(kind_name(k0));
      CAPTURE(kind_name(k1));
      for (OpKind k : {OpKind::eq, OpKind::ne, OpKind::lt, OpKind::le, OpKind::gt, OpKind::ge}) {
        CAPTURE(op_name(k));
        int before = s.accepted;
        s.check(k, {place("x", shape, DType::bf16, k0), place("y", shape, DType::bf16, k1)},
                place("z", shape, DType::bf16, k1), c, {h0, h1}, 1e-6);
        // A broadcast row operand, and f32 operands (the result keeps the operands' dtype).
        s.check(k, {place("x", shape, DType::f32, k0), place("r", row, DType::f32, Kind::dram)},
                place("z", shape, DType::f32, k1), c, {h0, hr}, 1e-6);
        count(compare_accepted, before);
      }
      int before = s.accepted;
      // The condition is a 0/1 mask from the ties above; true and false values broadcast.
      std::vector<float> mask(h0.size());
      for (size_t i = 0; i < mask.size(); ++i) mask[i] = h0[i] == h1[i] ? 1.0f : 0.0f;
      s.check(OpKind::where,
              {place("m", shape, DType::bf16, k0), place("x", shape, DType::bf16, k1),
               place("y", shape, DType::bf16, k0)},
              place("z", shape, DType::bf16, k1), c, {mask, h0, h1}, 1e-6);
      s.check(OpKind::where,
              {place("m", shape, DType::f32, k0), place("r", row, DType::bf16, Kind::l1),
               place("k", col, DType::bf16, Kind::dram)},
              place("z", shape, DType::bf16, k1), c, {h0, hr, hc}, 1e-6);
      count(where_accepted, before);
      before = s.accepted;
      s.check(OpKind::clamp, {place("x", shape, DType::bf16, k0)},
              place("z", shape, DType::bf16, k1), clamp, {h0}, 1e-6);
      count(clamp_accepted, before);
      before = s.accepted;
      for (OpKind k : {OpKind::reduce_min, OpKind::reduce_prod}) {
        CAPTURE(op_name(k));
        OpConfig r = c;
        r.num_dims = 1;
        r.dims[0] = -1;
        r.keepdim = true;
        s.check(k, {place("x", shape, DType::bf16, k0)}, place("z", col, DType::bf16, k1), r, {h0},
                0.02);
        r.dims[0] = 0;
        r.keepdim = false;
        s.check(k, {place("x", shape, DType::bf16, k0)}, place("z", {40, 96}, DType::f32, k1), r,
                {h0}, 1e-5);
      }
      count(reduce_accepted, before);
    }
  MESSAGE("new-op sweep: ", s.accepted, " accepted (", s.accepted_sharded,
          " with sharded tensors; ", compare_accepted, " comparisons, ", where_accepted, " where, ",
          clamp_accepted, " clamp, ", reduce_accepted, " reductions), ", s.rejected, " rejected");
  // Lower since the binary eltwise, softmax and norm layout rules (layout_rules.cpp), and since
  // binary_ng's broadcast rule: the row-broadcast comparison runs only with nothing sharded.
  CHECK(compare_accepted > 250);
  CHECK(where_accepted > 140);
  CHECK(clamp_accepted > 70);
  CHECK(reduce_accepted > 300);
  CHECK(s.accepted_sharded > 700);
  CHECK(s.rejected > 300);
}

TEST_CASE(
    "norm weight dtypes and conv2d weight layouts: validate() and launch() agree over operand "
    "and result layouts") {
  Sweep s;
  const std::vector<int64_t> shape{2, 40, 96}, vec{96};
  auto h0 = random_values(shape, 31), hw = random_values(vec, 32), hb = random_values(vec, 33);
  for (float& v : hw) v += 1.5f;
  // Norm weight and bias in every dtype: tt-metal reads gamma and beta as f32 or bf16 only.
  int norm_accepted = 0, norm_dtype_refused = 0;
  for (DType dt : {DType::f32, DType::bf16, DType::bf8b, DType::bf4b})
    for (OpKind kind : {OpKind::layer_norm, OpKind::rms_norm})
      for (Kind k0 : kKinds) {
        CAPTURE(op_name(kind));
        CAPTURE(dtype_name(dt));
        CAPTURE(kind_name(k0));
        std::vector<TensorPlacement> ins{place("x", shape, DType::bf16, k0),
                                         place("w", vec, dt, Kind::dram)};
        std::vector<std::vector<float>> host{h0, hw};
        if (kind == OpKind::layer_norm) {
          ins.push_back(place("b", vec, dt, Kind::l1));
          host.push_back(hb);
        }
        TensorPlacement z = place("z", shape, DType::bf16, k0 == Kind::height ? Kind::dram : k0);
        std::vector<const TensorPlacement*> in;
        for (auto& t : ins) in.push_back(&t);
        const TensorPlacement* outs[1] = {&z};
        OpLaunch probe{kind, "op", in, outs, grid_config()};
        std::string why = s.model.validate(probe).reason;
        if (why.find("Gamma tensor dtype must be FLOAT32 or BFLOAT16") != std::string::npos)
          ++norm_dtype_refused;
        int before = s.accepted;
        s.check(kind, ins, z, grid_config(), host, 0.05);
        norm_accepted += s.accepted - before;
      }
  // conv2d, 1x1 over [1, 8, 8, 32] with its weight in matmul form [32, 32]: the activation and
  // the result in every layout, the weight interleaved or sharded.
  const std::vector<int64_t> xs{1, 8, 8, 32}, ws{32, 32};
  auto hx = random_values(xs, 34), hk = random_values(ws, 35);
  int conv_accepted = 0, conv_weight_refused = 0;
  for (Kind kw : {Kind::dram, Kind::l1, Kind::height, Kind::width})
    for (Kind k0 : kKinds)
      for (Kind k1 : {Kind::dram, Kind::l1, Kind::height, Kind::block_row}) {
        CAPTURE(kind_name(kw));
        CAPTURE(kind_name(k0));
        CAPTURE(kind_name(k1));
        std::vector<TensorPlacement> ins{place("x", xs, DType::bf16, k0),
                                         place("w", ws, DType::bf16, kw)};
        TensorPlacement y = place("y", xs, DType::bf16, k1);
        std::vector<const TensorPlacement*> in{&ins[0], &ins[1]};
        const TensorPlacement* outs[1] = {&y};
        OpLaunch probe{OpKind::conv2d, "op", in, outs, grid_config()};
        std::string why = s.model.validate(probe).reason;
        if (why.find("Weights tensor should not be sharded") != std::string::npos)
          ++conv_weight_refused;
        int before = s.accepted;
        s.check(OpKind::conv2d, ins, y, grid_config(), {hx, hk}, 0.02);
        conv_accepted += s.accepted - before;
      }
  MESSAGE("norm/conv sweep: ", norm_accepted, " norms, ", conv_accepted,
          " conv2d accepted; refused: ", norm_dtype_refused, " for the norm weight's dtype, ",
          conv_weight_refused, " for sharded conv weights; ", s.rejected, " rejected in all");
  // f32 and bf16 weights on the interleaved and width/block-sharded inputs (2 dtypes x 2 ops x
  // at least 4 kinds); every bf8b/bf4b weight refused for its dtype (2 x 2 x the kinds that pass
  // the shard checks).
  CHECK(norm_accepted >= 16);
  CHECK(norm_dtype_refused >= 16);
  CHECK(conv_accepted >= 20);
  CHECK(conv_weight_refused >= 20);
}

TEST_CASE(
    "sharded softmax and norms: one shard per core, shards the even split of the grid "
    "(tt-metal's sharded program configs); validate() and launch() agree") {
  Sweep s;
  auto sharded = [](std::string_view name, const std::vector<int64_t>& shape, MemLayout m,
                    CoreRange grid, int64_t rows, int64_t cols,
                    ShardOrientation o = ShardOrientation::row_major) {
    ShardSpec spec;
    spec.grid = grid;
    spec.shape[0] = rows;
    spec.shape[1] = cols;
    spec.orientation = o;
    return make_sharded(name, shape, DType::bf16, m, spec, 0);
  };
  // Whether validate() refuses `x` -> `z` with a reason containing `why` (empty: accepts); then
  // the contract (launch refuses with the same reason, or runs and matches the reference).
  auto expect = [&](OpKind kind, const TensorPlacement& x, const TensorPlacement& z,
                    const std::vector<float>& hx, const std::string& why) {
    std::vector<TensorPlacement> ins{x};
    std::vector<std::vector<float>> host{hx};
    std::vector<const TensorPlacement*> in{&ins[0]};
    const TensorPlacement* outs[1] = {&z};
    OpLaunch probe{kind, "op", in, outs, grid_config()};
    OpValidation v = s.model.validate(probe);
    if (why.empty())
      CHECK_MESSAGE(v.ok, v.reason);
    else
      CHECK_MESSAGE(v.reason.find(why) != std::string::npos, v.reason);
    s.check(kind, ins, z, grid_config(), host, 0.05);
  };
  const std::string one_per_core = "\"number of shards must equal to number of cores\"";
  // Softmax over [2, 40, 96]: 128 rows as tiled (4 tile rows), 96 columns.
  {
    const std::vector<int64_t> shape{2, 40, 96};
    auto hx = random_values(shape, 41);
    auto in_place = [&](CoreRange g, int64_t rows) {
      TensorPlacement x = sharded("x", shape, MemLayout::height_sharded, g, rows, 96);
      TensorPlacement z = sharded("z", shape, MemLayout::height_sharded, g, rows, 96);
      return std::pair{x, z};
    };
    auto [x4, z4] = in_place(CoreRange{0, 0, 3, 0}, 32);  // 4 shards on 4 cores
    expect(OpKind::softmax, x4, z4, hx, "");
    auto [x2, z2] = in_place(CoreRange{0, 0, 1, 0}, 64);  // 2 shards on 2 cores
    expect(OpKind::softmax, x2, z2, hx, "");
    auto [x8, z8] = in_place(CoreRange{0, 0, 3, 1}, 32);  // 4 shards, 8 cores: 4 idle
    expect(OpKind::softmax, x8, z8, hx, one_per_core);
    auto [x3, z3] = in_place(CoreRange{0, 0, 1, 0}, 96);  // 96 + a partial 32: 1 whole shard
    expect(OpKind::softmax, x3, z3, hx, one_per_core);
    // A core range set of 4 cores holding 4 shards is one shard per core.
    TensorPlacement xs = place("x", shape, DType::bf16, Kind::height_set);
    TensorPlacement zs = place("z", shape, DType::bf16, Kind::height_set);
    expect(OpKind::softmax, xs, zs, hx, "");
  }
  // Layer norm over [2, 64, 256]: Mt = 4, Kt = 8 (tiles).
  {
    const std::vector<int64_t> shape{2, 64, 256};
    auto hx = random_values(shape, 42);
    auto both = [&](MemLayout m, CoreRange g, int64_t rows, int64_t cols,
                    ShardOrientation o = ShardOrientation::row_major) {
      return std::pair{sharded("x", shape, m, g, rows, cols, o),
                       sharded("z", shape, m, g, rows, cols, o)};
    };
    const MemLayout w = MemLayout::width_sharded, b = MemLayout::block_sharded;
    // One row of shards: block_w = ceil(8 / cores).
    auto [a1, a2] = both(w, CoreRange{0, 0, 3, 1}, 128, 32);  // 8 cores, 1 tile each
    expect(OpKind::layer_norm, a1, a2, hx, "");
    auto [c1, c2] = both(w, CoreRange{0, 0, 2, 0}, 128, 96);  // 3 tiles on 3 cores (3 + 3 + 2)
    expect(OpKind::rms_norm, c1, c2, hx, "");
    auto [d1, d2] = both(w, CoreRange{0, 0, 3, 0}, 128, 96);  // 3 tiles on 4 cores: ceil 2
    expect(OpKind::rms_norm, d1, d2, hx,
           "\"block_w (3) must equal to K (in tiles) / num_cores (2)\"");
    // Block sharded, 2 rows of shards: block_w = ceil(8 / columns), block_h = 4 / rows.
    auto [e1, e2] = both(b, CoreRange{0, 0, 3, 1}, 64, 64);
    expect(OpKind::layer_norm, e1, e2, hx, "");
    auto [f1, f2] = both(b, CoreRange{0, 0, 1, 3}, 64, 64, ShardOrientation::col_major);
    expect(OpKind::layer_norm, f1, f2, hx, "");
    // The same grid one core row down: tt-metal counts rows from the origin (3), 4 / 3 = 1.
    auto [g1, g2] = both(b, CoreRange{0, 1, 3, 2}, 64, 64);
    expect(OpKind::layer_norm, g1, g2, hx,
           "\"block_h (2) must equal to M (in tiles) / num_cores_r (1)\"");
    // Shards 3 tiles wide on 4 columns (3 + 3 + 2, one column idle): ceil(8 / 4) = 2.
    auto [h1, h2] = both(b, CoreRange{0, 0, 3, 1}, 64, 96);
    expect(OpKind::rms_norm, h1, h2, hx,
           "\"block_w (3) must equal to K (in tiles) / num_cores_c (2)\"");
  }
  // Mt = 5 on 2 rows of cores: shards of 3 tile rows (3 + 2), floor(5 / 2) = 2.
  {
    const std::vector<int64_t> shape{1, 160, 256};
    auto hx = random_values(shape, 43);
    TensorPlacement x =
        sharded("x", shape, MemLayout::block_sharded, CoreRange{0, 0, 3, 1}, 96, 64);
    TensorPlacement z =
        sharded("z", shape, MemLayout::block_sharded, CoreRange{0, 0, 3, 1}, 96, 64);
    expect(OpKind::layer_norm, x, z, hx,
           "\"block_h (3) must equal to M (in tiles) / num_cores_r (2)\"");
  }
  MESSAGE("sharded row ops: ", s.accepted, " accepted, ", s.rejected, " rejected");
  CHECK(s.accepted == 7);
  CHECK(s.rejected == 6);
}
