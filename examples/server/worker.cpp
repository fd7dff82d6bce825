// The server's worker: parses a run request, runs the bound plan, summarises the outputs.
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "base64.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "protocol.hpp"
#include "tensor_io.hpp"

namespace meshplan::server {

namespace {

std::string shape_text(std::span<const int64_t> shape) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? "x" : "") + std::to_string(shape[d]);
  return s;
}

/// The SHAPE of "SHAPExf32=VALUES", checked against the plan's input before any value is read,
/// so a request cannot make the server allocate more than the plan's own inputs.
Status check_input_shape(std::string_view text, size_t i, const Served& exe) {
  size_t eq = text.find('=');
  std::string_view spec = text.substr(0, eq);
  std::span<const int64_t> shape = exe.input_shape(i);
  std::string want = shape.empty() ? "f32" : shape_text(shape) + "xf32";
  if (spec != want)
    return fail(ErrorCode::invalid_argument, "input ", i, " ('", exe.input_name(i), "'): shape [",
                spec.substr(0, spec.rfind('x')), "] does not match the plan's [", shape_text(shape),
                "] (expected --input=", want, "=VALUES)");
  if (eq == std::string_view::npos)
    return fail(ErrorCode::invalid_argument, "input ", i, " ('", exe.input_name(i),
                "'): no values given, ", device::volume(shape), " expected for shape [",
                shape_text(shape), "] (--input=", want, "=VALUES, one value to fill it, or ", want,
                "=base64:DATA)");
  return {};
}

/// Client text echoed in an error: at most 80 bytes, non-printable bytes shown as '?'.
std::string echo(std::string_view text) {
  std::string out(text.substr(0, 80));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return text.size() > 80 ? out + "..." : out;
}

/// The --input values of a request in plan input order: all positional or all named
/// (INPUT=SHAPExf32=...), each plan input exactly once.
Result<std::vector<std::string>> inputs_in_order(std::string_view plan,
                                                 const std::vector<std::string>& given,
                                                 const Served& exe) {
  size_t n = exe.input_count(), named = 0;
  std::vector<std::pair<std::string, std::string>> split;
  for (const std::string& text : given) {
    split.push_back(tools::split_input_name(text));
    named += !split.back().first.empty();
  }
  if (named == 0) {
    if (given.size() != n)
      return fail(ErrorCode::invalid_argument, "plan '", plan, "' takes ", n, " inputs, ",
                  given.size(), " --input given");
    return given;
  }
  if (named != given.size())
    return fail(ErrorCode::invalid_argument, "plan '", plan,
                "': give every --input by name (INPUT=SHAPExf32=...) or none");
  std::vector<std::string> values(n);
  std::vector<bool> seen(n, false);
  for (auto& [input, value] : split) {
    size_t i = 0;
    while (i < n && exe.input_name(i) != input) ++i;
    if (i == n)
      return fail(ErrorCode::invalid_argument, "plan '", plan, "' has no input named '",
                  echo(input), "'");
    if (seen[i])
      return fail(ErrorCode::invalid_argument, "input '", echo(input), "' is given twice");
    seen[i] = true;
    values[i] = std::move(value);
  }
  for (size_t i = 0; i < n; ++i)
    if (!seen[i])
      return fail(ErrorCode::invalid_argument, "plan '", plan, "': no --input for input '",
                  exe.input_name(i), "'");
  return values;
}

