// The C API (meshplan.h) over PlanCache and Executable: handles own C++ objects, errors become
// status codes plus a thread-local message. No exception or C++ type crosses the boundary.
#include "meshplan/runtime/meshplan.h"

#include <memory>
#include <string>
#include <vector>

#include "meshplan/device/backend.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "meshplan/schemas/log.hpp"

using namespace meshplan;

struct mp_cache {
  runtime::PlanCache cache;
};

struct mp_executable {
  // The EmulatedMesh the plan names (1x1 for a single-chip plan) and the plan bound to it.
  std::unique_ptr<device::Mesh> mesh;
  std::unique_ptr<runtime::Executable> exe;
  // NUL-terminated copies of input/output names (plan strings are, but views may not say so).
  std::vector<std::string> input_names, output_names;
};

namespace {

thread_local std::string t_last_error;

/// The C handler behind the C++ sink: the message copied to a NUL-terminated string.
struct CLogHandler {
  mp_log_fn fn;
  void* user;
};
CLogHandler g_log_handler{nullptr, nullptr};

void c_log_sink(LogLevel level, std::string_view message, void* user) {
  const auto* h = static_cast<const CLogHandler*>(user);
  std::string text(message);
  h->fn(static_cast<mp_log_level>(level), text.c_str(), h->user);
}

mp_status to_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return MP_INVALID_ARGUMENT;
    case ErrorCode::not_found:
      return MP_NOT_FOUND;
    case ErrorCode::incompatible:
      return MP_INCOMPATIBLE;
    case ErrorCode::resource_exhausted:
      return MP_RESOURCE_EXHAUSTED;
    case ErrorCode::corrupt:
      return MP_CORRUPT;
    case ErrorCode::io:
      return MP_IO;
    case ErrorCode::unimplemented:
      return MP_UNIMPLEMENTED;
    case ErrorCode::internal:
      return MP_INTERNAL;
  }
  return MP_INTERNAL;
}

mp_status report(const Error& e) {
  t_last_error = e.message;
  return to_status(e.code);
}

mp_status invalid(const std::string& message) {
  return report(Error{ErrorCode::invalid_argument, message});
}

std::string shape_text(const int64_t* shape, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Checks a caller tensor against the plan's shape; `what` names it in errors.
Status check_tensor(const mp_tensor& t, std::span<const int64_t> want, const std::string& what) {
  if (t.dtype != MP_F32)
    return fail(ErrorCode::invalid_argument, what, ": dtype ", static_cast<int>(t.dtype),
                " is not MP_F32");
  if (!t.shape && t.rank) return fail(ErrorCode::invalid_argument, what, ": shape is NULL");
  bool same = t.rank == want.size();
  for (size_t d = 0; same && d < want.size(); ++d) same = t.shape[d] == want[d];
  if (!same)
    return fail(ErrorCode::invalid_argument, what, ": shape ", shape_text(t.shape, t.rank),
                " does not match the plan's ", shape_text(want.data(), want.size()));
  int64_t volume = 1;
  for (int64_t d : want) volume *= d;
  if (t.size_bytes != static_cast<size_t>(volume) * sizeof(float))
    return fail(ErrorCode::invalid_argument, what, ": ", t.size_bytes, " bytes for shape ",
                shape_text(want.data(), want.size()), ", need ", volume * 4);
  if (!t.data && volume) return fail(ErrorCode::invalid_argument, what, ": data is NULL");
  return {};
}

}  // namespace

