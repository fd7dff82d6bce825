// Plan verification and placements over the mapped FlatBuffer.
#include "meshplan/runtime/plan.hpp"

#include <algorithm>
#include <cstring>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/placement.hpp"
#include "meshplan/device/size_limits.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::runtime {

namespace {

/// A vector whose elements are not aligned for their type (a damaged offset can do that: the
/// FlatBuffers 2.0.8 verifier checks only the 4-byte length field's alignment).
template <typename V>
bool misaligned(const V* vec, size_t align) {
  // An empty vector has no elements to read, and FlatBuffers does not pad before one (a
  // rank-0 tensor's shape): its data position may be anything.
  return vec && vec->size() != 0 && reinterpret_cast<uintptr_t>(vec->Data()) % align != 0;
}

/// Segment i of a plan, copied out byte-wise: the vector's elements need not be 8-byte aligned.
fb::Segment segment_at(const fb::Plan& plan, uint32_t i) {
  fb::Segment seg;
  std::memcpy(&seg, plan.segments()->Data() + size_t{i} * sizeof(fb::Segment), sizeof seg);
  return seg;
}

}  // namespace

// The plan's enums must match the device's (ops.def order, DType, layouts).
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar)                        \
  static_assert(static_cast<int>(fb::OpKind::name) == static_cast<int>(device::OpKind::name), \
                #name);
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
static_assert(static_cast<int>(fb::OpKind::MAX) + 1 == device::kNumOpKinds,
              "ops.def and plan.fbs list the same ops");
static_assert(static_cast<int>(fb::DType::bf8b) == static_cast<int>(device::DType::bf8b));
static_assert(static_cast<int>(fb::DType::bf4b) == static_cast<int>(device::DType::bf4b));
static_assert(static_cast<int>(fb::MemLayout::block_sharded) ==
              static_cast<int>(device::MemLayout::block_sharded));
static_assert(static_cast<int>(fb::BufferType::l1) == static_cast<int>(device::BufferType::l1));
static_assert(static_cast<int>(fb::Activation::tanh) == static_cast<int>(device::Activation::tanh));
static_assert(static_cast<int>(fb::MatmulProgram::mcast_2d) ==
              static_cast<int>(device::MatmulProgram::mcast_2d));
static_assert(static_cast<int>(fb::ShardOrientation::col_major) ==
              static_cast<int>(device::ShardOrientation::col_major));

namespace {
constexpr uint64_t align64(uint64_t v) {
  return (v + 63) & ~uint64_t{63};
}
// Explicit verifier limits: plans are shallow (depth < 8); a table per tensor, op and config.
constexpr flatbuffers::uoffset_t kMaxDepth = 16;
constexpr flatbuffers::uoffset_t kMaxTables = 16u << 20;

/// The FlatBuffers structural verifier over the whole plan. At -O2 GCC keeps the verifier's small
/// helpers (Table::VerifyOffset, GetPointer, VerifyField<T>) as out-of-line calls, several per
/// field of every table, and they dominated `full` verification (perf, 10,002-op plan).
/// `flatten` inlines every call below this one into it: the same checks in the same order, with
/// no call overhead. Nothing is skipped (tests/runtime checks that it rejects what the plain
/// verifier rejects, on every byte of damaged plans).
[[gnu::flatten]] bool verify_structure(const uint8_t* data, size_t size) {
  flatbuffers::Verifier verifier(data, size, kMaxDepth, kMaxTables);
  return fb::VerifySizePrefixedPlanBuffer(verifier);
}
}  // namespace

Hash128 PlanRef::key() const {
  const fb::Hash128* k = plan_->header()->key();
  return k ? Hash128{k->lo(), k->hi()} : Hash128{};
}

std::span<const uint8_t> PlanRef::segment(uint32_t i) const {
  uint32_t fb_size = flatbuffers::GetPrefixedSize(bytes_.data()) + sizeof(flatbuffers::uoffset_t);
  const fb::Segment s = segment_at(*plan_, i);
  return bytes_.subspan(align64(fb_size) + s.offset(), s.size());
}

device::TensorPlacement PlanRef::placement(uint32_t id) const {
  const fb::TensorPlan* t = plan_->tensors()->Get(id);
  device::TensorPlacement p;
  p.name = t->name() ? t->name()->string_view() : std::string_view();
  p.shape = std::span<const int64_t>(t->shape()->data(), t->shape()->size());
  p.dtype = static_cast<device::DType>(t->dtype());
  p.layout = static_cast<device::TileLayout>(t->layout());
  p.buffer = static_cast<device::BufferType>(t->buffer());
  p.memory = static_cast<device::MemLayout>(t->memory());
  p.address = t->address();
  p.page_size = t->page_size();
  // The shard grid is a core range set of 1..kMaxCoreRanges rectangles (verify_plan checks).
  if (const fb::ShardSpec* s = t->shard()) {
    if (s->grid() && s->grid()->size() >= 1) {
      uint32_t n = std::min<uint32_t>(s->grid()->size(), device::kMaxCoreRanges);
      for (uint32_t i = 0; i < n; ++i) {
        const fb::CoreRange* g = s->grid()->Get(i);
        device::CoreRange r{g->x0(), g->y0(), g->x1(), g->y1()};
        (i == 0 ? p.shard.grid : p.shard.extra[i - 1]) = r;
      }
      p.shard.extra_ranges = static_cast<uint8_t>(n - 1);
    }
    if (s->shape() && s->shape()->size() == 2) {
      p.shard.shape[0] = s->shape()->Get(0);
      p.shard.shape[1] = s->shape()->Get(1);
    }
    p.shard.orientation = static_cast<device::ShardOrientation>(s->orientation());
  }
  return p;
}

PlanRef PlanRef::trusted(std::span<const uint8_t> bytes) {
  PlanRef ref;
  ref.plan_ = fb::GetSizePrefixedPlan(bytes.data());
  ref.bytes_ = bytes;
  const fb::PlanHeader* h = ref.plan_->header();
  ref.name_ = h->graph_name() ? h->graph_name()->string_view() : std::string_view();
  return ref;
}

namespace {

/// The mesh fields (MESH-SPEC §4): header mesh, boundary shards against the local shapes,
/// collective attributes against the mesh. Allocates only for plans with collectives.
Status verify_mesh(const fb::Plan& plan, std::string_view what) {
  auto bad = [&](auto&&... msg) { return fail(ErrorCode::corrupt, "plan ", what, ": ", msg...); };
  const fb::MeshInfo* m = plan.header()->mesh();
  int rows = m ? m->rows() : 1, cols = m ? m->cols() : 1;
  if (rows < 1 || cols < 1) return bad("mesh ", rows, "x", cols, " has no chips");
  if (int64_t{rows} * cols > device::kMaxMeshChips)
    return bad("mesh ", rows, "x", cols, " has more than ", device::kMaxMeshChips, " chips");
  int chips = rows * cols;
  if (m && (m->topology() > 1 || m->links() < 1 || !m->descriptor_hash()))
    return bad("mesh ", rows, "x", cols, " has topology ", int{m->topology()}, ", ", m->links(),
               " links", m->descriptor_hash() ? "" : " and no descriptor hash");
  const auto* in_shards = plan.input_shards();
  const auto* out_shards = plan.output_shards();
  if (chips == 1) {
    if ((in_shards && in_shards->size()) || (out_shards && out_shards->size()))
      return bad("boundary shards on a single-chip plan");
  } else {
    if (!in_shards || in_shards->size() != plan.inputs()->size() || !out_shards ||
        out_shards->size() != plan.outputs()->size())
      return bad("a ", rows, "x", cols, " mesh plan needs one boundary shard per input (",
                 plan.inputs()->size(), ") and output (", plan.outputs()->size(), ")");
    auto check_shard = [&](const fb::MeshShard* s, uint32_t id, std::string_view role,
                           uint32_t i) -> Status {
      const auto* local = plan.tensors()->Get(id)->shape();
      int rank = static_cast<int>(local->size());
      if (static_cast<int>(s->type()) > static_cast<int>(fb::MeshShardType::MAX))
        return bad(role, " ", i, " has unknown shard type ", static_cast<int>(s->type()));
      int32_t dims[2] = {-1, -1};
      if (s->shard_dims()) {
        if (s->shard_dims()->size() != 2)
          return bad(role, " ", i, " has ", s->shard_dims()->size(), " shard dims, expected 2");
        dims[0] = s->shard_dims()->Get(0);
        dims[1] = s->shard_dims()->Get(1);
      }
      bool devices = s->type() == fb::MeshShardType::devices;
      for (int a = 0; a < 2; ++a)
        if (dims[a] < -1 || dims[a] >= rank)
          return bad(role, " ", i, ": shard_dims[", a, "] = ", dims[a],
                     " is not -1 or a dim of its rank-", rank, " tensor");
      if (devices && dims[0] < 0 && dims[1] < 0)
        return bad(role, " ", i, ": a devices shard splits no dim");
      if (s->shard_shape() && static_cast<int>(s->shard_shape()->size()) != rank)
        return bad(role, " ", i, ": shard_shape has ", s->shard_shape()->size(), " dims, not ",
                   rank);
      if (misaligned(s->full_shape(), alignof(int64_t)) ||
          misaligned(s->shard_shape(), alignof(int64_t)))
        return bad(role, " ", i, ": a shape vector is misaligned");
      const auto* full = s->full_shape();
      if (!full || static_cast<int>(full->size()) != rank)
        return bad(role, " ", i, " needs a full shape of rank ", rank);
      if (auto v = device::checked_volume(std::span<const int64_t>(full->data(), full->size())); !v)
        return bad(role, " ", i, ": full shape: ", v.error().message);
      for (int d = 0; d < rank; ++d) {
        int64_t pieces = 1;
        if (devices) {
          if (dims[0] == d) pieces *= rows;
          if (dims[1] == d) pieces *= cols;
        }
        int64_t want = local->Get(static_cast<uint32_t>(d));
        if (full->Get(static_cast<uint32_t>(d)) / pieces != want ||
            full->Get(static_cast<uint32_t>(d)) % pieces != 0)
          return bad(role, " ", i, ": full dim ", d, " (", full->Get(static_cast<uint32_t>(d)),
                     ") is not the local dim ", want, " times ", pieces, " pieces");
        if (s->shard_shape() && s->shard_shape()->Get(static_cast<uint32_t>(d)) != pieces)
          return bad(role, " ", i, ": shard_shape disagrees with shard_dims along dim ", d);
      }
      return {};
    };
    for (uint32_t i = 0; i < in_shards->size(); ++i)
      MESHPLAN_TRY(check_shard(in_shards->Get(i), plan.inputs()->Get(i), "input", i));
    for (uint32_t i = 0; i < out_shards->size(); ++i)
      MESHPLAN_TRY(check_shard(out_shards->Get(i), plan.outputs()->Get(i), "output", i));
  }
  for (uint32_t o = 0; o < plan.ops()->size(); ++o) {
    const fb::OpPlan* op = plan.ops()->Get(o);
    auto kind = static_cast<device::OpKind>(op->kind());
    if (!device::is_collective(kind)) continue;
    std::string_view name = device::op_name(kind);
    if (chips == 1) return bad("op ", o, " (", name, ") is a collective in a single-chip plan");
    const fb::OpConfig* c = op->config();
    if (!c) return bad("op ", o, " (", name, ") has no config");
    if (c->cluster_axis() < -1 || c->cluster_axis() > 1)
      return bad("op ", o, " (", name, ") has cluster_axis ", int{c->cluster_axis()});
    if (c->reduce() > 2) return bad("op ", o, " (", name, ") has reduce ", int{c->reduce()});
    if (c->pairs() &&
        (c->pairs()->size() % 2 != 0 || c->pairs()->size() > 2u * device::kMaxMeshChips))
      return bad("op ", o, " (", name, ") has ", c->pairs()->size(),
                 " pair entries (an even count up to ", 2 * device::kMaxMeshChips, " expected)");
    device::OpConfig config;
    config.mesh_rows = static_cast<uint16_t>(rows);
    config.mesh_cols = static_cast<uint16_t>(cols);
    config.cluster_axis = c->cluster_axis();
    config.collective_dim = c->collective_dim();
    config.split_dim = c->split_dim();
    config.concat_dim = c->concat_dim();
    if (c->pairs()) {
      for (uint32_t k = 0; k < c->pairs()->size(); ++k) {
        int32_t chip = c->pairs()->Get(k);
        if (chip < 0 || chip >= chips)
          return bad("op ", o, " (", name, ") pairs name chip ", chip, " outside the ", rows, "x",
                     cols, " mesh");
        config.pairs.push_back(static_cast<uint8_t>(chip));  // Counted and paired above.
      }
    }
    const auto* in = plan.tensors()->Get(op->operands()->Get(0))->shape();
    const auto* out = plan.tensors()->Get(op->results()->Get(0))->shape();
    std::span<const int64_t> in_shape(in->data(), in->size());
    std::span<const int64_t> shapes[] = {in_shape};
    auto inferred = device::infer_collective_shape(kind, shapes, config);
    if (!inferred) return bad("op ", o, " (", name, "): ", inferred.error().message);
    if (!std::equal(inferred->begin(), inferred->end(), out->begin(), out->end()))
      return bad("op ", o, " (", name, "): result shape does not follow from the operand's");
  }
  return {};
}

/// A reshape transform (a flattened NHWC activation): an aligned host shape of rank 1 to
/// kMaxRank with dims in [1, 2^31) and the input tensor's volume, on a single-chip plan.
Status verify_reshape_transform(const fb::Plan& plan, uint32_t i,
                                const flatbuffers::Vector<int64_t>* host, std::string_view what) {
  auto bad = [&](auto&&... msg) {
    return fail(ErrorCode::corrupt, "plan ", what, ": input ", i, ": ", msg...);
  };
  if (!host || host->size() == 0 || host->size() > static_cast<uint32_t>(device::kMaxRank) ||
      misaligned(host, alignof(int64_t)))
    return bad("a reshape transform needs an aligned host shape of rank 1 to ", device::kMaxRank);
  constexpr int64_t kMaxDim = int64_t{1} << 31;
  int64_t volume = 1;
  for (int64_t d : *host) {
    if (d <= 0 || d >= kMaxDim)
      return bad("reshape host shape has a dim ", d, " outside [1, 2^31)");
    volume *= d;
    if (volume >= (int64_t{1} << 48)) return bad("reshape host shape is too large");
  }
  const auto* shape = plan.tensors()->Get(plan.inputs()->Get(i))->shape();
  int64_t tensor_volume = 1;
  for (int64_t d : *shape) tensor_volume *= d;
  if (volume != tensor_volume)
    return bad("reshape host shape holds ", volume, " values, the input tensor ", tensor_volume);
  if (const auto* shards = plan.input_shards(); shards && shards->size() > 0)
    return bad("a reshape transform is single-chip only");
  return {};
}

/// Host transforms of the inputs (format 1.2): one per input or none; known kinds; a conv_weight
/// transform's host shape prepares into exactly the input tensor's shape, and its input is not
/// split over a mesh (prepared weights are replicated).
Status verify_input_transforms(const fb::Plan& plan, std::string_view what) {
  auto bad = [&](auto&&... msg) { return fail(ErrorCode::corrupt, "plan ", what, ": ", msg...); };
  const auto* list = plan.input_transforms();
  if (!list || list->size() == 0) return {};
  if (list->size() != plan.inputs()->size())
    return bad(list->size(), " input transforms for ", plan.inputs()->size(), " inputs");
  for (uint32_t i = 0; i < list->size(); ++i) {
    const fb::InputTransform* t = list->Get(i);
    if (t->kind() > fb::InputTransformKind::MAX)
      return bad("input ", i, " has unknown transform kind ", static_cast<int>(t->kind()));
    if (t->kind() == fb::InputTransformKind::none) {
      if (t->host_shape()) return bad("input ", i, " has a host shape but no transform");
      continue;
    }
    const auto* host = t->host_shape();
    if (t->kind() == fb::InputTransformKind::reshape) {
      MESHPLAN_TRY(verify_reshape_transform(plan, i, host, what));
      continue;
    }
    if (!host || host->size() != 4 || misaligned(host, alignof(int64_t)))
      return bad("input ", i,
                 ": a conv_weight transform needs an aligned host shape [O, KH, KW, I]");
    int64_t o = host->Get(0), kh = host->Get(1), kw = host->Get(2), ci = host->Get(3);
    constexpr int64_t kMaxDim = int64_t{1} << 31;
    if (o <= 0 || kh <= 0 || kw <= 0 || ci <= 0 || o >= kMaxDim || kh >= kMaxDim || kw >= kMaxDim ||
        ci >= kMaxDim)
      return bad("input ", i, ": conv_weight host shape [", o, "x", kh, "x", kw, "x", ci,
                 "] has a dim outside [1, 2^31)");
    if (t->groups() <= 0 || o % t->groups() != 0)
      return bad("input ", i, ": conv_weight groups ", t->groups(), " does not divide ", o,
                 " output channels");
    const fb::TensorPlan* tensor = plan.tensors()->Get(plan.inputs()->Get(i));
    const auto* shape = tensor->shape();
    if (shape->size() != 2 || shape->Get(0) != kh * kw * ci || shape->Get(1) != o)
      return bad("input ", i, ": conv_weight host shape [", o, "x", kh, "x", kw, "x", ci,
                 "] prepares into [", kh * kw * ci, "x", o,
                 "], which is not the input tensor's shape");
    if (const auto* shards = plan.input_shards();
        shards && i < shards->size() && shards->Get(i)->type() != fb::MeshShardType::replicate)
      return bad("input ", i, ": a conv_weight input must be replicated over the mesh");
  }
  return {};
}

/// The page size a tensor's layout implies (device::expected_page_size), computed in 64 bits:
/// a row-major page is one row (of the shard, when columns are split).
Status verify_page_size(const fb::TensorPlan* t, uint32_t i, std::string_view what) {
  auto dtype = static_cast<device::DType>(t->dtype());
  uint64_t want = device::tile_bytes(dtype);
  if (t->layout() == fb::TileLayout::row_major) {
    bool split_cols =
        t->memory() == fb::MemLayout::width_sharded || t->memory() == fb::MemLayout::block_sharded;
    int64_t w = t->shape()->size() == 0 ? 1 : t->shape()->Get(t->shape()->size() - 1);
    if (split_cols) w = std::min<int64_t>(t->shard()->shape()->Get(1), w);
    want = static_cast<uint64_t>(w) * device::element_bytes(dtype);
    if (want == 0)
      return fail(ErrorCode::corrupt, "plan ", what, ": tensor ", i, ": ",
                  device::dtype_name(dtype), " is a block format and cannot be row-major");
  }
  if (t->page_size() != want)
    return fail(ErrorCode::corrupt, "plan ", what, ": tensor ", i, ": page size ", t->page_size(),
                " does not follow from its shape, dtype and layout (", want, " bytes)");
  return {};
}

}  // namespace

// Flattened for the same reason as verify_structure: the invariant loops below read every tensor
// and op through FlatBuffers accessors that GCC otherwise calls out of line (3.7x slower on a
// 10,002-op plan). Error paths build messages through std::ostringstream, which stays a call.
[[gnu::flatten]] Result<PlanRef> verify_plan(std::span<const uint8_t> bytes, std::string_view what,
                                             VerifyMode mode) {
  auto bad = [&](auto&&... msg) { return fail(ErrorCode::corrupt, "plan ", what, ": ", msg...); };
  // The smallest plan holds a size prefix, a root offset and the 4-byte file identifier.
  if (bytes.size() < 12) return bad("truncated: ", bytes.size(), " bytes");
  uint32_t prefix;
  std::memcpy(&prefix, bytes.data(), 4);
  if (static_cast<uint64_t>(prefix) + 4 > bytes.size())
    return bad("truncated: size prefix says ", prefix + 4ull, " bytes, only ", bytes.size(),
               " present");
  if (prefix < 8)
    return bad("truncated: size prefix ", prefix, " leaves no room for the root and identifier");
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), fb::PlanIdentifier(), true))
    return bad("wrong file identifier (expected '", fb::PlanIdentifier(), "')");
  if (mode == VerifyMode::full) {
    if (!verify_structure(bytes.data(), prefix + 4ull))
      return bad("FlatBuffer verification failed");
  }
  const fb::Plan* plan = fb::GetSizePrefixedPlan(bytes.data());
  const fb::PlanHeader* h = plan->header();
  if (h->format_major() != kPlanFormatMajor)
    return fail(ErrorCode::incompatible, "plan ", what, ": format ", h->format_major(), ".",
                h->format_minor(), ", this runtime reads ", kPlanFormatMajor, ".x");
  if (!h->key() || !h->device() || !h->device()->descriptor_hash())
    return bad("header lacks key or device");
  if (!plan->tensors() || !plan->ops() || !plan->inputs() || !plan->outputs())
    return bad("missing tensors, ops, inputs or outputs");
  uint32_t n_tensors = plan->tensors()->size();
  uint64_t data_start = align64(prefix + 4ull);
  uint32_t n_segments = plan->segments() ? plan->segments()->size() : 0;
  // Core ranges are read in place: a damaged offset must not make them misaligned (the
  // FlatBuffers verifier checks the length field's alignment, not the elements'). Segments are
  // copied out instead (segment_at): FlatBuffers 2.0.8 may place a vector of 8-byte structs at
  // a 4-byte boundary.
  for (uint32_t i = 0; i < n_segments; ++i) {
    const fb::Segment seg = segment_at(*plan, i);
    const fb::Segment* s = &seg;
    if (s->offset() % 64 != 0 || s->offset() > bytes.size() ||
        data_start + s->offset() + s->size() > bytes.size())
      return bad("segment ", i, " [", s->offset(), ", +", s->size(), ") lies outside the plan's ",
                 bytes.size(), " bytes");
  }
  for (uint32_t i = 0; i < n_tensors; ++i) {
    const fb::TensorPlan* t = plan->tensors()->Get(i);
    if (!t->shape()) return bad("tensor ", i, " has no shape");
    if (misaligned(t->shape(), alignof(int64_t)) ||
        (t->shard() && misaligned(t->shard()->shape(), alignof(int64_t))))
      return bad("tensor ", i, ": a shape vector is misaligned");
    for (int64_t d : *t->shape())
      if (d <= 0) return bad("tensor ", i, " has dimension ", d);
    // Sizes follow from shapes: within the limits every tool applies, so that element counts,
    // byte sizes, page counts and addresses computed from them cannot overflow.
    auto volume =
        device::checked_volume(std::span<const int64_t>(t->shape()->data(), t->shape()->size()));
    if (!volume) return bad("tensor ", i, ": ", volume.error().message);
    if (static_cast<int>(t->dtype()) > static_cast<int>(fb::DType::MAX) ||
        static_cast<int>(t->layout()) > static_cast<int>(fb::TileLayout::MAX) ||
        static_cast<int>(t->buffer()) > static_cast<int>(fb::BufferType::MAX) ||
        static_cast<int>(t->memory()) > static_cast<int>(fb::MemLayout::MAX) ||
        static_cast<int>(t->role()) > static_cast<int>(fb::TensorRole::MAX))
      return bad("tensor ", i, " has an unknown enum value");
    if (t->page_size() == 0) return bad("tensor ", i, " has page size 0");
    if (t->memory() != fb::MemLayout::interleaved) {
      const fb::ShardSpec* s = t->shard();
      if (!s || !s->grid() || s->grid()->size() < 1 || s->grid()->size() > device::kMaxCoreRanges ||
          misaligned(s->grid(), alignof(fb::CoreRange)) || !s->shape() || s->shape()->size() != 2)
        return bad("sharded tensor ", i, " needs a shard spec with 1 to ", device::kMaxCoreRanges,
                   " core ranges and a 2-D shard shape");
      if (static_cast<int>(s->orientation()) > static_cast<int>(fb::ShardOrientation::MAX))
        return bad("tensor ", i, " has an unknown shard orientation");
      int64_t rows = s->shape()->Get(0), cols = s->shape()->Get(1), shard_volume = 0;
      if (rows < 1 || cols < 1 || rows > device::kMaxDimension || cols > device::kMaxDimension ||
          __builtin_mul_overflow(rows, cols, &shard_volume) ||
          shard_volume > device::kMaxTensorElements * device::kTileElems)
        return bad("tensor ", i, ": shard shape [", rows, "x", cols, "] is outside the limits");
    }
    MESHPLAN_TRY(verify_page_size(plan->tensors()->Get(i), i, what));
    if (t->role() == fb::TensorRole::constant) {
      if (t->segment() < 0 || static_cast<uint32_t>(t->segment()) >= n_segments)
        return bad("constant tensor ", i, " names segment ", t->segment(), " of ", n_segments);
      uint64_t size = segment_at(*plan, static_cast<uint32_t>(t->segment())).size();
      if (size != static_cast<uint64_t>(*volume) * sizeof(float))
        return bad("constant tensor ", i, ": segment of ", size, " bytes does not hold its shape ",
                   device::shape_limit_text(
                       std::span<const int64_t>(t->shape()->data(), t->shape()->size())),
                   " as f32 (", *volume * 4, " bytes)");
    }
  }
  auto check_ids = [&](const flatbuffers::Vector<uint32_t>* ids, std::string_view role,
                       uint32_t op) -> Status {
    if (!ids) return {};
    for (uint32_t id : *ids)
      if (id >= n_tensors)
        return fail(ErrorCode::corrupt, "plan ", what, ": op ", op, " ", role, " names tensor ", id,
                    " of ", n_tensors);
    return {};
  };
  for (uint32_t o = 0; o < plan->ops()->size(); ++o) {
    const fb::OpPlan* op = plan->ops()->Get(o);
    if (static_cast<int>(op->kind()) >= device::kNumOpKinds)
      return bad("op ", o, " has unknown kind ", static_cast<int>(op->kind()));
    const device::OpInfo& info = device::op_info(static_cast<device::OpKind>(op->kind()));
    if (!op->operands() || !op->results() ||
        !device::operand_count_ok(static_cast<device::OpKind>(op->kind()),
                                  op->operands()->size()) ||
        static_cast<int>(op->results()->size()) != info.results)
      return bad("op ", o, " (", info.name, ") has the wrong number of operands or results");
    // The runtime launches ops from fixed arrays of kMaxOperands placements.
    if (op->operands()->size() > static_cast<uint32_t>(device::kMaxOperands) ||
        op->results()->size() > static_cast<uint32_t>(device::kMaxOperands))
      return bad("op ", o, " (", info.name, ") has ", op->operands()->size(), " operands and ",
                 op->results()->size(), " results; the runtime takes at most ",
                 device::kMaxOperands);
    if (const fb::OpConfig* c = op->config()) {
      auto too_long = [](const auto* v, uint32_t max) { return v && v->size() > max; };
      constexpr uint32_t kRank = device::kMaxRank;
      if (misaligned(c->shape(), alignof(int64_t)) || misaligned(c->begins(), alignof(int64_t)) ||
          misaligned(c->ends(), alignof(int64_t)) || misaligned(c->steps(), alignof(int64_t)))
        return bad("op ", o, " (", info.name, "): an attribute vector is misaligned");
      if (too_long(c->dims(), kRank) || too_long(c->shape(), kRank) ||
          too_long(c->begins(), kRank) || too_long(c->ends(), kRank) ||
          too_long(c->steps(), kRank) || too_long(c->kernel(), 2) || too_long(c->stride(), 2) ||
          too_long(c->padding(), 4) || too_long(c->dilation(), 2))
        return bad("op ", o, " (", info.name,
                   ") has an attribute list longer than the runtime supports");
      if (static_cast<int>(c->activation()) > static_cast<int>(fb::Activation::MAX) ||
          static_cast<int>(c->dtype()) > static_cast<int>(fb::DType::MAX))
        return bad("op ", o, " (", info.name, ") has an unknown activation or dtype");
      if (c->begins() && (!c->ends() || !c->steps() || c->ends()->size() != c->begins()->size() ||
                          c->steps()->size() != c->begins()->size()))
        return bad("op ", o, " (", info.name,
                   ") has slice begins, ends and steps of different lengths");
    }
    MESHPLAN_TRY(check_ids(op->operands(), "operand", o));
    MESHPLAN_TRY(check_ids(op->results(), "result", o));
    MESHPLAN_TRY(check_ids(op->frees(), "free", o));
    // A conv2d that frees its input inside itself (deallocate_activation) must be that input's
    // last use: the plan frees the input at this op.
    if (const fb::OpConfig* c = op->config(); c && c->deallocate_activation()) {
      bool freed = false;
      if (op->kind() == fb::OpKind::conv2d && op->operands()->size() > 0 && op->frees())
        for (uint32_t id : *op->frees()) freed = freed || id == op->operands()->Get(0);
      if (!freed)
        return bad("op ", o, " (", info.name,
                   ") frees its input inside the op (deallocate_activation) but is not a conv2d "
                   "whose frees list holds that input (its last use)");
    }
  }
  MESHPLAN_TRY(check_ids(plan->inputs(), "input", 0));
  MESHPLAN_TRY(check_ids(plan->outputs(), "output", 0));
  MESHPLAN_TRY(verify_mesh(*plan, what));
  MESHPLAN_TRY(verify_input_transforms(*plan, what));
  PlanRef ref;
  ref.plan_ = plan;
  ref.bytes_ = bytes;
  ref.name_ = h->graph_name() ? h->graph_name()->string_view() : std::string_view();
  return ref;
}

}  // namespace meshplan::runtime
