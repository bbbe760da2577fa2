// CudaGraphManager: the capture descriptors and candidate lists of vLLM's newest MRV2
// (SEMANTICS §2.5) and dispatch (§2.6). Micro-batch (DBO) twins (§2.7) are out of scope; they
// would be added next to each FULL descriptor in add_uniform_decode and add_mixed.

#include "attnrt/runner/cudagraph_manager.h"

#include <algorithm>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "attnrt/config/cg_support.h"
#include "attnrt/config/config_limits.h"
#include "core/fail.h"

namespace attnrt {
namespace {

using Descriptors = std::vector<BatchExecutionDescriptor>;

// In 64 bits: a capture size near INT_MAX rounded up to a decode length passes INT_MAX.
std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// The descriptors in the order they were added, with a set that makes add_unique O(1): a
// 2^21-token cap generates ~131 000 capture sizes.
class DescriptorList {
 public:
  void push_back(const BatchExecutionDescriptor& descriptor) {
    seen_.insert(descriptor);
    list_.push_back(descriptor);
  }
  void add_unique(const BatchExecutionDescriptor& descriptor) {
    if (seen_.insert(descriptor).second) list_.push_back(descriptor);
  }
  Descriptors take() { return std::move(list_); }

 private:
  Descriptors list_;
  std::unordered_set<BatchExecutionDescriptor> seen_;
};

std::vector<int> distinct_sorted(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

BatchExecutionDescriptor graph(CUDAGraphMode mode, int num_tokens, std::optional<int> num_reqs,
                               int num_active_loras) {
  BatchExecutionDescriptor descriptor;
  descriptor.cg_mode = mode;
  descriptor.num_tokens = num_tokens;
  descriptor.num_reqs = num_reqs;
  descriptor.num_active_loras = num_active_loras;
  return descriptor;
}

// Everything the descriptor rules read, derived once from the options.
struct Plan {
  const CudaGraphManagerOptions& options;
  int cap;                         // max capture size
  std::int64_t max_decode_tokens;  // max_num_reqs × decode_query_len, may pass INT_MAX
  CUDAGraphMode decode_mode;
  CUDAGraphMode mixed_mode;
  bool separate_decode_routine;
  bool capture_varlen_decode;
  // One uniform length today; dynamic speculative decoding would add every reachable depth.
  std::vector<int> decode_query_lens;
};

Plan make_plan(const CudaGraphManagerOptions& options) {
  const CUDAGraphMode mode = options.mode;
  const bool separate =
      mode.separate_routine() || (mode == CUDAGraphMode::FULL && options.specialize_full_decode);
  const int largest = *std::max_element(options.capture_sizes.begin(), options.capture_sizes.end());
  return Plan{options,
              options.max_capture_size.value_or(largest),
              static_cast<std::int64_t>(options.max_num_reqs) * options.decode_query_len,
              mode.decode_mode(),
              mode.mixed_mode(),
              separate,
              separate && mode.decode_mode() && options.varlen_decode,
              {options.decode_query_len}};
}

// Small exact decode batches (one or two requests, any length up to the verification width).
// Lengths stop at the cap: longer ones never fit, and the width may be near INT_MAX.
void add_dense_varlen(const Plan& plan, DescriptorList& out) {
  const int decode_query_len = plan.options.decode_query_len;
  const int longest = std::min(decode_query_len, plan.cap);
  for (int num_reqs = 1; num_reqs <= std::min(2, plan.options.max_num_reqs); ++num_reqs) {
    for (int query_len = 1; query_len <= longest; ++query_len) {
      const std::int64_t num_tokens = static_cast<std::int64_t>(num_reqs) * query_len;
      if (num_tokens > plan.cap) continue;
      BatchExecutionDescriptor descriptor =
          graph(CUDAGraphMode::FULL, static_cast<int>(num_tokens), num_reqs, 0);
      descriptor.max_query_len = decode_query_len;
      out.add_unique(descriptor);
    }
  }
}

void add_varlen_decode(const Plan& plan, int size, int loras, DescriptorList& out) {
  BatchExecutionDescriptor descriptor =
      graph(plan.decode_mode, size, std::min(size, plan.options.max_num_reqs), loras);
  descriptor.max_query_len = plan.options.decode_query_len;
  out.add_unique(descriptor);
}

// Uniform decode: `size` rounded up to whole requests of each decode length.
void add_uniform_decode(const Plan& plan, int size, int loras, DescriptorList& out) {
  const auto& request_sizes = plan.options.full_capture_request_sizes;
  for (int query_len : plan.decode_query_lens) {
    const std::int64_t num_tokens = round_up(size, query_len);
    const std::int64_t num_reqs = num_tokens / query_len;
    if (num_tokens > plan.max_decode_tokens || num_tokens > plan.cap ||
        num_reqs > plan.options.max_num_reqs) {
      continue;  // past here both fit an int: num_reqs ≤ num_tokens ≤ cap
    }
    if (request_sizes && !request_sizes->contains(static_cast<int>(num_reqs))) continue;
    BatchExecutionDescriptor descriptor =
        graph(plan.decode_mode, static_cast<int>(num_tokens), static_cast<int>(num_reqs), loras);
    descriptor.uniform_token_count = query_len;
    out.add_unique(descriptor);
  }
}

// Mixed batches: FULL graphs pad requests too; PIECEWISE graphs leave them as they are.
void add_mixed(const Plan& plan, int size, int loras, DescriptorList& out) {
  std::optional<int> num_reqs;
  if (plan.mixed_mode == CUDAGraphMode::FULL) num_reqs = std::min(size, plan.options.max_num_reqs);
  out.push_back(graph(plan.mixed_mode, size, num_reqs, loras));
}

Descriptors build_descriptors(const CudaGraphManagerOptions& options,
                              std::span<const int> lora_cases) {
  if (!options.mode || options.capture_sizes.empty()) return {};
  const Plan plan = make_plan(options);
  DescriptorList out;
  if (plan.capture_varlen_decode) add_dense_varlen(plan, out);
  for (int size : distinct_sorted(options.capture_sizes)) {
    for (int loras : lora_cases) {
      if (plan.capture_varlen_decode && size <= plan.max_decode_tokens) {
        add_varlen_decode(plan, size, loras, out);
      } else if (plan.separate_decode_routine && plan.decode_mode) {
        add_uniform_decode(plan, size, loras, out);
      }
      if (plan.mixed_mode) add_mixed(plan, size, loras, out);
    }
  }
  const int prefill_tokens = options.single_request_prefill_tokens;
  if (prefill_tokens > 0 && options.breakable_cudagraphs &&
      options.mode.has_piecewise_cudagraphs()) {
    BatchExecutionDescriptor descriptor = graph(CUDAGraphMode::PIECEWISE, prefill_tokens, 1, 0);
    descriptor.max_query_len = prefill_tokens;
    descriptor.exact_num_tokens = true;
    out.push_back(descriptor);
  }
  return out.take();
}

// Nearest size first; at one size the most specific graph first (false sorts before true).
auto candidate_key(const BatchExecutionDescriptor& d) {
  return std::make_tuple(d.num_tokens, !d.uniform_token_count, !d.max_query_len, !d.num_reqs,
                         d.num_reqs.value_or(0));
}

Descriptors sorted_candidates(const Descriptors& all, CUDAGraphMode mode, int loras) {
  Descriptors out;
  for (const BatchExecutionDescriptor& d : all) {
    if (d.cg_mode == mode && d.num_active_loras == loras) out.push_back(d);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return candidate_key(a) < candidate_key(b);
  });
  return out;
}

CudaGraphManagerOptions validated(CudaGraphManagerOptions options) {
  if (options.max_num_reqs < 1) {
    fail("max_num_reqs must be at least 1 (got {})", options.max_num_reqs);
  }
  // The config's bounds (config_limits.h) hold for hand-built options too: the descriptor lists
  // grow with the cap and the decode width, so unbounded ones take minutes to build.
  constexpr int kMaxDecodeQueryLen = 1 + limits::kMaxSpeculativeTokens;
  if (options.decode_query_len < 1 || options.decode_query_len > kMaxDecodeQueryLen) {
    fail("decode_query_len must be from 1 to {} (got {}); it is 1 + speculative tokens",
         kMaxDecodeQueryLen, options.decode_query_len);
  }
  for (int size : options.capture_sizes) {
    if (size < 1 || size > limits::kMaxBatchedTokens) {
      fail("capture size {} is not a token count from 1 to {}", size, limits::kMaxBatchedTokens);
    }
  }
  if (options.max_capture_size &&
      (*options.max_capture_size < 1 || *options.max_capture_size > limits::kMaxBatchedTokens)) {
    fail("max_capture_size must be from 1 to {} (got {})", limits::kMaxBatchedTokens,
         *options.max_capture_size);
  }
  for (int loras : options.lora_capture_cases) {
    if (loras < 0) fail("LoRA capture case {} is negative; cases count active adapters", loras);
  }
  if (options.single_request_prefill_tokens < 0) {
    fail("single_request_prefill_tokens must not be negative (got {})",
         options.single_request_prefill_tokens);
  }
  return options;
}

}  // namespace

CudaGraphManagerOptions CudaGraphManagerOptions::from_config(const EngineConfig& config,
                                                             CUDAGraphMode resolved_mode) {
  const CaptureSizes sizes = compute_capture_sizes(config);
  CudaGraphManagerOptions options;
  options.mode = resolved_mode;
  options.capture_sizes = sizes.sizes;
  if (sizes.max_capture_size > 0) options.max_capture_size = sizes.max_capture_size;
  options.max_num_reqs = config.scheduler.max_num_seqs;
  options.decode_query_len = max_decode_query_len(config.speculative);
  options.lora_capture_cases = config.lora.capture_cases;
  options.varlen_decode = config.speculative.enable_adaptive_verification;
  return options;
}

CudaGraphManager::CudaGraphManager(CudaGraphManagerOptions options)
    : options_(validated(std::move(options))), lora_map_(options_.lora_capture_cases) {
  const std::vector<int> lora_cases = distinct_sorted(options_.lora_capture_cases);
  descriptors_ = build_descriptors(options_, lora_cases);
  for (int loras : lora_cases) {
    candidates_.push_back({loras, sorted_candidates(descriptors_, CUDAGraphMode::FULL, loras),
                           sorted_candidates(descriptors_, CUDAGraphMode::PIECEWISE, loras)});
  }
}

CudaGraphManager::CudaGraphManager(const EngineConfig& config, CUDAGraphMode resolved_mode)
    : CudaGraphManager(CudaGraphManagerOptions::from_config(config, resolved_mode)) {}

std::vector<BatchExecutionDescriptor> CudaGraphManager::capture_descriptors(
    CUDAGraphMode runtime_mode) const {
  Descriptors out;
  for (const BatchExecutionDescriptor& d : descriptors_) {
    if (d.cg_mode == runtime_mode) out.push_back(d);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.num_tokens > b.num_tokens; });
  return out;
}

