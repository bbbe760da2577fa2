// fuzz_step_inputs: the per-step host path of a runner (engine_step.cc) driven by fuzz bytes on a
// small fixed plan (step_rig.h). The bytes decode into operations — add, extend and remove
// requests with valid and invalid block ids, lay out, dispatch and pad a batch, gather block
// tables, compute and translate slot mappings, stage fast prefill, build metadata — plus the same
// calls with raw arguments. Beyond crashes, the target checks that a call throws attnrt::Error
// exactly when its documented checks fail, that a call that throws changes nothing, and that
// block rows and slot mappings hold what a plain model of the requests says they should.

#include <cstddef>
#include <cstdint>
#include <exception>

#include "attnrt/core/error.h"
#include "fuzz_support.h"
#include "step_ops.h"

namespace attnrt::fuzz {
namespace {

// At most this many operations per input, so that no input runs long.
constexpr int kMaxOperations = 256;

void run_operations(StepRig& rig, ByteReader& in) {
  StepOps ops(rig, in);
  for (int op = 0; op < kMaxOperations && !in.empty(); ++op) {
    switch (in.byte() % 10) {
      case 0:
      case 1:
        ops.append(/*overwrite=*/true);
        break;
      case 2:
      case 3:
        ops.append(/*overwrite=*/false);
        break;
      case 4:
        ops.remove();
        break;
      case 5:
      case 6:
        ops.step();
        break;
      case 7:
        ops.gather_raw();
        break;
      case 8:
        ops.slot_mappings_raw();
        break;
      default:
        ops.graph_manager_raw();
        break;
    }
    ops.check_tables();
  }
}

}  // namespace
}  // namespace attnrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  attnrt::fuzz::ByteReader in(data, size);
  const int config = in.byte() % static_cast<int>(attnrt::fuzz::kStepConfigs.size());
  try {
    attnrt::fuzz::StepRig rig(attnrt::fuzz::planned_config(config));
    attnrt::fuzz::run_operations(rig, in);
  } catch (const attnrt::Error& error) {
    // Every operation catches the Errors it expects; one escaping is a finding too.
    attnrt::fuzz::unexpected_exception(error);
  } catch (const std::exception& error) {
    attnrt::fuzz::unexpected_exception(error);
  }
  return 0;
}