/// "SHAPExf32=base64:DATA" (the shape already checked against input i) or IREE text.
Result<runtime::Tensor> parse_value(const std::string& text, size_t i, const Served& exe) {
  static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");
  size_t eq = text.find('=');
  std::string_view data = std::string_view(text).substr(eq + 1);
  if (!data.starts_with("base64:")) {
    auto t = tools::parse_input(text);
    if (!t)
      return fail(ErrorCode::invalid_argument, "input ", i, " ('", exe.input_name(i),
                  "'): ", t.error().message);
    return t;
  }
  std::span<const int64_t> shape = exe.input_shape(i);
  runtime::Tensor t(std::vector<int64_t>(shape.begin(), shape.end()));
  size_t want = t.data.size() * sizeof(float);
  // Checked before decoding: the line limit bounds the text, the plan's shape the tensor.
  data.remove_prefix(7);
  if (data.size() != (want + 2) / 3 * 4)
    return fail(ErrorCode::invalid_argument, "input ", i, " ('", exe.input_name(i),
                "'): ", data.size(), " base64 characters, expected ", (want + 2) / 3 * 4, " for ",
                want, " bytes of f32");
  auto bytes = base64_decode(data);
  if (!bytes)
    return fail(ErrorCode::invalid_argument, "input ", i, " ('", exe.input_name(i),
                "'): the data after base64: is not base64");
  std::memcpy(t.data.data(), bytes->data(), want);
  return t;
}

/// A name as one protocol field: space, '%' and '=' percent-encoded.
std::string field_text(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ' ')
      out += "%20";
    else if (c == '%')
      out += "%25";
    else if (c == '=')
      out += "%3D";
    else
      out += c;
  }
  return out;
}

/// The index of mesh plan `name` among the bound mesh plans (Worker::mesh_plan_names()).
size_t mesh_index(const std::map<std::string, Served, std::less<>>& bound, std::string_view name) {
  size_t k = 0;
  for (const auto& [n, exe] : bound) {
    if (n == name) break;
    k += exe.on_mesh;
  }
  return k;
}

/// The values host input `i` of a mesh plan holds: one piece per chip for a pre-sharded
/// (identity) input, else its shape's volume.
size_t input_values(const runtime::Executable& exe, size_t i) {
  size_t n = static_cast<size_t>(device::volume(exe.input_shape(i)));
  const runtime::PlanRef& p = exe.plan();
  if (runtime::boundary_shard(p, i, false).type == device::MeshShardType::identity)
    n *= static_cast<size_t>(runtime::mesh_rows(p) * runtime::mesh_cols(p));
  return n;
}

/// Inputs of a mesh plan's shapes over untouched zero pages (no memory until written, and they
/// are only read by MpiMesh on rank 0): what a rank other than 0 passes to a run.
struct ZeroInputs {
  explicit ZeroInputs(const runtime::Executable& exe) {
    size_t total = 0;
    for (size_t i = 0; i < exe.input_count(); ++i) total += input_values(exe, i);
    bytes = std::max<size_t>(total * sizeof(float), 1);
    void* at = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base = at == MAP_FAILED ? nullptr : at;
    const float* p = static_cast<const float*>(base);
    for (size_t i = 0; i < exe.input_count(); ++i) {
      size_t n = input_values(exe, i);
      views.push_back(
          {exe.input_shape(i), std::span<const float>(base ? p : nullptr, base ? n : 0)});
      if (base) p += n;
    }
  }
  ~ZeroInputs() {
    if (base) munmap(base, bytes);
  }
  ZeroInputs(const ZeroInputs&) = delete;
  ZeroInputs& operator=(const ZeroInputs&) = delete;
  std::vector<runtime::TensorView> views;
  void* base = nullptr;
  size_t bytes = 0;
};

}  // namespace

