// meshplan's Python module (_meshplan): compile models, open plan caches, bind plans to a
// backend's chips or meshes (the emulator, registered at import) and run them with NumPy arrays.
// Errors raise meshplan.Error with meshplan's message; runs release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compile.hpp"
#include "meshplan/device/backend.hpp"
#include "meshplan/device/descriptor_json.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"

namespace py = pybind11;
using namespace meshplan;

namespace {

/// meshplan.Error(code, message): `code` is meshplan's error code name ("not_found", ...).
struct PyError {
  Error error;
};

template <class T>
T value_or_raise(Result<T> r) {
  if (!r) throw PyError{std::move(r).error()};
  return std::move(*r);
}

/// Where a plan's bytes live: its own buffer (compiled) or a cache kept open by the plan.
struct Plan {
  std::shared_ptr<const std::vector<uint8_t>> owned;
  std::shared_ptr<const runtime::PlanCache> cache;
  runtime::PlanRef ref;
  std::string name;
};

struct Cache {
  std::shared_ptr<const runtime::PlanCache> cache;
  std::string path;
};

/// A plan bound to a mesh it owns (1x1 for a single-chip plan).
struct Exe {
  Plan plan;
  std::unique_ptr<device::Mesh> mesh;
  std::unique_ptr<runtime::Executable> exe;
  std::atomic<uint64_t> last_device_ns{0};

  size_t input_count() const { return exe->input_count(); }
  size_t output_count() const { return exe->output_count(); }
  std::string input_name(size_t i) const { return std::string(exe->input_name(i)); }
  std::string output_name(size_t i) const {
    std::string n(exe->output_name(i));
    return n.empty() ? "output" + std::to_string(i) : n;
  }
  std::vector<int64_t> input_shape(size_t i) const {
    auto s = exe->input_shape(i);
    return {s.begin(), s.end()};
  }
  std::vector<int64_t> output_shape(size_t i) const {
    auto s = exe->output_shape(i);
    return {s.begin(), s.end()};
  }
};

std::string chip_name(const Plan& p) {
  const fb::DeviceInfo* d = p.ref.plan().header()->device();
  return d && d->name() ? d->name()->str() : "";
}

Result<device::ChipDesc> chip_for(const Plan& p, const std::optional<std::string>& device) {
  if (!device) return device::builtin_chip(chip_name(p));
  if (device->ends_with(".json")) return device::load_chip_file(*device);
  return device::builtin_chip(*device);
}

/// Binds `p` to a new 1x1 mesh of a chip (`device`: a built-in name or a device JSON file; default
/// the chip the plan was made for) or, for mesh plans, to the mesh the plan names; the mesh is
/// opened on the registered backend `backend`.
std::unique_ptr<Exe> bind(const Plan& p, const std::optional<std::string>& device,
                          const std::string& backend) {
  auto out = std::make_unique<Exe>();
  out->plan = p;
  device::ChipDesc chip = value_or_raise(chip_for(p, device));
  out->mesh = value_or_raise(runtime::open_plan_mesh(p.ref, chip, backend));
  out->exe = value_or_raise(runtime::Executable::bind(out->plan.ref, *out->mesh));
  return out;
}

using F32Array = py::array_t<float, py::array::c_style>;
/// Inputs: float32 C-contiguous arrays pass through; anything else is converted (a copy).
using F32Input = py::array_t<float, py::array::c_style | py::array::forcecast>;

/// An owning host tensor handed to NumPy without a copy.
py::array to_numpy(runtime::Tensor&& t) {
  auto* owned = new runtime::Tensor(std::move(t));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<runtime::Tensor*>(p); });
  std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
  return F32Array(shape, owned->data.data(), free_when_done);
}

