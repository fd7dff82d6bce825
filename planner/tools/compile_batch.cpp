// Parallel planning of several models with a progress display and one cache write.
#include "compile_batch.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "meshplan/runtime/cache_edit.hpp"

namespace meshplan::tools {

namespace {

/// Progress on stderr: a bar redrawn in place on a terminal, plain lines otherwise (logs, CI).
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(::isatty(STDERR_FILENO) == 1) {}

  void finished(const std::string& model, const PlanResult& r) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    if (tty_) {
      // Clear the bar, print the line for this model, redraw the bar under it.
      std::fprintf(stderr, "\r\033[K");
      line(model, r);
      constexpr size_t kWidth = 30;
      size_t filled = done_ * kWidth / total_;
      std::fprintf(stderr, "[%s%s] %zu/%zu", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), done_, total_);
      if (done_ == total_) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "[%zu/%zu] ", done_, total_);
      line(model, r);
    }
    std::fflush(stderr);
  }

 private:
  void line(const std::string& model, const PlanResult& r) {
    if (r)
      std::fprintf(stderr, "meshplan-compile: %s -> '%s' (%s) in %.2f ms\n", model.c_str(),
                   r->entry.name.c_str(), r->summary.c_str(), r->planning_ms);
    else
      std::fprintf(stderr, "meshplan-compile: %s: error: %s\n", model.c_str(),
                   r.error().to_string().c_str());
  }

  std::mutex mu_;
  size_t total_, done_ = 0;
  bool tty_;
};

}  // namespace

std::string name_from_path(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = file.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? file : file.substr(0, dot);
}

Status compile_batch(const std::vector<std::string>& models, const BatchOptions& options,
                     const std::function<PlanResult(const std::string& model)>& plan) {
  std::map<std::string, std::string> names;  // entry name -> model
  for (const std::string& m : models) {
    auto [it, fresh] = names.emplace(name_from_path(m), m);
    if (!fresh)
      return fail(ErrorCode::invalid_argument, "models '", it->second, "' and '", m,
                  "' would both be named '", it->first,
                  "' in the cache; compile them separately "
                  "with --name");
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::optional<PlanResult>> results(models.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  Progress progress(models.size());
  auto work = [&] {
    for (size_t i; !stop.load() && (i = next.fetch_add(1)) < models.size();) {
      PlanResult r = plan(models[i]);
      if (!r) {
        r = std::unexpected(with_context(r.error(), "model '" + models[i] + "'"));
        if (options.fail_fast) stop = true;
      }
      progress.finished(models[i], r);
      results[i] = std::move(r);
    }
  };
  size_t threads = std::min<size_t>(std::max<uint32_t>(options.jobs, 1), models.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::vector<runtime::CacheEntryData> entries;
  std::string failures;
  size_t failed = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    if (!results[i]) continue;  // not started (fail-fast)
    if (*results[i]) {
      entries.push_back(std::move((*results[i])->entry));
    } else {
      ++failed;
      failures += (failures.empty() ? "" : "; ") + results[i]->error().message;
    }
  }
  if (failed && options.fail_fast)
    return fail(ErrorCode::invalid_argument, failed, " of ", models.size(),
                " models failed (--fail-fast: nothing written to '", options.cache,
                "'): ", failures);
  size_t written = entries.size();
  if (!entries.empty()) {
    runtime::CacheEditReport report =
        MESHPLAN_TRY(runtime::add_all_to_cache(options.cache, std::move(entries)));
    for (const auto& d : report.dropped)
      std::fprintf(stderr, "meshplan-compile: '%s' not written: %s\n", d.name.c_str(),
                   d.reason.c_str());
    written -= report.dropped.size();
  }
  std::fprintf(stderr,
               "meshplan-compile: %zu of %zu models planned in %.1f ms with %zu threads; %zu "
               "written to %s\n",
               models.size() - failed, models.size(), ms, threads, written, options.cache.c_str());
  if (failed)
    return fail(ErrorCode::invalid_argument, failed, " of ", models.size(),
                " models failed (the other plans were written): ", failures);
  return {};
}

}  // namespace meshplan::tools
