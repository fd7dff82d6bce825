// EmulatedDevice: allocation checks, host transfers and op dispatch.
#include "meshplan/device/emulator.hpp"

#include "meshplan/device/collective_ops.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "core_pool.hpp"
#include "kernels.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_model.hpp"
#include "tensor_io.hpp"

namespace meshplan::device {

namespace {
constexpr uint64_t kDramChunk = 1ull << 20;
constexpr uint64_t kL1Chunk = 64ull << 10;
}  // namespace

bool EmulatedDevice::holds(const LiveBuffer& live, uint32_t core) const {
  return !live.sharded || live.shard.contains(core % chip_.grid_x, core / chip_.grid_x);
}

Result<std::unique_ptr<EmulatedDevice>> EmulatedDevice::create(ChipDesc chip) {
  MESHPLAN_TRY(chip.verify());
  return std::unique_ptr<EmulatedDevice>(new EmulatedDevice(std::move(chip)));
}

EmulatedDevice::EmulatedDevice(ChipDesc chip)
    : chip_(std::move(chip)),
      op_model_(chip_),
      dram_alloc_("DRAM", 0, chip_.dram_bank_size, chip_.dram_alignment,
                  BankAllocator::Direction::bottom_up),
      l1_alloc_("L1", chip_.l1_unreserved_base, chip_.l1_usable_top(), chip_.l1_alignment,
                BankAllocator::Direction::top_down) {
  memory_.dram.reserve(chip_.dram_banks);
  for (uint32_t b = 0; b < chip_.dram_banks; ++b)
    memory_.dram.emplace_back(chip_.dram_bank_size, kDramChunk);
  memory_.l1.reserve(chip_.cores());
  for (int c = 0; c < chip_.cores(); ++c) memory_.l1.emplace_back(chip_.l1_size, kL1Chunk);
  l1_used_.assign(chip_.cores(), 0);
  l1_high_.assign(chip_.cores(), 0);
  set_core_threads(std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
}

EmulatedDevice::~EmulatedDevice() = default;

void EmulatedDevice::set_core_threads(unsigned threads) {
  pool_ = std::make_unique<CorePool>(std::max(1u, threads));
  memory_.pool = pool_.get();
}

unsigned EmulatedDevice::core_threads() const {
  return pool_->threads();
}

uint64_t EmulatedDevice::pooled_jobs() const {
  return pool_->jobs();
}

Status EmulatedDevice::check_supported(const TensorPlacement& t) const {
  return check_placement(t, chip_);
}

Status EmulatedDevice::allocate(const TensorPlacement& t) {
  MESHPLAN_TRY(check_supported(t));
  AddressMap map(t, chip_);
  uint64_t bytes = map.bytes_per_bank();
  BankAllocator& alloc = t.buffer == BufferType::dram ? dram_alloc_ : l1_alloc_;
  auto status = alloc.allocate_at(t.address, bytes, t.name);
  if (!status) {
    std::string where;
    if (map.sharded()) {
      const CoreRange& g = t.shard.grid;
      where = str(" on cores (", g.x0, ",", g.y0, ")-(", g.x1, ",", g.y1, ")",
                  t.shard.extra_ranges ? " and more" : "");
    } else if (t.buffer == BufferType::l1) {
      where = " on every core";
    } else {
      where = str(" in each of the ", chip_.dram_banks, " DRAM banks");
    }
    // An overlap: name the first core (in core order) that holds both buffers. The address
    // range is shared by every core, so buffers on disjoint cores may still be refused.
    bool named = false;
    for (const auto& [key, live] : live_) {
      if (named || key.first != t.buffer || t.buffer != BufferType::l1 ||
          key.second >= t.address + bytes || t.address >= key.second + live.bytes)
        continue;
      for (uint32_t c = 0; c < l1_used_.size() && !named; ++c)
        if (map.holds(c) && holds(live, c)) {
          where += str(" (core (", c % chip_.grid_x, ",", c / chip_.grid_x, ") holds both it and '",
                       live.name, "')");
          named = true;
        }
    }
    return std::unexpected(
        with_context(status.error(), str("allocating tensor '", t.name, "'", where)));
  }
  live_[{t.buffer, t.address}] = LiveBuffer{bytes, map.sharded(), t.shard, std::string(t.name)};
  if (t.buffer == BufferType::l1)
    for (uint32_t c = 0; c < l1_used_.size(); ++c)
      if (map.holds(c)) {
        l1_used_[c] += bytes;
        l1_high_[c] = std::max(l1_high_[c], l1_used_[c]);
      }
  return {};
}

Status EmulatedDevice::deallocate(const TensorPlacement& t) {
  auto it = live_.find({t.buffer, t.address});
  if (it == live_.end())
    return fail(ErrorCode::invalid_argument, "deallocating tensor '", t.name, "': no live ",
                buffer_name(t.buffer), " buffer at address ", t.address);
  if (t.buffer == BufferType::l1)
    for (uint32_t c = 0; c < l1_used_.size(); ++c)
      if (holds(it->second, c)) l1_used_[c] -= it->second.bytes;
  live_.erase(it);
  return (t.buffer == BufferType::dram ? dram_alloc_ : l1_alloc_).free(t.address);
}

void EmulatedDevice::reset() {
  dram_alloc_.clear();
  l1_alloc_.clear();
  live_.clear();
  std::fill(l1_used_.begin(), l1_used_.end(), 0);
  std::fill(l1_high_.begin(), l1_high_.end(), 0);
  clock_ns_ = 0;
}

Status EmulatedDevice::check_live(const TensorPlacement& t, std::string_view role) const {
  auto it = live_.find({t.buffer, t.address});
  if (it == live_.end())
    return fail(ErrorCode::invalid_argument, role, " '", t.name, "': no live ",
                buffer_name(t.buffer), " buffer at address ", t.address);
  AddressMap map(t, chip_);
  uint64_t need = map.bytes_per_bank();
  const LiveBuffer& live = it->second;
  if (live.bytes < need)
    return fail(ErrorCode::invalid_argument, role, " '", t.name, "': buffer at ", t.address,
                " holds ", live.bytes, " bytes per bank, the tensor needs ", need);
  // The access may only touch cores the live buffer reserved.
  if (live.sharded) {
    bool inside = map.sharded();
    for (int i = 0; inside && i < t.shard.range_count(); ++i) {
      const CoreRange& r = t.shard.range(i);
      for (uint32_t y = r.y0; inside && y <= r.y1; ++y)
        for (uint32_t x = r.x0; inside && x <= r.x1; ++x) inside = live.shard.contains(x, y);
    }
    if (!inside) {
      const CoreRange& g = live.shard.grid;
      return fail(ErrorCode::invalid_argument, role, " '", t.name, "': the L1 buffer at ",
                  t.address, " is sharded over cores (", g.x0, ",", g.y0, ")-(", g.x1, ",", g.y1,
                  ")", live.shard.extra_ranges ? " and more" : "",
                  ", this access reaches cores outside it");
    }
  }
  return {};
}

Status EmulatedDevice::write(const TensorPlacement& t, std::span<const float> host) {
  MESHPLAN_TRY(check_supported(t));
  MESHPLAN_TRY(check_live(t, "writing tensor"));
  if (static_cast<int64_t>(host.size()) != volume(t.shape))
    return fail(ErrorCode::invalid_argument, "writing tensor '", t.name, "': ", host.size(),
                " values for ", volume(t.shape), " elements");
  if (auto s = write_tensor(memory_, chip_, t, host); !s)
    return std::unexpected(with_context(s.error(), str("writing tensor '", t.name, "'")));
  return {};
}

Status EmulatedDevice::read(const TensorPlacement& t, std::span<float> host) {
  MESHPLAN_TRY(check_supported(t));
  MESHPLAN_TRY(check_live(t, "reading tensor"));
  if (static_cast<int64_t>(host.size()) != volume(t.shape))
    return fail(ErrorCode::invalid_argument, "reading tensor '", t.name, "': room for ",
                host.size(), " values, ", volume(t.shape), " elements");
  return read_tensor(memory_, chip_, t, host);
}

Result<OpTiming> EmulatedDevice::launch(const OpLaunch& op) {
  if (is_collective(op.kind))
    return fail(ErrorCode::invalid_argument, "op '", op.name, "': ", op_name(op.kind),
                " is a mesh op: run it through a Mesh");
  // The same rules the planner consulted: anything OpModel rejects is never executed.
  OpValidation v = op_model_.validate(op);
  if (!v.ok) return fail(ErrorCode::invalid_argument, v.reason);
  for (const TensorPlacement* t : op.operands) {
    auto live = check_live(*t, "operand");
    if (!live) return std::unexpected(with_context(live.error(), str("op '", op.name, "'")));
  }
  // A conv2d with deallocate_activation (OpModel accepts it on conv2d with an L1 input only)
  // allocates its results itself, after it freed its input: they must not be live yet.
  bool frees_input = op.config.deallocate_activation;
  if (frees_input)
    for (const TensorPlacement* t : op.results)
      if (live_.contains({t->buffer, t->address}) &&
          !(t->buffer == op.operands[0]->buffer && t->address == op.operands[0]->address))
        return fail(ErrorCode::invalid_argument, "op '", op.name, "': result '", t->name,
                    "' is allocated before the conv2d frees its input (deallocate_activation): "
                    "the op allocates it");
  if (!frees_input)
    for (const TensorPlacement* t : op.results) {
      auto live = check_live(*t, "result");
      if (!live) return std::unexpected(with_context(live.error(), str("op '", op.name, "'")));
    }
  // Circular buffers grow from the unreserved base on every core the op runs on, and must stay
  // below each live L1 buffer those cores hold.
  uint64_t cb_top = chip_.l1_unreserved_base + v.cb_bytes_per_core;
  CoreRange op_grid{0, 0, static_cast<uint16_t>(op.config.grid_x - 1),
                    static_cast<uint16_t>(op.config.grid_y - 1)};
  auto check_cbs = [&]() -> Status {
    for (const auto& [key, live] : live_) {
      if (key.first != BufferType::l1 || key.second >= cb_top) continue;
      for (uint16_t y = op_grid.y0; y <= op_grid.y1; ++y)
        for (uint16_t x = op_grid.x0; x <= op_grid.x1; ++x)
          if (holds(live, static_cast<uint32_t>(y) * chip_.grid_x + x))
            return fail(ErrorCode::resource_exhausted, "op '", op.name, "': circular buffers [",
                        chip_.l1_unreserved_base, ", ", cb_top, ") clash on core (", x, ",", y,
                        ") with L1 buffer '", live.name, "' at ", key.second);
    }
    return {};
  };
  MESHPLAN_TRY(check_cbs());
  if (frees_input) {
    // TTNN's order: the halo step copies the input into the halo buffer (in the circular
    // buffers), the input is freed, then the result is allocated, possibly over the input's L1.
    // The kernel reads its operands before it writes a result tile (kernels_conv.cpp), and
    // nothing writes L1 between here and the kernel: it reads the copy the halo step made.
    MESHPLAN_TRY(deallocate(*op.operands[0]));
    for (const TensorPlacement* t : op.results)
      if (auto s = allocate(*t); !s)
        return std::unexpected(with_context(s.error(), str("op '", op.name, "'")));
    MESHPLAN_TRY(check_cbs());
  }
  auto timing = run_kernel(memory_, chip_, op);
  if (!timing) return std::unexpected(with_context(timing.error(), str("op '", op.name, "'")));
  clock_ns_ += timing->duration_ns;
  return timing;
}

EmulatedDevice::L1CoreStats EmulatedDevice::l1_core_stats(uint32_t core) const {
  L1CoreStats s;
  s.used_bytes = l1_used_[core];
  s.high_water_bytes = l1_high_[core];
  // Free space on this core: the gaps between the live buffers it holds, in [base, top).
  uint64_t cursor = chip_.l1_unreserved_base, top = chip_.l1_usable_top();
  auto gap = [&](uint64_t end) {
    if (end > cursor) {
      s.free_bytes += end - cursor;
      s.largest_free = std::max(s.largest_free, end - cursor);
    }
  };
  for (const auto& [key, live] : live_) {
    if (key.first != BufferType::l1 || !holds(live, core)) continue;
    gap(key.second);
    cursor = std::max(cursor, key.second + live.bytes);
    ++s.buffers;
  }
  gap(top);
  s.fragmentation = s.free_bytes == 0 ? 0.0
                                      : 1.0 - static_cast<double>(s.largest_free) /
                                                  static_cast<double>(s.free_bytes);
  return s;
}

Status EmulatedDevice::peek(BufferType buffer, uint32_t bank, uint64_t offset,
                            std::span<std::byte> out) const {
  const auto& mems = buffer == BufferType::dram ? memory_.dram : memory_.l1;
  if (bank >= mems.size() || offset > mems[bank].size() || out.size() > mems[bank].size() - offset)
    return fail(ErrorCode::invalid_argument, "peek: ", buffer_name(buffer), " bank ", bank, " [",
                offset, ", +", out.size(), ") is outside the device");
  mems[bank].read(offset, out.data(), out.size());
  return {};
}

uint64_t EmulatedDevice::resident_bytes() const {
  uint64_t n = 0;
  for (const auto& m : memory_.dram) n += m.resident_bytes();
  for (const auto& m : memory_.l1) n += m.resident_bytes();
  return n;
}

}  // namespace meshplan::device
