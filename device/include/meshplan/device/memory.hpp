// Byte arrays for emulated L1 and DRAM banks, allocated lazily in chunks from mimalloc, and
// aligned host buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace meshplan::device {

/// A `size`-byte memory whose chunks are allocated (zeroed) on first write; unwritten bytes read
/// as zero. Not thread-safe for concurrent writes to the same chunk.
class SparseMemory {
 public:
  SparseMemory(uint64_t size, uint64_t chunk_size);
  ~SparseMemory();
  SparseMemory(SparseMemory&&) noexcept;
  SparseMemory& operator=(SparseMemory&&) noexcept;
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;

  uint64_t size() const { return size_; }
  /// Preconditions: offset + n <= size().
  void write(uint64_t offset, const std::byte* src, size_t n);
  void read(uint64_t offset, std::byte* dst, size_t n) const;
  /// Allocates the chunks under [offset, offset + n) now (clamped to size()), so later writes
  /// there from several threads touch only existing chunks.
  void back(uint64_t offset, uint64_t n);
  /// Bytes of chunks actually allocated.
  uint64_t resident_bytes() const;

 private:
  std::byte* chunk_for_write(size_t index);
  uint64_t size_;
  uint64_t chunk_size_;
  std::vector<std::byte*> chunks_;
};

/// Deleter for memory from alloc_floats (the process allocator).
struct MiFree {
  void operator()(void* p) const;
};
/// `count` floats, 64-byte aligned, from mimalloc (zeroed); null when the host is out of memory
/// (callers check).
std::unique_ptr<float[], MiFree> alloc_floats(size_t count);

}  // namespace meshplan::device

namespace meshplan::device {

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
