// The backend registry: explicit registration, opening by name, and the errors for an unknown or
// doubly registered name; the emulator registers itself only when asked.
#include <doctest/doctest.h>

#include <algorithm>

#include "meshplan/device/backend.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator_backend.hpp"

using namespace meshplan;
using namespace meshplan::device;

TEST_CASE("backend registry: a registered backend opens meshes of the asked shape") {
  REQUIRE(register_backend(
      "test-null", [](const MeshDesc& d, const BackendOptions&) -> Result<std::unique_ptr<Mesh>> {
        return std::make_unique<NullMesh>(d);
      }));
  CHECK(has_backend("test-null"));
  auto names = backend_names();
  CHECK(std::ranges::is_sorted(names));
  CHECK(std::ranges::find(names, "test-null") != names.end());

  auto mesh = open_backend("test-null", *builtin_mesh("t3k"));
  REQUIRE(mesh);
  CHECK((*mesh)->rows() == 2);
  CHECK((*mesh)->cols() == 4);
  // A NullMesh's chips answer unimplemented: the factory's mesh is what open_backend returns.
  auto run = (*mesh)->all_gather({}, {}, 0, 1);
  REQUIRE_FALSE(run);
  CHECK(run.error().code == ErrorCode::unimplemented);

  auto again = register_backend(
      "test-null", [](const MeshDesc& d, const BackendOptions&) -> Result<std::unique_ptr<Mesh>> {
        return std::make_unique<NullMesh>(d);
      });
  REQUIRE_FALSE(again);
  CHECK(again.error().code == ErrorCode::invalid_argument);
  CHECK(again.error().message.find("'test-null' is already registered") != std::string::npos);
  CHECK_FALSE(register_backend(
      "", [](const MeshDesc& d, const BackendOptions&) -> Result<std::unique_ptr<Mesh>> {
        return std::make_unique<NullMesh>(d);
      }));
  CHECK_FALSE(register_backend("test-empty", MeshFactory{}));
}

TEST_CASE("backend registry: an unknown name is not_found and names the registered backends") {
  REQUIRE(register_emulator_backend());
  auto mesh = open_backend("tt-hardware", single_chip_mesh(wormhole_b0()));
  REQUIRE_FALSE(mesh);
  CHECK(mesh.error().code == ErrorCode::not_found);
  CHECK(mesh.error().message.find("no backend 'tt-hardware'") != std::string::npos);
  CHECK(mesh.error().message.find("emulator") != std::string::npos);
}

TEST_CASE("backend registry: the emulator registers once and opens emulated meshes") {
  REQUIRE(register_emulator_backend());
  REQUIRE(register_emulator_backend());  // idempotent
  CHECK(has_backend(kEmulatorBackend));
  auto mesh = open_backend(kEmulatorBackend, single_chip_mesh(wormhole_b0()));
  REQUIRE(mesh);
  CHECK((*mesh)->size() == 1);
  CHECK((*mesh)->chip(0).descriptor().name == wormhole_b0().name);
  // A real chip: a DRAM buffer is allocated, written and read back (a NullDevice would answer
  // unimplemented).
  std::vector<int64_t> shape = {32, 32};
  TensorPlacement t = make_interleaved("x", shape, DType::bf16, BufferType::dram, 0);
  Device& chip = (*mesh)->chip(0);
  REQUIRE(chip.allocate(t));
  std::vector<float> in(32 * 32, 1.5f), out(32 * 32, 0.0f);
  REQUIRE(chip.write(t, in));
  REQUIRE(chip.read(t, out));
  CHECK(out == in);
}

TEST_CASE("backend registry: the emulator's chips run their cores on the asked host threads") {
  REQUIRE(register_emulator_backend());
  auto mesh =
      open_backend(kEmulatorBackend, *builtin_mesh("n300"), BackendOptions{.host_threads = 3});
  REQUIRE(mesh);
  auto* emulated = dynamic_cast<EmulatedMesh*>(mesh->get());
  REQUIRE(emulated != nullptr);
  CHECK(emulated->chip(0).core_threads() == 3);
  CHECK(emulated->chip(1).core_threads() == 3);
  // 0 keeps the emulator's default (at most 4, at least 1).
  auto plain = open_backend(kEmulatorBackend, single_chip_mesh(wormhole_b0()));
  REQUIRE(plain);
  unsigned threads = dynamic_cast<EmulatedMesh&>(**plain).chip(0).core_threads();
  CHECK(threads >= 1);
  CHECK(threads <= 4);
}

TEST_CASE("backend registry: register_backend_once registers on the first call, answers it after") {
  auto factory = [](const MeshDesc& d, const BackendOptions&) -> Result<std::unique_ptr<Mesh>> {
    return std::make_unique<NullMesh>(d);
  };
  REQUIRE(register_backend_once("test-once", factory));
  REQUIRE(register_backend_once("test-once", factory));  // not registered twice
  CHECK(std::ranges::count(backend_names(), std::string("test-once")) == 1);
  // A name another caller registered first: the first once-call fails and later ones repeat it.
  REQUIRE(register_backend("test-taken", factory));
  auto first = register_backend_once("test-taken", factory);
  REQUIRE_FALSE(first);
  CHECK(first.error().message.find("'test-taken' is already registered") != std::string::npos);
  auto again = register_backend_once("test-taken", factory);
  REQUIRE_FALSE(again);
  CHECK(again.error().message == first.error().message);
}
