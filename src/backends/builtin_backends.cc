#include "attnrt/backends/builtin_backends.h"

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

namespace attnrt {

const BackendRegistry& builtin_backends() {
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    r.add(make_cpu_reference_backend());
    // The default keeps every product in f32 so that `attnrt run --check` agrees with the dense
    // recomputation token for token; `attnrt bench attention` measures the bf16 dot products.
    CpuFlashOptions flash;
    flash.bf16_dot_products = false;
    r.add(make_cpu_flash_backend(flash));
    r.set_default("CPU_FLASH");
    return r;
  }();
  return registry;
}

}  // namespace attnrt
