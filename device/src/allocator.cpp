// First-fit bank allocator with coalescing.
#include "meshplan/device/allocator.hpp"

#include <algorithm>
#include <sstream>

namespace meshplan::device {

BankAllocator::BankAllocator(std::string what, uint64_t base, uint64_t limit, uint64_t alignment,
                             Direction direction)
    : what_(std::move(what)),
      base_(base),
      limit_(limit),
      alignment_(alignment),
      direction_(direction) {
  clear();
}

void BankAllocator::clear() {
  free_.clear();
  used_.clear();
  if (limit_ > base_) free_[base_] = limit_ - base_;
  allocated_ = 0;
}

void BankAllocator::take(std::map<uint64_t, uint64_t>::iterator block, uint64_t address,
                         uint64_t size) {
  uint64_t start = block->first, end = block->first + block->second;
  free_.erase(block);
  if (address > start) free_[start] = address - start;
  if (address + size < end) free_[address + size] = end - (address + size);
  allocated_ += size;
  high_water_ = std::max(high_water_, allocated_);
}

Result<uint64_t> BankAllocator::allocate(uint64_t size, std::string_view owner) {
  if (size == 0)
    return fail(ErrorCode::invalid_argument, what_, ": zero-byte buffer '", owner, "'");
  uint64_t need = align_up(size);
  if (direction_ == Direction::bottom_up) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      uint64_t addr = align_up(it->first);
      if (addr + need <= it->first + it->second) {
        take(it, addr, need);
        used_[addr] = Used{need, std::string(owner)};
        return addr;
      }
    }
  } else {
    for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
      uint64_t end = it->first + it->second;
      if (end < need) continue;
      uint64_t addr = (end - need) / alignment_ * alignment_;
      if (addr >= it->first) {
        auto fwd = std::prev(it.base());
        take(fwd, addr, need);
        used_[addr] = Used{need, std::string(owner)};
        return addr;
      }
    }
  }
  return fail(ErrorCode::resource_exhausted, what_, " out of memory: buffer '", owner, "' needs ",
              need, " bytes per bank, largest free block is ", largest_free(), " of ",
              limit_ - base_, " bytes");
}

Status BankAllocator::allocate_at(uint64_t address, uint64_t size, std::string_view owner) {
  if (size == 0)
    return fail(ErrorCode::invalid_argument, what_, ": zero-byte buffer '", owner, "'");
  if (address % alignment_ != 0)
    return fail(ErrorCode::invalid_argument, what_, ": buffer '", owner, "' at address ", address,
                " is not aligned to ", alignment_, " bytes");
  // Sizes and addresses come from plans: compare without forming a sum that could wrap.
  if (address < base_ || address > limit_ || size > limit_ - address ||
      align_up(size) > limit_ - address)
    return fail(ErrorCode::resource_exhausted, what_, ": buffer '", owner, "' of ", size,
                " bytes at address ", address, " lies outside the allocatable range [", base_, ", ",
                limit_, ")");
  uint64_t need = align_up(size);
  auto it = free_.upper_bound(address);
  if (it != free_.begin()) {
    --it;
    if (it->first <= address && address + need <= it->first + it->second) {
      take(it, address, need);
      used_[address] = Used{need, std::string(owner)};
      return {};
    }
  }
  for (const auto& [a, u] : used_)
    if (a < address + need && address < a + u.size)
      return fail(ErrorCode::invalid_argument, what_, ": buffer '", owner, "' [", address, ", ",
                  address + need, ") overlaps live buffer '", u.owner, "' [", a, ", ", a + u.size,
                  ")");
  return fail(ErrorCode::internal, what_, ": range for '", owner, "' is neither free nor used");
}

Status BankAllocator::free(uint64_t address) {
  auto it = used_.find(address);
  if (it == used_.end())
    return fail(ErrorCode::invalid_argument, what_, ": no buffer starts at address ", address);
  uint64_t start = address, size = it->second.size;
  allocated_ -= size;
  used_.erase(it);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return {};
    }
  }
  free_[start] = size;
  return {};
}

uint64_t BankAllocator::largest_free() const {
  uint64_t best = 0;
  for (const auto& [a, s] : free_) best = std::max(best, s);
  return best;
}

uint64_t BankAllocator::lowest_allocated() const {
  return used_.empty() ? limit_ : used_.begin()->first;
}

double BankAllocator::fragmentation() const {
  uint64_t total = 0;
  for (const auto& [a, s] : free_) total += s;
  return total == 0 ? 0.0 : 1.0 - static_cast<double>(largest_free()) / static_cast<double>(total);
}

std::string BankAllocator::print() const {
  std::ostringstream out;
  out << what_ << " [" << base_ << ", " << limit_ << ") allocated " << allocated_ << " high-water "
      << high_water_ << "\n";
  auto f = free_.begin();
  auto u = used_.begin();
  while (f != free_.end() || u != used_.end()) {
    if (u == used_.end() || (f != free_.end() && f->first < u->first)) {
      out << "  free " << f->first << " +" << f->second << "\n";
      ++f;
    } else {
      out << "  used " << u->first << " +" << u->second.size << " " << u->second.owner << "\n";
      ++u;
    }
  }
  return out.str();
}

Status BankAllocator::verify() const {
  uint64_t cursor = base_;
  bool last_free = false;
  auto f = free_.begin();
  auto u = used_.begin();
  while (f != free_.end() || u != used_.end()) {
    bool is_free = u == used_.end() || (f != free_.end() && f->first < u->first);
    uint64_t addr = is_free ? f->first : u->first;
    uint64_t size = is_free ? f->second : u->second.size;
    if (addr != cursor)
      return fail(ErrorCode::internal, what_, ": block at ", addr,
                  " does not start where the previous ended (", cursor, ")");
    if (is_free && last_free)
      return fail(ErrorCode::internal, what_, ": adjacent free blocks at ", addr, " not merged");
    cursor = addr + size;
    last_free = is_free;
    if (is_free)
      ++f;
    else
      ++u;
  }
  if (cursor != limit_ && !(free_.empty() && used_.empty() && base_ >= limit_))
    return fail(ErrorCode::internal, what_, ": blocks end at ", cursor, ", not at the limit ",
                limit_);
  return {};
}

}  // namespace meshplan::device
