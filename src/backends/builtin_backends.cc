#include "attnrt/backends/builtin_backends.h"

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

namespace attnrt {

BackendRegistry make_builtin_backends(const CpuFlashOptions& flash) {
  BackendRegistry r;
  r.add(make_cpu_reference_backend());
  r.add(make_cpu_flash_backend(flash));
  r.set_default("CPU_FLASH");
  return r;
}

const BackendRegistry& builtin_backends() {
  // The defaults: what `attnrt bench attention` measures is what the engine runs.
  static const BackendRegistry registry = make_builtin_backends();
  return registry;
}

}  // namespace attnrt
