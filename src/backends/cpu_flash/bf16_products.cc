// The start-up probe behind Bf16Products::measured: one GQA decode batch on a bf16 cache, run
// with dot products and with f32 products in alternating rounds, timed and compared.

#include "bf16_products.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numbers>
#include <random>
#include <vector>

#include "attnrt/core/buffer.h"
#include "attnrt/core/dtype.h"
#include "flash_kernels.h"
#include "flash_plan.h"

namespace attnrt::cpu_flash {
namespace {

// The probe's decode: 32 query heads over 8 KV heads (4 rows per KV head, the compute-bound GQA
// case), head 128, 1024 keys in 16-key blocks: 4 MiB of cache, which the last-level cache holds.
constexpr int kHeads = 32;
constexpr int kKvHeads = 8;
constexpr int kHeadSize = 128;
constexpr int kKeys = 1024;
constexpr int kBlockSize = 16;
constexpr int kRounds = 5;
constexpr std::int64_t kPartialFloats = 1 << 20;

class ProbeBatch {
 public:
  explicit ProbeBatch(int num_threads) : num_threads_(num_threads) {
    std::mt19937 rng(2024);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    cache_.resize(static_cast<std::size_t>(kKeys) * kKvHeads * 2 * kHeadSize);
    for (std::uint16_t& x : cache_) x = float_to_bf16_bits(uniform(rng));
    query_.resize(static_cast<std::size_t>(kHeads) * kHeadSize);
    for (float& x : query_) x = uniform(rng);
    for (int b = 0; b < kKeys / kBlockSize; ++b) block_row_.push_back(b);
    // The kernels' scratch and partials are 64-byte aligned, as the backend's workspace is.
    const ScratchLayout layout = ScratchLayout::of(kHeadSize, kHeadSize);
    scratch_ = Buffer::allocate(layout.bytes() * static_cast<std::size_t>(num_threads));
    partials_ = Buffer::allocate(kPartialFloats * sizeof(float));
  }

  // The batch's output with or without dot products, and the seconds its forward call took.
  double run(bool dot_products, std::vector<float>& output) {
    output.assign(query_.size(), 0.f);
    Request request{0, 1, kKeys, kKeys - 1, block_row_.data()};
    RequestPlan plan;
    const AttentionShape shape{AttentionType::full, kHeads, kKvHeads, kHeadSize, kHeadSize};
    const PlanPolicy policy{num_threads_, CpuFlashOptions{}.min_split_keys,
                            CpuFlashOptions{}.max_splits, kPartialFloats};
    const PlanTotals totals = plan_batch({&request, 1}, shape, policy, {&plan, 1});
    ForwardTask task;
    task.cache = cache_view();
    task.query = activations(query_.data());
    task.output = activations(output.data());
    task.scale_log2 = std::numbers::log2e_v<float> / std::sqrt(static_cast<float>(kHeadSize));
    task.num_kv_heads = kKvHeads;
    task.group_size = kHeads / kKvHeads;
    task.bf16_dot = dot_products;
    task.stream_prefetch = stream_prefetch_helps();
    task.requests = {&request, 1};
    task.plans = {&plan, 1};
    task.num_items = totals.num_items;
    task.num_merges = totals.num_merges;
    task.partials = reinterpret_cast<float*>(partials_->data());
    task.scratch = reinterpret_cast<float*>(scratch_->data());
    task.scratch_layout = ScratchLayout::of(kHeadSize, kHeadSize);
    task.num_threads = num_threads_;
    const auto start = std::chrono::steady_clock::now();
    run_forward(task);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  // [block][kv head][token][K then V], bf16.
  CacheView cache_view() {
    CacheView view;
    view.base = reinterpret_cast<std::byte*>(cache_.data());
    view.dtype = DType::bf16;
    view.element_size = 2;
    view.kernel_block_size = kBlockSize;
    view.num_kernel_blocks = kKeys / kBlockSize;
    view.state_stride = 2 * kHeadSize * 2;
    view.head_stride = kBlockSize * view.state_stride;
    view.block_stride = kKvHeads * view.head_stride;
    view.key_size = kHeadSize;
    view.value_offset = kHeadSize;
    view.value_size = kHeadSize;
    return view;
  }
  static ActivationView activations(float* data) {
    return {data, 1, kHeads, kHeadSize, kHeads * kHeadSize, kHeadSize};
  }

  int num_threads_;
  std::vector<std::uint16_t> cache_;
  std::vector<float> query_;
  std::shared_ptr<Buffer> scratch_, partials_;
  std::vector<std::int32_t> block_row_;
};

}  // namespace

Bf16ProductsProbe probe_bf16_products(int num_threads) {
  ProbeBatch batch(std::max(1, num_threads));
  std::vector<float> dot, f32;
  Bf16ProductsProbe probe{1e30, 1e30, 0};
  batch.run(true, dot);  // warm: the cache lines, the threads, the pages of the outputs
  for (int round = 0; round < kRounds; ++round) {
    probe.f32_seconds = std::min(probe.f32_seconds, batch.run(false, f32));
    probe.dot_seconds = std::min(probe.dot_seconds, batch.run(true, dot));
  }
  for (std::size_t i = 0; i < dot.size(); ++i) {
    const double error = std::abs(static_cast<double>(dot[i]) - f32[i]) /
                         std::max(1.0, std::abs(static_cast<double>(f32[i])));
    probe.max_error = std::max(probe.max_error, std::isnan(error) ? 1e30 : error);
  }
  return probe;
}

Bf16ProductsChoice choose_bf16_products(Bf16Products requested, int num_threads) {
  if (requested == Bf16Products::f32) return {false, "f32 products (bf16_products = f32)"};
  if (!bf16_dot_products_available()) {
    return {false, fmt::format("f32 products: the {} target of this CPU has no AVX512-BF16",
                               dispatched_target_name())};
  }
  if (requested == Bf16Products::dot) {
    return {true, "AVX512-BF16 dot products (bf16_products = dot)"};
  }
  // Once per process: every backend asks the same machine the same question.
  static std::once_flag once;
  static Bf16ProductsChoice measured;
  std::call_once(once, [&] {
    const Bf16ProductsProbe probe = probe_bf16_products(num_threads);
    const double speedup = probe.f32_seconds / probe.dot_seconds;
    const bool accurate = probe.max_error <= kBf16DotTolerance;
    measured.dot_products = accurate && speedup > 1.0;
    measured.reason = fmt::format(
        "{}: measured at start-up, dot products {:.2f}x the speed of f32 products, error {:.1e} "
        "(tolerance {:.0e})",
        measured.dot_products ? "AVX512-BF16 dot products" : "f32 products", speedup,
        probe.max_error, kBf16DotTolerance);
  });
  return measured;
}

}  // namespace attnrt::cpu_flash