Result<std::unique_ptr<Worker>> Worker::create(
    const std::vector<runtime::PlanRef>& plans,
    const std::map<std::string, device::ChipDesc, std::less<>>& chips, unsigned core_threads,
    std::vector<std::string>* skipped, const std::vector<std::string>* names,
    const Backends& backends, bool mesh_only) {
  auto w = std::unique_ptr<Worker>(new Worker());
  for (size_t i = 0; i < plans.size(); ++i) {
    const runtime::PlanRef& plan = plans[i];
    std::string name = names && i < names->size() ? (*names)[i] : std::string(plan.name());
    const fb::DeviceInfo* d = plan.plan().header()->device();
    std::string chip_name = d->name() ? d->name()->str() : "";
    auto chip = chips.find(chip_name);
    std::string why;
    if (chip == chips.end()) {
      why = str("plan '", name, "' targets device '", chip_name,
                "', neither built in nor given with --device FILE.json");
    } else if (runtime::is_mesh_plan(plan)) {
      // Mesh plans: a mesh of the plan's descriptor (shape, topology, links), shared by the plans
      // made for that same descriptor (a ring and a linear t3k are two meshes).
      auto desc = runtime::plan_mesh_desc(plan, chip->second);
      if (!desc) {
        why = desc.error().message;
      } else {
        auto& mesh = w->meshes_[desc->hash().hex()];
        if (!mesh) mesh = MESHPLAN_TRY(device::open_backend(backends.meshes, *desc));
        auto exe = runtime::Executable::bind(plan, *mesh);
        if (exe)
          w->bound_[name] = Served{std::move(*exe), true};
        else
          why = exe.error().message;
      }
    } else if (mesh_only) {
      continue;
    } else {
      auto& mesh = w->chips_[chip_name];
      if (!mesh)
        mesh = MESHPLAN_TRY(device::open_backend(backends.chips,
                                                 device::single_chip_mesh(chip->second),
                                                 device::BackendOptions{core_threads}));
      auto exe = runtime::Executable::bind(plan, *mesh);
      if (exe)
        w->bound_[name] = Served{std::move(*exe), false};
      else
        why = exe.error().message;
    }
    if (!why.empty()) {
      w->unbound_[name] = why;
      if (skipped) skipped->push_back(why);
    }
  }
  return w;
}

Result<std::string> Worker::run(const std::string& line) {
  std::istringstream in(line);
  std::string verb, name;
  in >> verb >> name;
  if (verb != "run" || name.empty())
    return fail(ErrorCode::invalid_argument, "expected 'run NAME [random SEED] [--input=...]', ",
                "'list' or 'quit', got '", echo(line), "'");
  auto it = bound_.find(name);
  if (it == bound_.end()) {
    if (auto u = unbound_.find(name); u != unbound_.end())
      return fail(ErrorCode::incompatible, "plan '", name, "' is not served: ", u->second);
    std::string names;
    for (const auto& [n, exe] : bound_) names += (names.empty() ? "" : ", ") + n;
    return fail(ErrorCode::not_found, "no plan named '", echo(name), "' (serving: ", names, ")");
  }
  Served& exe = it->second;
  uint64_t seed = 1;
  bool check = false, seeded = false, tensors = false;
  std::vector<std::string> given;
  for (std::string word; in >> word;) {
    if (word.rfind("--input=", 0) == 0) {
      std::string text = word.substr(8);
      if (text.find('@') != std::string::npos)
        return fail(ErrorCode::invalid_argument, "file inputs ('", echo(text),
                    "') are not accepted over the protocol; send SHAPExf32=VALUES");
      given.push_back(text);
    } else if (word == "check") {
      check = true;
    } else if (word == "tensors") {
      tensors = true;
    } else if ((word == "random" && in >> word) ||
               (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])))) {
      char* end = nullptr;
      errno = 0;
      seed = std::strtoull(word.c_str(), &end, 10);
      if (word.empty() || *end || errno == ERANGE || word[0] == '-')
        return fail(ErrorCode::invalid_argument, "seed '", echo(word), "' is not a 64-bit number");
      seeded = true;
    } else {
      return fail(ErrorCode::invalid_argument, "unexpected '", echo(word), "' in run ", name);
    }
  }
  if (seeded && !given.empty())
    return fail(ErrorCode::invalid_argument, "give a seed or --input values, not both");
  std::vector<runtime::Tensor> inputs;
  if (given.empty()) {
    inputs = runtime::random_inputs(exe.plan(), seed);
  } else {
    std::vector<std::string> values = MESHPLAN_TRY(inputs_in_order(name, given, exe));
    for (size_t i = 0; i < values.size(); ++i) {
      MESHPLAN_TRY(check_input_shape(values[i], i, exe));
      inputs.push_back(MESHPLAN_TRY(parse_value(values[i], i, exe)));
    }
  }
  auto views = runtime::views_of(inputs);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<runtime::Tensor> outputs;
  uint64_t device_ns = 0;
  if (exe.on_mesh && hooks_.announce) hooks_.announce(mesh_index(bound_, name));
  runtime::RunResult r =
      MESHPLAN_TRY(exe.on_mesh ? run_mesh(*exe.exe, views) : exe.exe->run(views));
  outputs = std::move(r.outputs);
  device_ns = r.device_ns;  // On a mesh: the slowest chip's clock.
  double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  char buf[256];
  std::snprintf(buf, sizeof buf, " device_us=%.3f host_us=%.1f outputs=%zu", device_ns / 1000.0,
                host_us, outputs.size());
  std::string out = name + buf;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const runtime::Tensor& t = outputs[i];
    // A NaN anywhere makes the sum and the largest |value| NaN (std::max would skip it).
    double sum = 0, absmax = 0;
    bool nan = false;
    for (float v : t.data) {
      sum += v;
      nan = nan || std::isnan(v);
      absmax = std::max(absmax, static_cast<double>(std::fabs(v)));
    }
    if (nan) absmax = std::nan("");
    Hash128 digest = xxh3_128(t.data.data(), t.data.size() * sizeof(float));
    std::snprintf(buf, sizeof buf, " out%zu=%s sum%zu=%.9g absmax%zu=%.9g xxh%zu=%s", i,
                  shape_text(t.shape).c_str(), i, sum, i, absmax, i, digest.hex().c_str());
    out += buf;
  }
  if (check) {
    auto reference = MESHPLAN_TRY(runtime::run_reference(exe.plan(), views));
    runtime::CheckReport c = runtime::check_outputs(outputs, reference, runtime::kDefaultTolerance);
    std::snprintf(buf, sizeof buf, " rel_err=%.6g", c.relative_error);
    out += buf;
  }
  if (tensors) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const runtime::Tensor& t = outputs[i];
      out += str(" name", i, "=", field_text(exe.output_name(i)), " tensor", i, "=",
                 shape_text(t.shape), t.shape.empty() ? "" : "x",
                 "f32=base64:", base64_encode(t.data.data(), t.data.size() * sizeof(float)));
    }
  }
  return out;
}

