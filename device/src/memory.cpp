// Lazily allocated emulated memories and aligned host buffers, from the process's allocator
// (std::aligned_alloc): the library never links an allocator of its own, so an embedder keeps
// the malloc it chose; the tools link mimalloc, which then serves these allocations too.
#include "meshplan/device/memory.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace meshplan::device {

namespace {

constexpr size_t kAlign = 64;

// std::aligned_alloc needs a size that is a multiple of the alignment.
void* alloc_aligned(size_t bytes, bool zero) {
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  if (zero) std::memset(p, 0, rounded);
  return p;
}

}  // namespace

SparseMemory::SparseMemory(uint64_t size, uint64_t chunk_size)
    : size_(size),
      chunk_size_(chunk_size),
      chunks_((size + chunk_size - 1) / chunk_size, nullptr) {}

SparseMemory::~SparseMemory() {
  for (std::byte* c : chunks_) std::free(c);
}

SparseMemory::SparseMemory(SparseMemory&& o) noexcept
    : size_(o.size_), chunk_size_(o.chunk_size_), chunks_(std::move(o.chunks_)) {
  o.chunks_.clear();
}

SparseMemory& SparseMemory::operator=(SparseMemory&& o) noexcept {
  if (this != &o) {
    for (std::byte* c : chunks_) std::free(c);
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
  if (!chunks_[index]) chunks_[index] = static_cast<std::byte*>(alloc_aligned(chunk_size_, true));
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

void MiFree::operator()(void* p) const {
  std::free(p);
}

std::unique_ptr<float[], MiFree> alloc_floats(size_t count) {
  // Null when the host cannot hold it (the callers report the tensor and its size).
  if (count > (SIZE_MAX - kAlign) / sizeof(float)) return nullptr;
  size_t rounded = (std::max<size_t>(count * sizeof(float), 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p) std::memset(p, 0, rounded);
  return std::unique_ptr<float[], MiFree>(static_cast<float*>(p));
}

}  // namespace meshplan::device

namespace meshplan::device {

void* aligned_alloc_bytes(size_t bytes) {
  return alloc_aligned(bytes, false);
}

void aligned_free_bytes(void* p) {
  std::free(p);
}

}  // namespace meshplan::device
