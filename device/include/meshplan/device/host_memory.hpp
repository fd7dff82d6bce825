// Aligned host buffers from the process's allocator: the emulator's tiles and memories and the
// runtime's host tensors.
#pragma once

#include <cstddef>
#include <memory>

namespace meshplan::device {

/// Deleter for memory from alloc_floats (the process allocator).
struct MiFree {
  void operator()(void* p) const;
};
/// `count` floats, 64-byte aligned, from mimalloc (zeroed); null when the host is out of memory
/// (callers check).
std::unique_ptr<float[], MiFree> alloc_floats(size_t count);

/// 64-byte aligned bytes from mimalloc; release with aligned_free_bytes.
void* aligned_alloc_bytes(size_t bytes);
void aligned_free_bytes(void* p);

/// std::allocator replacement giving 64-byte aligned storage from mimalloc (host tensors).
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(aligned_alloc_bytes(n * sizeof(T))); }
  void deallocate(T* p, size_t) { aligned_free_bytes(p); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
};

}  // namespace meshplan::device
