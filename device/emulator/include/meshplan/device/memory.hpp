// Byte arrays for emulated L1 and DRAM banks, allocated lazily in chunks from the process's
// allocator (host_memory.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace meshplan::device