/// Runs with inputs by name (a dict). float32 C-contiguous arrays are read in place; other
/// numeric arrays (float16, float64, integers) are converted to float32 first.
py::dict run(Exe& e, const py::dict& inputs) {
  std::vector<F32Input> arrays;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  arrays.reserve(inputs.size());
  for (auto [key, value] : inputs) {
    if (!py::isinstance<py::str>(key))
      throw PyError{Error{ErrorCode::invalid_argument, "run: input names must be strings"}};
    names.push_back(key.cast<std::string>());
    F32Input a = F32Input::ensure(value);
    if (!a) {
      PyErr_Clear();
      throw PyError{Error{ErrorCode::invalid_argument,
                          "input '" + names.back() + "': not convertible to a float32 array"}};
    }
    shapes.emplace_back(a.shape(), a.shape() + a.ndim());
    arrays.push_back(std::move(a));
  }
  std::vector<runtime::NamedTensorView> views;
  for (size_t i = 0; i < arrays.size(); ++i)
    views.push_back(
        {names[i], runtime::TensorView{
                       shapes[i], std::span<const float>(arrays[i].data(),
                                                         static_cast<size_t>(arrays[i].size()))}});
  std::vector<runtime::Tensor> outputs;
  Error error;
  bool failed = false;
  {
    py::gil_scoped_release release;
    auto r = e.exe->run(std::span<const runtime::NamedTensorView>(views));
    if (r) {
      outputs = std::move(r->outputs);
      e.last_device_ns = r->device_ns;
    } else {
      error = r.error(), failed = true;
    }
  }
  if (failed) throw PyError{error};
  py::dict out;
  for (size_t i = 0; i < outputs.size(); ++i)
    out[py::str(e.output_name(i))] = to_numpy(std::move(outputs[i]));
  return out;
}

Plan find(const Cache& c, const std::string& name_or_key) {
  Plan p;
  p.cache = c.cache;
  Hash128 key;
  if (name_or_key.size() == 32 && Hash128::parse(name_or_key, &key)) {
    auto by_key = c.cache->find(key);
    if (by_key) p.ref = *by_key;
  }
  if (!p.ref.bytes().data()) p.ref = value_or_raise(c.cache->find(std::string_view(name_or_key)));
  p.name = std::string(p.ref.name());
  return p;
}

py::list io_list(const Exe& e, bool inputs) {
  py::list l;
  size_t n = inputs ? e.input_count() : e.output_count();
  for (size_t i = 0; i < n; ++i)
    l.append(py::make_tuple(inputs ? e.input_name(i) : e.output_name(i),
                            py::tuple(py::cast(inputs ? e.input_shape(i) : e.output_shape(i)))));
  return l;
}

}  // namespace

