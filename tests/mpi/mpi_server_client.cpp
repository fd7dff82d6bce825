// A client of meshplan-server for the MPI server test: sends a mesh plan's inputs (values drawn
// here, not by the server) as base64 over TCP, takes the output tensors back and compares them
// byte for byte with the same plan run in this process on an EmulatedMesh.
//   mpi_server_client PORT CACHE.mpc PLAN REQUESTS [quit]
// Exits 0 when every reply matches (and, with `quit`, the server said bye), 1 otherwise.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base64.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "mpi_server_client: FAIL: %s\n", what.c_str());
  return 1;
}

struct Connection {
  int fd = -1;
  std::string pending;
  bool send(const std::string& line) {
    std::string text = line + "\n";
    for (size_t at = 0; at < text.size();) {
      ssize_t n = ::write(fd, text.data() + at, text.size() - at);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  bool read_line(std::string* line) {
    char buf[1 << 16];
    while (pending.find('\n') == std::string::npos) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return false;
      pending.append(buf, static_cast<size_t>(n));
    }
    size_t nl = pending.find('\n');
    *line = pending.substr(0, nl);
    pending.erase(0, nl + 1);
    return true;
  }
};

std::string shape_text(std::span<const int64_t> shape) {
  std::string s;
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + "f32";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return fail("usage: mpi_server_client PORT CACHE.mpc PLAN REQUESTS [quit]");
  int port = std::atoi(argv[1]), requests = std::atoi(argv[4]);
  std::string plan_name = argv[3];
  bool quit = argc > 5 && std::string(argv[5]) == "quit";

  // The local, in-process reference: the same plan on an EmulatedMesh.
  auto cache = runtime::PlanCache::open(argv[2]);
  if (!cache) return fail(cache.error().to_string());
  std::optional<runtime::PlanRef> plan;
  for (size_t i = 0; i < cache->size(); ++i)
    if (cache->entry(i).name == plan_name) plan = *cache->load(i);
  if (!plan || !runtime::is_mesh_plan(*plan)) return fail("no mesh plan " + plan_name);
  auto chip = device::builtin_chip(plan->plan().header()->device()->name()->str());
  if (!chip) return fail("unknown chip");
  auto desc = runtime::plan_mesh_desc(*plan, *chip);
  if (!desc) return fail(desc.error().to_string());
  auto mesh = device::EmulatedMesh::create(*desc);
  if (!mesh) return fail(mesh.error().to_string());
  auto exe = runtime::Executable::bind(*plan, **mesh);
  if (!exe) return fail(exe.error().to_string());

  Connection c;
  c.fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail("cannot connect to port " + std::to_string(port));

  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < requests; ++k) {
    // Inputs: uniform in [-1, 1) from a 64-bit LCG, different for every request.
    std::vector<runtime::Tensor> inputs;
    std::string line = "run " + plan_name;
    for (size_t i = 0; i < (*exe)->input_count(); ++i) {
      std::span<const int64_t> shape = (*exe)->input_shape(i);
      runtime::Tensor t(std::vector<int64_t>(shape.begin(), shape.end()));
      for (float& v : t.data) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<float>(static_cast<double>(state >> 40) / (1 << 23) - 1.0);
      }
      line += " --input=" + std::string((*exe)->input_name(i)) + "=" + shape_text(shape) +
              "=base64:" + server::base64_encode(t.data.data(), t.data.size() * sizeof(float));
      inputs.push_back(std::move(t));
    }
    if (!c.send(line + " tensors")) return fail("cannot send request " + std::to_string(k));
    std::string reply;
    if (!c.read_line(&reply)) return fail("no reply to request " + std::to_string(k));
    if (reply.rfind("ok #" + std::to_string(k) + " ", 0) != 0)
      return fail("request " + std::to_string(k) + ": " + reply.substr(0, 300));
    auto local = (*exe)->run(runtime::views_of(inputs));
    if (!local) return fail(local.error().to_string());
    std::map<std::string, std::string> fields;
    std::istringstream words(reply);
    for (std::string w; words >> w;)
      if (size_t eq = w.find('='); eq != std::string::npos)
        fields[w.substr(0, eq)] = w.substr(eq + 1);
    if (fields["outputs"] != std::to_string(local->outputs.size()))
      return fail("request " + std::to_string(k) + ": outputs=" + fields["outputs"]);
    for (size_t i = 0; i < local->outputs.size(); ++i) {
      const runtime::Tensor& want = local->outputs[i];
      std::string tensor = fields["tensor" + std::to_string(i)];
      size_t at = tensor.find("=base64:");
      if (at == std::string::npos || tensor.substr(0, at) != shape_text(want.shape))
        return fail("request " + std::to_string(k) + ": output " + std::to_string(i) + " is not " +
                    shape_text(want.shape));
      auto bytes = server::base64_decode(std::string_view(tensor).substr(at + 8));
      if (!bytes || bytes->size() != want.data.size() * sizeof(float) ||
          std::memcmp(bytes->data(), want.data.data(), bytes->size()) != 0)
        return fail("request " + std::to_string(k) + ": output " + std::to_string(i) +
                    " differs from the in-process run");
    }
    std::printf("request %d: %zu outputs identical to the in-process run\n", k,
                local->outputs.size());
  }
  if (quit) {
    std::string reply;
    if (!c.send("quit") || !c.read_line(&reply) || reply != "bye #" + std::to_string(requests))
      return fail("quit: " + reply);
    std::printf("quit: %s\n", reply.c_str());
  }
  ::close(c.fd);
  return 0;
}
