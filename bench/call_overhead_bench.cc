// One CPU_FLASH decode call through the public API, as an embedder makes it: the built-in
// backend, a metadata builder reused across calls, build() then forward() on a warm cache. The C++
// side of `bench/python_call_overhead.py`, which times the same call from Python: the difference
// is what the binding costs per call.
//
// Args: batch, context, query heads (8 KV heads, head 128, bf16 cache, float32 query rows).

#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/engine_config.h"

namespace {

using namespace attnrt;

constexpr int kHeadSize = 128;
constexpr int kKVHeads = 8;
constexpr int kBlockSize = 16;

void BM_DecodeCall(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const int context = static_cast<int>(state.range(1));
  const int heads = static_cast<int>(state.range(2));
  const int blocks_per_req = (context + kBlockSize - 1) / kBlockSize;
  const AttentionBackendPtr backend = builtin_backends().get("CPU_FLASH");

  const Tensor cache = Tensor::zeros(
      DType::bf16, {std::int64_t{batch} * blocks_per_req, kKVHeads, kBlockSize, 2 * kHeadSize});
  std::vector<float> query(static_cast<std::size_t>(batch) * heads * kHeadSize, 0.5f);
  std::vector<float> output(query.size());
  std::vector<std::int32_t> table(static_cast<std::size_t>(batch) * blocks_per_req);
  std::iota(table.begin(), table.end(), 0);
  std::vector<std::int32_t> seq_lens(batch, context);
  std::vector<std::int32_t> query_start_loc(batch + 1);
  std::iota(query_start_loc.begin(), query_start_loc.end(), 0);

  AttentionShape shape;
  shape.num_heads = heads;
  shape.num_kv_heads = kKVHeads;
  shape.head_size = shape.head_size_v = kHeadSize;
  KVCacheSpec spec = KVCacheSpec::full(kBlockSize, kKVHeads, kHeadSize, DType::bf16);
  EngineConfig config;
  config.scheduler.max_num_seqs = 256;
  const auto builder = backend->create_builder(spec, {"layer"}, config, Device::cpu());

  CommonAttentionMetadata common;
  common.query_start_loc = common.query_start_loc_cpu = query_start_loc;
  common.seq_lens = common.seq_lens_cpu = seq_lens;
  common.num_reqs = batch;
  common.num_actual_tokens = batch;
  common.max_query_len = 1;
  common.max_seq_len = context;
  common.block_table = {table.data(), batch, blocks_per_req, blocks_per_req};
  const std::int64_t row = std::int64_t{heads} * kHeadSize;
  const ActivationView q{query.data(), batch, heads, kHeadSize, row, kHeadSize};
  const ActivationView out{output.data(), batch, heads, kHeadSize, row, kHeadSize};
  for (auto _ : state) {
    const AttentionMetadata& metadata = builder->build(0, common);
    backend->forward({shape, q, out, cache, metadata});
    benchmark::DoNotOptimize(output.data());
  }
  state.counters["us_per_call"] = benchmark::Counter(
      static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_DecodeCall)
    ->ArgNames({"batch", "context", "q_heads"})
    ->ArgsProduct({{1, 8}, {16, 512}, {32}})
    ->UseRealTime();

}  // namespace
