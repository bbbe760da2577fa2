#include "attnrt/attention/backend_registry.h"

#include <fmt/ranges.h>

#include "attnrt/attention/backend_profile.h"
#include "attnrt/core/nearest_name.h"
#include "attnrt/core/printable.h"
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
  const std::vector<std::string> known = names();
  const std::vector<std::string_view> candidates(known.begin(), known.end());
  const std::string_view nearest = nearest_name(name, candidates);
  if (!nearest.empty()) {
    fail("unknown attention backend \"{}\"; did you mean \"{}\"? (known backends: {})",
         printable(name), nearest, fmt::join(known, ", "));
  }
  fail("unknown attention backend \"{}\"; known backends: {}", printable(name),
       fmt::join(known, ", "));
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
  // A declared profile replaces the built-in GPU profile of its name; its JSON path names it.
  std::map<std::string, BackendProfileConfig> profiles;
  std::map<std::string, std::string> paths;
  for (BackendProfileConfig& profile : builtin_gpu_profiles()) profiles[profile.name] = profile;
  for (std::size_t i = 0; i < config.backends.size(); ++i) {
    profiles[config.backends[i].name] = config.backends[i];
    paths[config.backends[i].name] = fmt::format("backends[{}]", i);
  }
  for (const auto& [name, profile] : profiles) {
    const std::string path = paths.contains(name) ? paths[name] : "backends";
    if (builtins.find(name)) {
      fail("{}.name: profile {} has the name of a built-in executable backend; rename it", path,
           name);
    }
    AttentionBackendPtr kernel;
    if (!profile.kernel.empty()) {
      kernel = builtins.find(profile.kernel);
      if (!kernel || !kernel->executable()) {
        fail(
            "{}.kernel: profile {} names kernel \"{}\", which is not an executable built-in "
            "backend of this build (built-in: {})",
            path, name, printable(profile.kernel), fmt::join(builtins.names(), ", "));
      }
    }
    registry.add(std::make_shared<ProfileBackend>(profile, std::move(kernel)));
  }
  return registry;
}

}  // namespace attnrt