std::vector<BatchExecutionDescriptor> CudaGraphManager::capture_descriptors() const {
  Descriptors out = capture_descriptors(CUDAGraphMode::PIECEWISE);
  const Descriptors full = capture_descriptors(CUDAGraphMode::FULL);
  out.insert(out.end(), full.begin(), full.end());
  return out;
}

const CudaGraphManager::CaseCandidates* CudaGraphManager::find_case(int num_active_loras) const {
  for (const CaseCandidates& entry : candidates_) {
    if (entry.num_active_loras == num_active_loras) return &entry;
  }
  return nullptr;
}

std::vector<BatchExecutionDescriptor> CudaGraphManager::candidates(int num_tokens,
                                                                   int num_active_loras) const {
  Descriptors out;
  const CaseCandidates* entry = find_case(lora_case(num_active_loras));
  if (entry == nullptr || num_tokens <= 0) return out;
  for (const Descriptors* list : {&entry->full, &entry->piecewise}) {
    for (const BatchExecutionDescriptor& d : *list) {
      if (d.num_tokens >= num_tokens) out.push_back(d);
    }
  }
  return out;
}

BatchExecutionDescriptor CudaGraphManager::dispatch(int num_reqs, int num_tokens,
                                                    std::optional<int> uniform_token_count,
                                                    int num_active_loras,
                                                    std::optional<int> max_query_len,
                                                    int num_ubatches) const {
  if (num_reqs < 0 || num_tokens < 0) {
    fail("dispatch: a batch of {} requests and {} tokens; counts must not be negative", num_reqs,
         num_tokens);
  }
  const int loras = lora_case(num_active_loras);
  const CaseCandidates* entry = find_case(loras);
  if (captured_ && num_tokens > 0 && entry != nullptr) {
    const RuntimeBatch batch{num_reqs, num_tokens,    uniform_token_count,
                             loras,    max_query_len, num_ubatches};
    for (const Descriptors* list : {&entry->full, &entry->piecewise}) {
      // Lists ascend by token count: skip the graphs too small for the batch.
      auto it = std::lower_bound(list->begin(), list->end(), num_tokens,
                                 [](const auto& d, int n) { return d.num_tokens < n; });
      for (; it != list->end(); ++it) {
        if (is_compatible(*it, batch)) return *it;
      }
    }
  }
  return BatchExecutionDescriptor::eager(num_reqs, num_tokens, loras, num_ubatches);
}

}  // namespace attnrt
