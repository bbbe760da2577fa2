#include "attnrt/backends/builtin_backends.h"

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

namespace attnrt {

const BackendRegistry& builtin_backends() {
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    r.add(make_cpu_reference_backend());
    // The defaults: what `attnrt bench attention` measures is what the engine runs.
    r.add(make_cpu_flash_backend());
    r.set_default("CPU_FLASH");
    return r;
  }();
  return registry;
}

}  // namespace attnrt