extern "C" {

const char* mp_status_name(mp_status status) {
  switch (status) {
    case MP_OK:
      return "ok";
    case MP_INVALID_ARGUMENT:
      return "invalid_argument";
    case MP_NOT_FOUND:
      return "not_found";
    case MP_INCOMPATIBLE:
      return "incompatible";
    case MP_RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case MP_CORRUPT:
      return "corrupt";
    case MP_IO:
      return "io";
    case MP_UNIMPLEMENTED:
      return "unimplemented";
    case MP_INTERNAL:
      return "internal";
  }
  return "unknown";
}

void mp_set_log_handler(mp_log_fn fn, void* user, mp_log_level min_level) {
  // Silence first, so no message reaches the handler while it is replaced.
  set_log_sink(nullptr, nullptr, LogLevel::off);
  if (!fn || min_level < MP_LOG_DEBUG || min_level >= MP_LOG_OFF) return;
  g_log_handler = CLogHandler{fn, user};
  set_log_sink(&c_log_sink, &g_log_handler, static_cast<LogLevel>(min_level));
}

const char* mp_last_error(void) {
  return t_last_error.c_str();
}

mp_status mp_cache_open(const char* path, mp_cache** out) {
  if (!path || !out) return invalid("mp_cache_open: path and out must not be NULL");
  *out = nullptr;
  auto cache = runtime::PlanCache::open(path);
  if (!cache) return report(cache.error());
  *out = new (std::nothrow) mp_cache{std::move(*cache)};
  return *out ? MP_OK
              : report(Error{ErrorCode::resource_exhausted, "mp_cache_open: out of host memory"});
}

void mp_cache_close(mp_cache* cache) {
  delete cache;
}

size_t mp_cache_size(const mp_cache* cache) {
  return cache ? cache->cache.size() : 0;
}

const char* mp_cache_entry_name(const mp_cache* cache, size_t i) {
  if (!cache || i >= cache->cache.size()) return nullptr;
  // Index strings are FlatBuffers strings: NUL-terminated in the mapping.
  return cache->cache.entry(i).name.data();
}

mp_status mp_executable_create(const mp_cache* cache, const char* name, mp_executable** out) {
  if (!cache || !name || !out)
    return invalid("mp_executable_create: cache, name and out must not be NULL");
  *out = nullptr;
  auto plan = cache->cache.find(std::string_view(name));
  if (!plan) return report(plan.error());
  const fb::DeviceInfo* want = plan->plan().header()->device();
  auto chip = device::builtin_chip(want->name() ? want->name()->string_view() : "");
  if (!chip) return report(chip.error());
  // Mesh plans run on the emulated mesh their header names, single-chip plans on a 1x1 mesh of
  // their chip; both with host (full) tensors. The mesh is opened through the backend registry,
  // where the C API registers the emulator itself.
  bool mesh_plan = runtime::is_mesh_plan(*plan);
  if (Status s = device::register_emulator_backend(); !s) return report(s.error());
  auto mesh = runtime::open_plan_mesh(*plan, *chip, device::kEmulatorBackend);
  if (!mesh) return report(mesh.error());
  auto exe = runtime::Executable::bind(*plan, **mesh);
  if (!exe) return report(exe.error());
  if (!mesh_plan)
    log(LogLevel::debug, "bound plan '", name, "' (key ", plan->key().hex(), ") to an emulated ",
        chip->name);
  auto handle = std::make_unique<mp_executable>();
  handle->mesh = std::move(*mesh);
  handle->exe = std::move(*exe);
  for (size_t i = 0; i < handle->exe->input_count(); ++i)
    handle->input_names.emplace_back(handle->exe->input_name(i));
  for (size_t i = 0; i < handle->exe->output_count(); ++i)
    handle->output_names.emplace_back(handle->exe->output_name(i));
  *out = handle.release();
  return MP_OK;
}

void mp_executable_destroy(mp_executable* exe) {
  delete exe;
}

size_t mp_executable_input_count(const mp_executable* exe) {
  return exe ? exe->input_names.size() : 0;
}
size_t mp_executable_output_count(const mp_executable* exe) {
  return exe ? exe->output_names.size() : 0;
}

const char* mp_executable_input_name(const mp_executable* exe, size_t i) {
  return exe && i < exe->input_names.size() ? exe->input_names[i].c_str() : nullptr;
}
const char* mp_executable_output_name(const mp_executable* exe, size_t i) {
  return exe && i < exe->output_names.size() ? exe->output_names[i].c_str() : nullptr;
}

const int64_t* mp_executable_input_shape(const mp_executable* exe, size_t i, size_t* rank) {
  if (rank) *rank = 0;
  if (!exe || i >= exe->input_names.size()) return nullptr;
  auto s = exe->exe->input_shape(i);
  if (rank) *rank = s.size();
  return s.data();
}

const int64_t* mp_executable_output_shape(const mp_executable* exe, size_t i, size_t* rank) {
  if (rank) *rank = 0;
  if (!exe || i >= exe->output_names.size()) return nullptr;
  auto s = exe->exe->output_shape(i);
  if (rank) *rank = s.size();
  return s.data();
}

mp_status mp_executable_run(mp_executable* exe, const mp_tensor* inputs, size_t input_count,
                            mp_tensor* outputs, size_t output_count, uint64_t* device_ns) {
  if (!exe) return invalid("mp_executable_run: exe is NULL");
  if ((input_count && !inputs) || (output_count && !outputs))
    return invalid("mp_executable_run: tensor array is NULL");
  runtime::Executable* e = exe->exe.get();
  std::string plan(e->plan().name());
  size_t n_in = e->input_count();
  size_t n_out = e->output_count();
  auto input_shape = [&](size_t i) { return e->input_shape(i); };
  auto output_shape = [&](size_t i) { return e->output_shape(i); };
  if (input_count != n_in)
    return invalid(str("plan '", plan, "' takes ", n_in, " inputs, got ", input_count));
  if (output_count != n_out)
    return invalid(str("plan '", plan, "' has ", n_out, " outputs, got room for ", output_count));
  bool by_name = input_count > 0;
  for (size_t i = 0; i < input_count; ++i) by_name = by_name && inputs[i].name != nullptr;
  std::vector<runtime::TensorView> views(input_count);
  std::vector<bool> bound(input_count, false);
  for (size_t k = 0; k < input_count; ++k) {
    size_t i = k;
    if (by_name) {
      auto at = e->input_index(inputs[k].name);
      // An unknown name is a bad argument of this call (meshplan.h), not a missing plan.
      if (!at) return invalid(at.error().message);
      i = *at;
      if (bound[i])
        return invalid(str("plan '", plan, "': input '", inputs[k].name, "' is given twice"));
    }
    bound[i] = true;
    std::string what = str("plan '", plan, "': input ", i, " '", exe->input_names[i], "'");
    if (auto ok = check_tensor(inputs[k], input_shape(i), what); !ok) return report(ok.error());
    views[i] = runtime::TensorView{input_shape(i),
                                   std::span<const float>(static_cast<const float*>(inputs[k].data),
                                                          inputs[k].size_bytes / 4)};
  }
  for (size_t o = 0; o < output_count; ++o) {
    std::string what = str("plan '", plan, "': output ", o, " '", exe->output_names[o], "'");
    if (auto ok = check_tensor(outputs[o], output_shape(o), what); !ok) return report(ok.error());
  }
  auto result = e->run(views);
  if (!result) return report(result.error());
  for (size_t o = 0; o < output_count; ++o)
    std::copy(result->outputs[o].data.begin(), result->outputs[o].data.end(),
              static_cast<float*>(outputs[o].data));
  if (device_ns) *device_ns = result->device_ns;
  return MP_OK;
}

}  // extern "C"
