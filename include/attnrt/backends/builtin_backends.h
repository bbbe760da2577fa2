#pragma once
// The executable backends of this build (CPU_REFERENCE, and the faster ones as they land), with
// the default a layer gets when its config names no backend. Built once, then read-only.

#include "attnrt/attention/backend_registry.h"
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/core/export.h"

namespace attnrt {

ATTNRT_API const BackendRegistry& builtin_backends();
// The same backends made afresh, CPU_FLASH with `flash` (builtin_backends() has the defaults).
ATTNRT_API BackendRegistry make_builtin_backends(const CpuFlashOptions& flash = {});

// builtin_backends() plus the GPU profiles and the config's own profiles.
inline BackendRegistry backend_registry_for(const EngineConfig& config) {
  return make_backend_registry(config, builtin_backends());
}

}  // namespace attnrt
