// meshplan-server: a small inference server that embeds the runtime (never the planner). At
// start-up it maps a plan cache and verifies every plan, then serves line requests from stdin
// with a pool of worker threads, each owning an emulated chip and its bound executables.
//
//   meshplan-server CACHE.mpc [--threads N]
//
// Requests, one per line:   run NAME [SEED] [--input=SHAPExf32=VALUES]...  |  list  |  quit
// Responses (one line each, in completion order, tagged with the request number):
//   ok #ID NAME device_us=T host_us=H out=SHAPE sum=S        |  error #ID MESSAGE
#include <mimalloc-new-delete.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "tensor_io.hpp"

using namespace meshplan;
using Clock = std::chrono::steady_clock;

namespace {

struct Request {
  size_t id;
  std::string line;
};

/// A worker: one emulated chip, executables bound to it on first use of each plan.
class Worker {
 public:
  explicit Worker(const runtime::PlanCache& cache) : cache_(cache) {}

  Result<std::string> handle(const std::string& line) {
    std::istringstream in(line);
    std::string verb, name;
    in >> verb >> name;
    if (verb != "run" || name.empty())
      return fail(ErrorCode::invalid_argument, "expected 'run NAME [SEED] [--input=...]', got '",
                  line, "'");
    uint64_t seed = 1;
    std::vector<runtime::Tensor> given;
    for (std::string word; in >> word;) {
      if (word.rfind("--input=", 0) == 0)
        given.push_back(MESHPLAN_TRY(tools::parse_input(word.substr(8))));
      else if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])))
        seed = std::stoull(word);
      else
        return fail(ErrorCode::invalid_argument, "unexpected '", word, "'");
    }
    runtime::Executable& exe = *MESHPLAN_TRY(executable(name));
    std::vector<runtime::Tensor> inputs =
        given.empty() ? runtime::random_inputs(exe.plan(), seed) : std::move(given);
    auto t0 = Clock::now();
    runtime::RunResult r = MESHPLAN_TRY(exe.run(runtime::views_of(inputs)));
    double host_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    const runtime::Tensor& out = r.outputs.at(0);
    double sum = 0;
    for (float v : out.data) sum += v;
    std::string shape;
    for (size_t d = 0; d < out.shape.size(); ++d)
      shape += (d ? "x" : "") + std::to_string(out.shape[d]);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s device_us=%.3f host_us=%.1f out=%s sum=%.6g", name.c_str(),
                  r.device_ns / 1000.0, host_us, shape.c_str(), sum);
    return std::string(buf);
  }

 private:
  Result<runtime::Executable*> executable(const std::string& name) {
    if (auto it = bound_.find(name); it != bound_.end()) return it->second.get();
    runtime::PlanRef plan = MESHPLAN_TRY(cache_.find(name));
    const fb::DeviceInfo* d = plan.plan().header()->device();
    if (!device_) {
      device::ChipDesc chip =
          MESHPLAN_TRY(device::builtin_chip(d->name() ? d->name()->string_view() : ""));
      device_ = MESHPLAN_TRY(device::EmulatedDevice::create(chip));
    }
    auto exe = MESHPLAN_TRY(runtime::Executable::bind(plan, *device_));
    return (bound_[name] = std::move(exe)).get();
  }

  const runtime::PlanCache& cache_;
  std::unique_ptr<device::EmulatedDevice> device_;
  std::map<std::string, std::unique_ptr<runtime::Executable>> bound_;
};

int serve(const std::string& path, int threads) {
  // Start-up: map the cache and verify every plan, so requests never pay for it.
  auto t0 = Clock::now();
  auto cache = runtime::PlanCache::open(path);
  if (!cache) {
    std::fprintf(stderr, "meshplan-server: error: %s\n", cache.error().to_string().c_str());
    return 1;
  }
  size_t good = 0;
  for (size_t i = 0; i < cache->size(); ++i) {
    auto plan = cache->load(i);
    if (plan)
      ++good;
    else  // A damaged entry is skipped; the others are served.
      std::fprintf(stderr, "meshplan-server: skipping entry %zu: %s\n", i,
                   plan.error().to_string().c_str());
  }
  double startup_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("ready: %zu of %zu plans from %s verified in %.3f ms, %d worker threads\n", good,
              cache->size(), path.c_str(), startup_ms, threads);
  std::fflush(stdout);

  std::mutex mu, out_mu;
  std::condition_variable cv;
  std::deque<Request> queue;
  bool closing = false;
  size_t served = 0, failed = 0;
  auto respond = [&](const std::string& text, bool ok) {
    std::lock_guard<std::mutex> lock(out_mu);
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    ok ? ++served : ++failed;
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      Worker worker(*cache);
      while (true) {
        Request req;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return closing || !queue.empty(); });
          if (queue.empty()) return;
          req = std::move(queue.front());
          queue.pop_front();
        }
        auto r = worker.handle(req.line);
        if (r)
          respond("ok #" + std::to_string(req.id) + " " + *r, true);
        else
          respond("error #" + std::to_string(req.id) + " " + r.error().to_string(), false);
      }
    });
  size_t next_id = 0;
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty()) continue;
    if (line == "quit") break;
    if (line == "list") {
      std::lock_guard<std::mutex> lock(out_mu);
      for (size_t i = 0; i < cache->size(); ++i)
        std::printf("plan %.*s\n", static_cast<int>(cache->entry(i).name.size()),
                    cache->entry(i).name.data());
      std::fflush(stdout);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(Request{next_id++, line});
    }
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    closing = true;
  }
  cv.notify_all();
  for (auto& t : pool) t.join();
  std::printf("done: %zu served, %zu failed\n", served, failed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int threads = 4;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (a.rfind("--threads=", 0) == 0)
      threads = std::atoi(a.c_str() + 10);
    else if (path.empty() && a[0] != '-')
      path = a;
    else {
      std::fprintf(stderr, "usage: meshplan-server CACHE.mpc [--threads N]\n");
      return 1;
    }
  }
  if (path.empty() || threads < 1 || threads > 256) {
    std::fprintf(stderr, "usage: meshplan-server CACHE.mpc [--threads N]   (1 <= N <= 256)\n");
    return 1;
  }
  return serve(path, threads);
}