Result<runtime::RunResult> Worker::run_mesh(runtime::Executable& exe,
                                            std::span<const runtime::TensorView> inputs) {
  auto r = exe.run(inputs);
  if (hooks_.finished) hooks_.finished(r.has_value());
  return r;
}

std::vector<std::string> Worker::mesh_plan_names() const {
  std::vector<std::string> out;
  for (const auto& [name, exe] : bound_)
    if (exe.on_mesh) out.push_back(name);
  return out;
}

Hash128 Worker::mesh_plans_digest() const {
  std::string text;
  for (const auto& [name, exe] : bound_)
    if (exe.on_mesh) text += str(name, '\n', exe.plan().key().hex(), '\n');
  return xxh3_128(text.data(), text.size());
}

Status Worker::follow(size_t index) {
  auto it = bound_.begin();
  for (size_t k = 0; it != bound_.end(); ++it)
    if (it->second.on_mesh && k++ == index) break;
  if (it == bound_.end())
    return fail(ErrorCode::invalid_argument, "mesh plan ", index, " is not served on this rank");
  runtime::Executable& exe = *it->second.exe;
  ZeroInputs zeros(exe);
  MESHPLAN_TRY(run_mesh(exe, zeros.views));
  return {};
}

Status Worker::warm_up(bool mesh_only) {
  for (auto& [name, exe] : bound_) {
    if (mesh_only && !exe.on_mesh) continue;
    std::vector<runtime::Tensor> inputs;
    if (!exe.on_mesh || !mesh_only) inputs = runtime::random_inputs(exe.plan(), 1);
    std::optional<ZeroInputs> zeros;
    if (mesh_only) zeros.emplace(*exe.exe);
    auto views = mesh_only ? zeros->views : runtime::views_of(inputs);
    auto r = exe.on_mesh ? run_mesh(*exe.exe, views) : exe.exe->run(views);
    if (!r) return std::unexpected(with_context(r.error(), str("warming up plan '", name, "'")));
  }
  return {};
}

}  // namespace meshplan::server
