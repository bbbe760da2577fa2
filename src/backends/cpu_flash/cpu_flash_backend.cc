// CpuFlashBackend: capabilities, builders, and the two kernel entry points. forward() checks its
// inputs, carves the workspace, plans the batch from the device arrays and runs the SIMD kernels
// (flash_forward.cc); write_kv() converts rows into the cache (flash_write_kv.cc).

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

#include <fmt/ranges.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <numbers>

#include "bf16_products.h"
#include "core/fail.h"
#include "core/hidden.h"
#include "flash_checks.h"
#include "flash_kernels.h"
#include "flash_plan.h"
#include "flash_workspace.h"

namespace attnrt {
namespace {

using cpu_flash::CacheView;

// The kernels index their per-thread tiles with int offsets of up to kMaxRows rows (plus a few) of
// one head's entries; past this width those offsets could wrap.
constexpr int kMaxHeadSize = CpuFlashBackend::kMaxHeadSize;
static_assert(kMaxHeadSize == std::numeric_limits<int>::max() / (2 * cpu_flash::kMaxRows));

// Rows past the real tokens (graph padding) get zeros rather than stale values.
void zero_padding_rows(const ActivationView& output, int first, int end) {
  end = std::min(end, output.num_tokens);
  for (int t = first; t < end; ++t) {
    for (int h = 0; h < output.num_heads; ++h) std::fill_n(output.row(t, h), output.head_size, 0.f);
  }
}

// The metadata's workspace when it holds this call's fixed part; otherwise (metadata from
// another builder, or more requests than the builder was sized for) a fresh one for this call.
std::shared_ptr<Buffer> workspace_for(const AttentionMetadata& metadata, std::size_t fixed_bytes,
                                      std::size_t partial_bytes) {
  const auto* flash = dynamic_cast<const CpuFlashMetadata*>(&metadata);
  if (flash != nullptr && flash->workspace != nullptr && flash->workspace->size() >= fixed_bytes) {
    return flash->workspace;
  }
  return Buffer::allocate(fixed_bytes + partial_bytes);
}

// OpenMP's default as the process started: OMP_NUM_THREADS when set, else every processor the
// process may run on. Not omp_get_max_threads(): a host library may have lowered it for its own
// pool (importing PyTorch sets it to its count of physical cores, 1 on a 2-vCPU machine).
int default_num_threads() {
  if (const char* text = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long threads = std::strtol(text, &end, 10);  // "4,2" (nested levels): the outer 4
    if (end != text && threads > 0 && threads <= 4096) return static_cast<int>(threads);
  }
  return omp_get_num_procs();
}

}  // namespace

struct ATTNRT_HIDDEN CpuFlashBackend::LazyBf16Choice {
  std::once_flag once;
  Bf16ProductsChoice choice;
};

CpuFlashBackend::CpuFlashBackend(CpuFlashOptions options)
    : options_(options), bf16_choice_(std::make_shared<LazyBf16Choice>()) {
  num_threads_ = options_.num_threads > 0 ? options_.num_threads : default_num_threads();
  num_threads_ = std::max(1, num_threads_);
}

const Bf16ProductsChoice& CpuFlashBackend::bf16_products() const {
  std::call_once(bf16_choice_->once, [this] {
    bf16_choice_->choice = cpu_flash::choose_bf16_products(
        options_.bf16_products, options_.bf16_prefill_products.value_or(options_.bf16_products));
  });
  return bf16_choice_->choice;
}

bool CpuFlashBackend::runs_bf16_dot_products() const {
  return bf16_products().dot_products && cpu_flash::bf16_dot_products_available();
}

bool CpuFlashBackend::runs_bf16_prefill_products() const {
  return bf16_products().prefill_bf16 &&
         cpu_flash::bf16_prefill_products_available() != cpu_flash::PrefillProducts::f32;
}

bool CpuFlashBackend::supports_spec_kind(KVSpecKind kind) const {
  return kind != KVSpecKind::encoder_only && !is_state_layer_type(kind);
}

std::vector<KernelBlockSize> CpuFlashBackend::get_supported_kernel_block_sizes(
    const KVCacheSpec& spec) const {
  (void)spec;
  return {MultipleOf{1}};
}

std::vector<KVCacheLayout> CpuFlashBackend::supported_kv_cache_layouts() const {
  return {KVCacheLayout::LBNHC, KVCacheLayout::LBHNC, KVCacheLayout::BLNHC,
          KVCacheLayout::BLHNC, KVCacheLayout::LHBNC, KVCacheLayout::BHLNC};
}

std::unique_ptr<AttentionMetadataBuilder> CpuFlashBackend::create_builder(
    const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
    const EngineConfig& config, Device device) const {
  if (!supports_spec_kind(kv_cache_spec.kind)) {
    fail("CPU_FLASH does not serve {} attention (layers {}); choose another backend for them",
         attention_type_name(kv_cache_spec.kind), fmt::join(layer_names, ", "));
  }
  if (kv_cache_spec.tokens_per_state != 1) {
    fail(
        "CPU_FLASH addresses one token per cache state, but spec {} packs {} tokens per state "
        "(layers {}); choose a backend for compressed states",
        kv_cache_spec.describe(), kv_cache_spec.tokens_per_state, fmt::join(layer_names, ", "));
  }
  if (!device.is_cpu()) {
    fail("CPU_FLASH runs on the host, but layers {} were placed on {}; use device cpu",
         fmt::join(layer_names, ", "), device.str());
  }
  for (const int head_size : {kv_cache_spec.head_size, kv_cache_spec.head_size_v}) {
    if (head_size <= kMaxHeadSize) continue;
    fail(
        "layer {}{}: CPU_FLASH runs heads of at most {} entries, not head size {}; choose "
        "CPU_REFERENCE for these layers",
        layer_names.empty() ? "(none)" : layer_names.front(),
        layer_names.size() > 1 ? fmt::format(" and {} more", layer_names.size() - 1) : "",
        kMaxHeadSize, head_size);
  }
  return std::make_unique<CpuFlashMetadataBuilder>(kv_cache_spec, std::move(layer_names), config,
                                                   device, options_, num_threads_);
}

void CpuFlashBackend::write_kv(const KVWriteArgs& args) const {
  const CacheView cache = cpu_flash::make_cache_view(args.kv_cache, args.shape, "write_kv");
  cpu_flash::check_write(args, cache);
  cpu_flash::WriteTask task;
  task.cache = cache;
  task.key = args.key;
  task.value = args.value;
  task.writes_value = args.shape.type != AttentionType::mla;
  task.slot_mapping = args.slot_mapping;
  task.num_tokens = args.key.num_tokens;
  task.num_kv_heads = args.shape.num_kv_heads;
  task.num_threads = num_threads_;
  cpu_flash::run_write_kv(task);
}

void CpuFlashBackend::forward(const AttentionForwardArgs& args) const {
  const CacheView cache = cpu_flash::make_cache_view(args.kv_cache, args.shape, "forward");
  cpu_flash::check_forward(args, cache);
  const CommonAttentionMetadata& common = args.metadata.common;
  const std::size_t fixed = cpu_flash::fixed_workspace_bytes(cache.key_size, cache.value_size,
                                                             num_threads_, common.num_reqs);
  const std::shared_ptr<Buffer> workspace =
      workspace_for(args.metadata, fixed, options_.partial_bytes);
  const cpu_flash::CarvedWorkspace carved =
      cpu_flash::carve_workspace(workspace->data(), workspace->size(), cache.key_size,
                                 cache.value_size, num_threads_, common.num_reqs);
  const int num_tokens = cpu_flash::read_and_check_requests(args, cache, carved.requests);

  const cpu_flash::PlanPolicy policy{
      num_threads_, options_.min_split_keys, options_.max_splits,
      std::min<std::int64_t>(carved.partial_floats,
                             static_cast<std::int64_t>(options_.partial_bytes / sizeof(float)))};
  const cpu_flash::PlanTotals totals =
      cpu_flash::plan_batch(carved.requests, args.shape, policy, carved.plans);

  cpu_flash::ForwardTask task;
  task.cache = cache;
  task.query = args.query;
  task.output = args.output;
  task.mask = key_mask_of(args.shape, common.causal);
  const float scale = args.shape.scale != 0.f
                          ? args.shape.scale
                          : 1.f / std::sqrt(static_cast<float>(args.shape.head_size));
  task.scale_log2 = scale * std::numbers::log2e_v<float>;
  task.num_kv_heads = args.shape.num_kv_heads;
  task.group_size = args.shape.num_heads / args.shape.num_kv_heads;
  // Only a bf16 cache asks for the choice.
  const bool bf16 = cache.dtype == DType::bf16;
  task.bf16_dot = bf16 && bf16_products().dot_products && cpu_flash::bf16_dot_products_available();
  task.prefill_products = bf16 && bf16_products().prefill_bf16
                              ? cpu_flash::bf16_prefill_products_available()
                              : cpu_flash::PrefillProducts::f32;
  task.stream_prefetch = options_.stream_prefetch.value_or(cpu_flash::stream_prefetch_helps());
  task.requests = carved.requests;
  task.plans = carved.plans;
  task.num_items = totals.num_items;
  task.num_merges = totals.num_merges;
  task.partials = carved.partials;
  task.scratch = carved.scratch;
  task.scratch_layout = cpu_flash::ScratchLayout::of(cache.key_size, cache.value_size);
  task.num_threads = num_threads_;
  cpu_flash::run_forward(task);
  zero_padding_rows(args.output, num_tokens, common.num_actual_tokens);
}

AttentionBackendPtr make_cpu_flash_backend() {
  return make_cpu_flash_backend(CpuFlashOptions{});
}

AttentionBackendPtr make_cpu_flash_backend(const CpuFlashOptions& options) {
  return std::make_shared<const CpuFlashBackend>(options);
}

}  // namespace attnrt
