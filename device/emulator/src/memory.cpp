// Lazily allocated emulated memories, in chunks from aligned_alloc_bytes (host_memory.hpp).
#include "meshplan/device/memory.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "meshplan/device/host_memory.hpp"

namespace meshplan::device {

SparseMemory::SparseMemory(uint64_t size, uint64_t chunk_size)
    : size_(size),
      chunk_size_(chunk_size),
      chunks_((size + chunk_size - 1) / chunk_size, nullptr) {}

SparseMemory::~SparseMemory() {
  for (std::byte* c : chunks_) aligned_free_bytes(c);
}

SparseMemory::SparseMemory(SparseMemory&& o) noexcept
    : size_(o.size_), chunk_size_(o.chunk_size_), chunks_(std::move(o.chunks_)) {
  o.chunks_.clear();
}

SparseMemory& SparseMemory::operator=(SparseMemory&& o) noexcept {
  if (this != &o) {
    for (std::byte* c : chunks_) aligned_free_bytes(c);
    size_ = o.size_;
    chunk_size_ = o.chunk_size_;
    chunks_ = std::move(o.chunks_);
    o.chunks_.clear();
  }
  return *this;
}

std::byte* SparseMemory::chunk_for_write(size_t index) {
  // Out of host memory throws std::bad_alloc: the callers have no error path, and a null chunk
  // must not be written.
  if (!chunks_[index]) {
    chunks_[index] = static_cast<std::byte*>(aligned_alloc_bytes(chunk_size_));
    std::memset(chunks_[index], 0, chunk_size_);
  }
  return chunks_[index];
}

void SparseMemory::back(uint64_t offset, uint64_t n) {
  if (offset >= size_ || n == 0) return;
  uint64_t end = std::min(size_, offset + n);
  for (size_t i = offset / chunk_size_; i <= (end - 1) / chunk_size_; ++i) chunk_for_write(i);
}

void SparseMemory::write(uint64_t offset, const std::byte* src, size_t n) {
  assert(offset + n <= size_ && "SparseMemory::write out of range");
  while (n > 0) {
    size_t index = offset / chunk_size_;
    uint64_t in_chunk = offset % chunk_size_;
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, chunk_size_ - in_chunk));
    std::memcpy(chunk_for_write(index) + in_chunk, src, take);
    offset += take;
    src += take;
    n -= take;
  }
}

void SparseMemory::read(uint64_t offset, std::byte* dst, size_t n) const {
  assert(offset + n <= size_ && "SparseMemory::read out of range");
  while (n > 0) {
    size_t index = offset / chunk_size_;
    uint64_t in_chunk = offset % chunk_size_;
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, chunk_size_ - in_chunk));
    if (chunks_[index])
      std::memcpy(dst, chunks_[index] + in_chunk, take);
    else
      std::memset(dst, 0, take);
    offset += take;
    dst += take;
    n -= take;
  }
}

uint64_t SparseMemory::resident_bytes() const {
  uint64_t n = 0;
  for (std::byte* c : chunks_) n += c ? chunk_size_ : 0;
  return n;
}

}  // namespace meshplan::device