PYBIND11_MODULE(_meshplan, m) {
  m.doc() = "meshplan: plan tensor programs for emulated Tenstorrent chips and meshes, run them";
  static py::exception<PyError> error_type(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PyError& e) {
      py::object exc = py::handle(error_type.ptr())(e.error.message);
      exc.attr("code") = to_string(e.error.code);
      PyErr_SetObject(error_type.ptr(), exc.ptr());
    }
  });

  // The backends this module links register here, once: Plan.bind opens meshes by name.
  if (Status s = device::register_emulator_backend(); !s)
    throw std::runtime_error(s.error().to_string());

  py::class_<Plan>(m, "Plan", "A verified plan: compiled in this process or found in a cache.")
      .def_property_readonly("name", [](const Plan& p) { return p.name; })
      .def_property_readonly("key", [](const Plan& p) { return p.ref.key().hex(); })
      .def_property_readonly("device", &chip_name)
      .def_property_readonly("policy",
                             [](const Plan& p) {
                               const auto* o = p.ref.plan().header()->options();
                               return o && o->policy() ? o->policy()->str() : std::string();
                             })
      .def_property_readonly("is_mesh", [](const Plan& p) { return runtime::is_mesh_plan(p.ref); })
      .def_property_readonly("estimated_ns",
                             [](const Plan& p) {
                               const auto* mt = p.ref.plan().header()->metrics();
                               return mt ? mt->estimated_ns() : 0;
                             })
      .def(
          "to_bytes",
          [](const Plan& p) {
            auto b = p.ref.bytes();
            return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
          },
          "The plan as a cache stores it.")
      .def(
          "save",
          [](const Plan& p, const std::string& path, std::optional<std::string> name) {
            auto b = p.ref.bytes();
            runtime::CacheEntryData entry{name.value_or(p.name), {b.begin(), b.end()}};
            std::vector<runtime::CacheEntryData> entries;
            entries.push_back(std::move(entry));
            value_or_raise(runtime::add_all_to_cache(path, std::move(entries)));
          },
          py::arg("cache_path"), py::arg("name") = py::none(),
          "Adds the plan to the cache file at cache_path (created if missing), replacing an "
          "entry with the same name; another name of the same plan (same key) stays as an alias.")
      .def("bind", &bind, py::arg("device") = py::none(),
           py::arg("backend") = std::string(device::kEmulatorBackend),
           "Binds the plan to a new device of a backend (default: the emulator): a built-in chip "
           "name or a device JSON file (default: the chip the plan was made for). Mesh plans "
           "bind to the mesh they name.")
      .def("__repr__", [](const Plan& p) {
        return "<meshplan.Plan '" + p.name + "' key " + p.ref.key().hex() + ">";
      });

  py::class_<Cache>(m, "PlanCache", "A plan cache file, memory-mapped and verified.")
      .def(py::init([](const std::string& path) {
             return Cache{std::make_shared<const runtime::PlanCache>(
                              value_or_raise(runtime::PlanCache::open(path))),
                          path};
           }),
           py::arg("path"))
      .def("find", &find, py::arg("name_or_key"),
           "The plan named name_or_key, or whose key (32 hex digits) it is.")
      .def("names",
           [](const Cache& c) {
             std::vector<std::string> names;
             for (size_t i = 0; i < c.cache->size(); ++i)
               names.emplace_back(c.cache->entry(i).name);
             return names;
           })
      .def("__len__", [](const Cache& c) { return c.cache->size(); })
      .def("__contains__",
           [](const Cache& c, const std::string& name) {
             return c.cache->find(std::string_view(name)).has_value();
           })
      .def_property_readonly("path", [](const Cache& c) { return c.path; });

  py::class_<Exe>(m, "Executable", "A plan bound to a backend's chip or mesh.")
      .def_property_readonly(
          "inputs", [](const Exe& e) { return io_list(e, true); }, "[(name, shape)] in plan order.")
      .def_property_readonly("outputs", [](const Exe& e) { return io_list(e, false); })
      .def_property_readonly(
          "last_device_ns", [](const Exe& e) { return e.last_device_ns.load(); },
          "Simulated device time of the latest run, in nanoseconds.")
      .def("run", &run, py::arg("inputs"),
           "Runs with {name: array}; returns {output name: float32 array}. The GIL is released "
           "while the plan runs; runs on one executable are serialised.");

  m.def(
      "compile",
      [](const std::string& source, const std::string& device, std::optional<std::string> mesh,
         std::optional<std::string> policy, std::optional<std::string> name,
         std::optional<std::string> weight_dtype, std::vector<std::string> weight_dtype_overrides) {
        python::CompileRequest request{source, device,       mesh,
                                       policy, weight_dtype, weight_dtype_overrides};
        python::CompiledModel model;
        {
          py::gil_scoped_release release;
          auto r = python::compile_model(request);
          if (!r) throw PyError{r.error()};
          model = std::move(*r);
        }
        Plan p;
        p.owned = std::make_shared<const std::vector<uint8_t>>(std::move(model.plan.bytes));
        p.ref = value_or_raise(runtime::verify_plan(*p.owned, model.name));
        p.name = name.value_or(model.name);
        return p;
      },
      py::arg("source"), py::arg("device") = "wormhole_b0", py::arg("mesh") = py::none(),
      py::arg("policy") = py::none(), py::arg("name") = py::none(),
      py::arg("weight_dtype") = py::none(),
      py::arg("weight_dtype_overrides") = std::vector<std::string>{},
      "Plans a model: a graph.json or StableHLO (.mlir) file path, or the model's text. "
      "weight_dtype (bf16, bfp8_b, bfp4_b) stores matmul/linear weights in a block float; "
      "weight_dtype_overrides lists PATTERN=DTYPE exceptions (meshplan-compile "
      "--weight-dtype-override).");
  m.def("backends", &device::backend_names,
        "The registered backends' names, sorted (Plan.bind's backend takes one).");
  m.attr("__version__") = MESHPLAN_VERSION;
}
