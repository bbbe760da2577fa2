#include "attnrt/attention/backend_registry.h"

#include <fmt/ranges.h>

#include "attnrt/attention/backend_profile.h"
#include "core/fail.h"

namespace attnrt {

void BackendRegistry::add(AttentionBackendPtr backend) {
  std::string name = backend->name();
  if (backends_.contains(name)) fail("attention backend {} is registered twice", name);
  backends_.emplace(std::move(name), std::move(backend));
}

AttentionBackendPtr BackendRegistry::find(std::string_view name) const {
  auto it = backends_.find(name);
  return it == backends_.end() ? nullptr : it->second;
}

AttentionBackendPtr BackendRegistry::get(std::string_view name) const {
  if (AttentionBackendPtr backend = find(name)) return backend;
  fail("unknown attention backend \"{}\"; known backends: {}", name, fmt::join(names(), ", "));
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& [name, backend] : backends_) names.push_back(name);
  return names;
}

AttentionBackendPtr BackendRegistry::resolve(std::string_view name) const {
  if (!name.empty()) return get(name);
  if (default_name_.empty()) fail("no default attention backend is registered; name one per layer");
  return get(default_name_);
}

BackendRegistry make_backend_registry(const EngineConfig& config, const BackendRegistry& builtins) {
  BackendRegistry registry = builtins;
  std::map<std::string, BackendProfileConfig> profiles;
  for (BackendProfileConfig& profile : builtin_gpu_profiles()) profiles[profile.name] = profile;
  for (const BackendProfileConfig& profile : config.backends) profiles[profile.name] = profile;
  for (const auto& [name, profile] : profiles) {
    if (builtins.find(name)) {
      fail("backends: profile {} has the name of a built-in executable backend; rename it", name);
    }
    AttentionBackendPtr kernel;
    if (!profile.kernel.empty()) {
      kernel = builtins.find(profile.kernel);
      if (!kernel || !kernel->executable()) {
        fail(
            "backends: profile {} names kernel {}, which is not an executable built-in backend "
            "of this build (built-in: {})",
            name, profile.kernel, fmt::join(builtins.names(), ", "));
      }
    }
    registry.add(std::make_shared<ProfileBackend>(profile, std::move(kernel)));
  }
  return registry;
}

}  // namespace attnrt
