#pragma once
// BackendRegistry: attention backends by name. The built-in registry (backends/) holds the
// executable CPU/CUDA backends; `make_backend_registry` layers the built-in GPU profiles and the
// config's own profiles over it, so a layer's `backend` can name any of them.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API BackendRegistry {
 public:
  // Throws Error if a backend of that name is already registered.
  void add(AttentionBackendPtr backend);
  AttentionBackendPtr find(std::string_view name) const;  // nullptr if absent
  // Throws Error naming `name` and listing the registered backends.
  AttentionBackendPtr get(std::string_view name) const;
  std::vector<std::string> names() const;

  // The backend a layer gets when its config names none.
  void set_default(std::string name) { default_name_ = std::move(name); }
  const std::string& default_name() const { return default_name_; }
  // `name` or, when empty, the default; throws like get().
  AttentionBackendPtr resolve(std::string_view name) const;

 private:
  std::map<std::string, AttentionBackendPtr, std::less<>> backends_;
  std::string default_name_;
};

// `builtins` plus the built-in GPU profiles (FLASH_ATTN, FLASHINFER, ...) plus the config's
// `backends` profiles (a config profile may replace a built-in profile of the same name). A
// profile's `kernel` must name an executable backend of `builtins`.
ATTNRT_API BackendRegistry make_backend_registry(const EngineConfig& config,
                                                 const BackendRegistry& builtins);

}  // namespace attnrt
