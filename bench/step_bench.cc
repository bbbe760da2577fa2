// The per-step host path (append block ids, input batch, dispatch, slot mappings, fast-prefill
// staging, attention metadata) for 1, 32 and 256 requests in decode and mixed batches. Also
// `attnrt bench step`. Goal: at most 10 us per step for 256 decode requests on one core.

#include <benchmark/benchmark.h>

#include "bench/step_workload.h"

namespace {

using attnrt::bench::StepKind;
using attnrt::bench::StepWorkload;

void BM_Step(benchmark::State& state) {
  const auto kind = static_cast<StepKind>(state.range(1));
  StepWorkload workload(static_cast<int>(state.range(0)), kind);
  for (int i = 0; i < 50; ++i) workload.step();
  for (auto _ : state) workload.step();
  state.SetLabel(std::string(attnrt::bench::step_kind_name(kind)));
  state.counters["tokens"] = workload.batch().num_tokens();
}

BENCHMARK(BM_Step)
    ->ArgNames({"num_reqs", "kind"})
    ->ArgsProduct({{1, 32, 256},
                   {static_cast<long>(StepKind::decode), static_cast<long>(StepKind::mixed)}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
