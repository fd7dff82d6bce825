// BankAllocator: first fit, directions, alignment, fixed addresses, coalescing, errors.
#include "meshplan/device/allocator.hpp"

#include <doctest/doctest.h>

using namespace meshplan;
using namespace meshplan::device;

TEST_CASE("DRAM allocates bottom-up, first fit, aligned") {
  BankAllocator a("DRAM", 0, 1024, 32, BankAllocator::Direction::bottom_up);
  CHECK(*a.allocate(10, "x") == 0);
  CHECK(*a.allocate(40, "y") == 32);
  CHECK(*a.allocate(32, "z") == 96);
  CHECK(a.allocated_bytes() == 32 + 64 + 32);
  REQUIRE(a.free(32));
  // First fit: the hole at 32 (64 bytes) takes a 50-byte buffer.
  CHECK(*a.allocate(50, "w") == 32);
  REQUIRE(a.verify());
}

TEST_CASE("L1 allocates top-down from the usable top") {
  BankAllocator a("L1", 1000, 2000, 16, BankAllocator::Direction::top_down);
  CHECK(*a.allocate(100, "t0") == 1888);  // (2000 - 112) rounded down to 16
  CHECK(*a.allocate(16, "t1") == 1872);
  CHECK(a.lowest_allocated() == 1872);
  REQUIRE(a.verify());
}

TEST_CASE("freeing coalesces neighbours") {
  BankAllocator a("DRAM", 0, 4096, 32, BankAllocator::Direction::bottom_up);
  uint64_t x = *a.allocate(1024, "x"), y = *a.allocate(1024, "y"), z = *a.allocate(1024, "z");
  REQUIRE(a.free(x));
  REQUIRE(a.free(z));
  CHECK(a.largest_free() == 2048);  // z merged with the tail
  CHECK(a.fragmentation() > 0.0);
  REQUIRE(a.free(y));
  CHECK(a.largest_free() == 4096);
  CHECK(a.fragmentation() == 0.0);
  CHECK(a.high_water() == 3072);
  REQUIRE(a.verify());
  CHECK(a.print().find("free 0 +4096") != std::string::npos);
}

TEST_CASE("out of memory names the buffer and the largest free block") {
  BankAllocator a("L1", 0, 1024, 16, BankAllocator::Direction::top_down);
  REQUIRE(a.allocate(512, "a"));
  auto r = a.allocate(600, "activations");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::resource_exhausted);
  CHECK(r.error().message.find("activations") != std::string::npos);
  CHECK(r.error().message.find("512") != std::string::npos);
  // Still usable afterwards.
  CHECK(a.allocate(512, "b"));
}

TEST_CASE("fixed addresses: overlap, misalignment and range are rejected") {
  BankAllocator a("DRAM", 0, 4096, 32, BankAllocator::Direction::bottom_up);
  REQUIRE(a.allocate_at(1024, 100, "weights"));
  auto overlap = a.allocate_at(1088, 64, "bias");
  REQUIRE_FALSE(overlap);
  CHECK(overlap.error().message.find("overlaps live buffer 'weights'") != std::string::npos);
  auto misaligned = a.allocate_at(2050, 64, "x");
  REQUIRE_FALSE(misaligned);
  CHECK(misaligned.error().message.find("not aligned") != std::string::npos);
  auto outside = a.allocate_at(4064, 64, "y");
  REQUIRE_FALSE(outside);
  CHECK(outside.error().code == ErrorCode::resource_exhausted);
  REQUIRE(a.allocate_at(1152, 64, "after"));  // 1024 + 128 (100 rounded to 32)
  CHECK_FALSE(a.free(7));
  REQUIRE(a.verify());
}
