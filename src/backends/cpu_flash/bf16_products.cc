// How CPU_FLASH multiplies bf16 caches: the choice from the request and the CPU's features
// (never a timing), and the probe `attnrt bench attention` reports so that a user can see what
// the other choice would cost here: a GQA decode and a chunked prefill on a bf16 cache, each run
// with bf16 products and with f32 products in alternating rounds, timed and compared.

#include "bf16_products.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "attnrt/core/buffer.h"
#include "attnrt/core/dtype.h"
#include "flash_kernels.h"
#include "flash_plan.h"

namespace attnrt::cpu_flash {
namespace {

// The probes' batch: 32 query heads over 8 KV heads (4 rows per KV head, the compute-bound GQA
// decode), head 128, 1024 keys in 16-key blocks: 4 MiB of cache, which the last-level cache
// holds. The decode is the last key's query; the prefill, a chunk of its last kPrefillTokens.
constexpr int kHeads = 32;
constexpr int kKvHeads = 8;
constexpr int kHeadSize = 128;
constexpr int kKeys = 1024;
constexpr int kBlockSize = 16;
// 64 tokens: 2 GEMM items of 128 rows per KV head, at half the cost of 128 (`attnrt plan` on
// Zen 4 took 0.15-0.18 s with 128, 0.10-0.13 s with 64).
constexpr int kPrefillTokens = 64;
constexpr int kRounds = 5;
constexpr std::int64_t kPartialFloats = 1 << 20;

class ProbeBatch {
 public:
  ProbeBatch(int num_threads, int query_len) : num_threads_(num_threads), query_len_(query_len) {
    std::mt19937 rng(2024);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    cache_.resize(static_cast<std::size_t>(kKeys) * kKvHeads * 2 * kHeadSize);
    for (std::uint16_t& x : cache_) x = float_to_bf16_bits(uniform(rng));
    query_.resize(static_cast<std::size_t>(query_len) * kHeads * kHeadSize);
    for (float& x : query_) x = uniform(rng);
    for (int b = 0; b < kKeys / kBlockSize; ++b) block_row_.push_back(b);
    // The kernels' scratch and partials are 64-byte aligned, as the backend's workspace is.
    const ScratchLayout layout = ScratchLayout::of(kHeadSize, kHeadSize);
    scratch_ = Buffer::allocate(layout.bytes() * static_cast<std::size_t>(num_threads));
    partials_ = Buffer::allocate(kPartialFloats * sizeof(float));
  }

  // The batch's output with or without bf16 products, and the seconds its forward call took.
  double run(bool bf16_products, std::vector<float>& output) {
    output.assign(query_.size(), 0.f);
    Request request{0, query_len_, kKeys, kKeys - query_len_, block_row_.data()};
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
    task.bf16_dot = bf16_products;
    task.prefill_products =
        bf16_products ? bf16_prefill_products_available() : PrefillProducts::f32;
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
  ActivationView activations(float* data) const {
    return {data, query_len_, kHeads, kHeadSize, kHeads * kHeadSize, kHeadSize};
  }

  int num_threads_;
  int query_len_;
  std::vector<std::uint16_t> cache_;
  std::vector<float> query_;
  std::shared_ptr<Buffer> scratch_, partials_;
  std::vector<std::int32_t> block_row_;
};

}  // namespace

Bf16ProductsProbe probe_bf16_products(int num_threads, Bf16ProbeCase probe_case) {
  ProbeBatch batch(std::max(1, num_threads),
                   probe_case == Bf16ProbeCase::prefill ? kPrefillTokens : 1);
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

namespace {

struct PathChoice {
  bool bf16 = false;
  std::string reason;
};

// Decode (GEMV) items: dot products on request, or where the CPU runs them at its FMA's rate.
PathChoice choose_decode(Bf16Products requested) {
  constexpr const char* kDot = "AVX512-BF16 dot products";
  if (requested == Bf16Products::f32) return {false, "f32 products (f32 requested)"};
  if (requested == Bf16Products::dot) return {true, fmt::format("{} (dot requested)", kDot)};
  if (bf16_dot_products_at_fma_rate()) {
    return {true, fmt::format("{} (auto: this AMD CPU runs them at its FMA rate)", kDot)};
  }
  return {false, fmt::format("f32 products (auto: {} run at half the FMA rate of this CPU)", kDot)};
}

// Prefill (GEMM) items: AMX tiles where the CPU and OS have them, else dot products as decode.
PathChoice choose_prefill(Bf16Products requested, bool amx) {
  const char* bf16 = amx ? "AMX-BF16 tiles" : "AVX512-BF16 dot products";
  if (requested == Bf16Products::f32) return {false, "f32 products (f32 requested)"};
  if (requested == Bf16Products::dot) return {true, fmt::format("{} (dot requested)", bf16)};
  if (amx) return {true, fmt::format("{} (auto: the CPU has AMX-BF16)", bf16)};
  if (bf16_dot_products_at_fma_rate()) {
    return {true, fmt::format("{} (auto: this AMD CPU runs them at its FMA rate)", bf16)};
  }
  return {false, fmt::format("f32 products (auto: no AMX-BF16, and {} run at half the FMA rate "
                             "of this CPU)",
                             bf16)};
}

}  // namespace

Bf16ProductsChoice choose_bf16_products(Bf16Products decode, Bf16Products prefill) {
  if (!bf16_dot_products_available()) {
    const std::string reason = fmt::format(
        "f32 products: the {} target of this CPU has no AVX512-BF16", dispatched_target_name());
    return {false, false, reason};
  }
  const PathChoice gemv = choose_decode(decode);
  const PathChoice gemm = choose_prefill(prefill, amx_bf16_available());
  return {gemv.bf16, gemm.bf16, fmt::format("decode {}; prefill {}", gemv.reason, gemm.reason)};
}

}  // namespace attnrt::cpu_flash

namespace attnrt {

std::string_view bf16_products_name(Bf16Products products) {
  switch (products) {
    case Bf16Products::automatic:
      return "auto";
    case Bf16Products::dot:
      return "dot";
    case Bf16Products::f32:
      return "f32";
  }
  return "?";
}

std::optional<Bf16Products> bf16_products_from_name(std::string_view name) {
  for (Bf16Products products : {Bf16Products::automatic, Bf16Products::dot, Bf16Products::f32}) {
    if (bf16_products_name(products) == name) return products;
  }
  return std::nullopt;
}

}  // namespace attnrt
