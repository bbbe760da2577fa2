#include "attnrt/backends/builtin_backends.h"

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

namespace attnrt {

const BackendRegistry& builtin_backends() {
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    r.add(make_cpu_reference_backend());
    r.set_default("CPU_REFERENCE");
    return r;
  }();
  return registry;
}

}  // namespace attnrt
