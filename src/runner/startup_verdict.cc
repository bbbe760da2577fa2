#include "attnrt/runner/startup_verdict.h"

#include "core/fail.h"

namespace attnrt {

void require_startup(const StartupVerdict& verdict) {
  if (!verdict.starts()) fail("{}", verdict.reasons.front());
}

}  // namespace attnrt
