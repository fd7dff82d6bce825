// Loading the server's plans: read the cache into memory, verify, bind on every worker, warm up.
#include "plans.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace meshplan::server {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Result<std::shared_ptr<Plans>> load_plans(const LoadOptions& o) {
  auto t0 = Clock::now();
  runtime::PlanCache cache = MESHPLAN_TRY(runtime::PlanCache::open(
      o.path, runtime::PlanCacheOptions{.verify = o.verify, .private_copy = true}));
  auto plans = std::make_shared<Plans>(std::move(cache));
  auto t_open = Clock::now();
  const runtime::PlanCache& c = plans->cache;
  plans->entries = c.size();
  std::vector<runtime::PlanRef> verified;
  std::vector<std::string> names;  // the cache entry names, parallel to verified
  for (size_t i = 0; i < c.size(); ++i) {
    auto plan = c.load(i);
    if (plan) {
      verified.push_back(*plan);
      names.emplace_back(c.entry(i).name);
    } else if (o.strict) {
      return fail(plan.error().code, o.path, ": entry ", i, " ('", c.entry(i).name,
                  "') fails verification: ", plan.error().message);
    } else {  // Skipped (clients asking for it hear why); the others are served.
      plans->damaged.emplace(std::string(c.entry(i).name), plan.error().message);
    }
  }
  auto t_verify = Clock::now();
  for (int t = 0; t < o.threads; ++t)
    plans->workers.push_back(MESHPLAN_TRY(Worker::create(verified, o.chips, o.core_threads,
                                                         t ? nullptr : &plans->unbound, &names,
                                                         o.backends, o.mesh_only)));
  plans->names = std::move(names);
  std::sort(plans->names.begin(), plans->names.end());
  auto t_bind = Clock::now();
  plans->open_ms = ms_between(t0, t_open);
  plans->verify_ms = ms_between(t_open, t_verify);
  plans->bind_ms = ms_between(t_verify, t_bind);
  return plans;
}

Status warm_up(Plans& plans) {
  auto t0 = Clock::now();
  std::vector<Status> warmed(plans.workers.size());
  std::vector<std::thread> warming;
  for (size_t w = 0; w < plans.workers.size(); ++w)
    warming.emplace_back([&, w] { warmed[w] = plans.workers[w]->warm_up(); });
  for (std::thread& t : warming) t.join();
  plans.warm_up_ms = ms_between(t0, Clock::now());
  for (const Status& st : warmed)
    if (!st) return std::unexpected(with_context(st.error(), plans.cache.path()));
  return {};
}

}  // namespace meshplan::server
