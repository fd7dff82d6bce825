// Helpers shared by the test suites: temporary folders and small file utilities.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace meshplan::test {

/// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "meshplan-test-XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    REQUIRE(made != nullptr);
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// `--input=TYPE=v0,v1,...` for meshplan-run, the values written as integers (tests that use it
/// pick small integer values so every sum is exact).
inline std::string input_arg(const std::string& type, const std::vector<float>& v) {
  std::string s = " --input=" + type + "=";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(static_cast<int>(v[i]));
  return s;
}

/// The float32 payload of a .npy file: its last n*4 bytes.
inline std::vector<float> npy_values(const std::string& path, size_t n) {
  std::vector<uint8_t> bytes = read_bytes(path);
  REQUIRE(bytes.size() >= n * 4);
  std::vector<float> v(n);
  std::memcpy(v.data(), bytes.data() + bytes.size() - n * 4, n * 4);
  return v;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

/// What a shell command printed (stdout and stderr) and its exit status (-1 if it did not exit).
struct CommandOutput {
  int status;
  std::string text;
};

/// Runs `cmd` through the shell and collects its output.
inline CommandOutput run_shell(const std::string& cmd) {
  CommandOutput o{-1, ""};
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) o.text.append(buf, n);
  int rc = ::pclose(pipe);
  o.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return o;
}

inline std::string source_path(const std::string& relative) {
  return std::string(MESHPLAN_SOURCE_DIR) + "/" + relative;
}

}  // namespace meshplan::test
