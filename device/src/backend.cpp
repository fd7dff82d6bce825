// The backend registry (see backend.hpp): names to mesh factories, behind one mutex.
#include "meshplan/device/backend.hpp"

#include <map>
#include <mutex>

namespace meshplan::device {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, MeshFactory, std::less<>> factories;
  /// register_backend_once: the first call's status per name.
  std::map<std::string, Status, std::less<>> first_calls;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Status register_backend(std::string_view name, MeshFactory factory) {
  if (name.empty()) return fail(ErrorCode::invalid_argument, "register_backend: empty name");
  if (!factory)
    return fail(ErrorCode::invalid_argument, "register_backend: backend '", name,
                "' has no factory");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.factories.contains(name))
    return fail(ErrorCode::invalid_argument, "register_backend: backend '", name,
                "' is already registered");
  r.factories.emplace(std::string(name), std::move(factory));
  return {};
}

Status register_backend_once(std::string_view name, MeshFactory factory) {
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    if (auto it = r.first_calls.find(name); it != r.first_calls.end()) return it->second;
  }
  Status status = register_backend(name, std::move(factory));
  std::lock_guard lock(r.mutex);
  // A concurrent first call may have recorded its status meanwhile: the earlier one stands.
  return r.first_calls.emplace(std::string(name), status).first->second;
}

bool has_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.factories.contains(name);
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

Result<std::unique_ptr<Mesh>> open_backend(std::string_view name, const MeshDesc& desc,
                                           const BackendOptions& options) {
  MeshFactory factory;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(name);
    if (it == r.factories.end()) {
      std::string known;
      for (const auto& [n, f] : r.factories) known += (known.empty() ? "" : ", ") + n;
      return fail(ErrorCode::not_found, "open_backend: no backend '", name,
                  "' is registered (registered: ", known.empty() ? "none" : known, ")");
    }
    factory = it->second;
  }
  return factory(desc, options);
}

}  // namespace meshplan::device
