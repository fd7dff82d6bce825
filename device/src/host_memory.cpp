// Aligned host buffers from the process's allocator (std::aligned_alloc): the library never
// links an allocator of its own, so an embedder keeps the malloc it chose; the tools link
// mimalloc, which then serves these allocations too.
#include "meshplan/device/host_memory.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace meshplan::device {

namespace {

constexpr size_t kAlign = 64;

}  // namespace

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

void* aligned_alloc_bytes(size_t bytes) {
  // std::aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void aligned_free_bytes(void* p) {
  std::free(p);
}

}  // namespace meshplan::device
