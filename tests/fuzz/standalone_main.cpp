// Driver for the fuzz targets where libFuzzer is not available (GCC builds, `make test`):
// replays every seed file, then a bounded number of deterministic mutations of each (bit
// flips, byte overwrites, truncations, insertions, splices). Coverage-guided fuzzing runs with
// clang's libFuzzer instead (`make fuzz`).
//
//   FUZZ_TARGET SEED_FILE_OR_DIR... [--mutations N]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void mutate(std::vector<uint8_t>& v, std::mt19937_64& rng, const std::vector<uint8_t>& other) {
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  switch (rng() % 6) {
    case 0:
      if (!v.empty()) v[pick(v.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:
      for (int k = 0; k < 4 && !v.empty(); ++k) v[pick(v.size())] = static_cast<uint8_t>(rng());
      break;
    case 2:
      v.resize(pick(v.size() + 1));
      break;
    case 3:
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(pick(v.size() + 1)),
               static_cast<uint8_t>(rng()));
      break;
    case 4:
      if (!other.empty()) {
        size_t at = pick(v.size() + 1), from = pick(other.size()),
               len = pick(other.size() - from + 1);
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at),
                 other.begin() + static_cast<std::ptrdiff_t>(from),
                 other.begin() + static_cast<std::ptrdiff_t>(from + len));
      }
      break;
    default: {
      // Interesting integers at aligned offsets: sizes, offsets and counts live there.
      static const uint32_t kValues[] = {0, 1, 0x7fffffff, 0x80000000u, 0xffffffffu, 64, 4096};
      if (v.size() >= 4) {
        size_t at = pick(v.size() / 4) * 4;
        uint32_t x = kValues[rng() % 7];
        for (int b = 0; b < 4; ++b) v[at + b] = static_cast<uint8_t>(x >> (8 * b));
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 2000;
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) {
      mutations = std::strtol(argv[++i], nullptr, 10);
      continue;
    }
    std::filesystem::path p(a);
    if (std::filesystem::is_directory(p)) {
      std::vector<std::filesystem::path> files;
      for (const auto& f : std::filesystem::directory_iterator(p)) files.push_back(f.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) seeds.push_back(read_file(f));
    } else {
      seeds.push_back(read_file(p));
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz driver: no seed files\n");
    return 1;
  }
  std::mt19937_64 rng(12345);
  size_t runs = 0;
  for (const auto& s : seeds) {
    LLVMFuzzerTestOneInput(s.data(), s.size());
    ++runs;
    for (long m = 0; m < mutations; ++m) {
      std::vector<uint8_t> v = s;
      int rounds = 1 + static_cast<int>(rng() % 3);
      for (int r = 0; r < rounds; ++r) mutate(v, rng, seeds[rng() % seeds.size()]);
      LLVMFuzzerTestOneInput(v.data(), v.size());
      ++runs;
    }
  }
  std::printf("fuzz driver: %zu inputs from %zu seeds, no crash\n", runs, seeds.size());
  return 0;
}
