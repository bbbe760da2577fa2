// KVCacheSpec: page sizes and per-request memory bounds of each spec kind (SEMANTICS §4.1).
// One struct with a kind replaces vLLM's spec class hierarchy; the kind decides the memory bound.

#include "attnrt/kv/kv_cache_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "attnrt/core/checked_math.h"
#include "attnrt/kv/state_blocks.h"
#include "byte_text.h"
#include "core/fail.h"

namespace attnrt {
namespace {

std::int64_t cdiv(std::int64_t a, std::int64_t b) {
  if (b <= 0) fail("KV cache spec: block size {} must be positive", b);  // never divide by 0
  return (a + b - 1) / b;
}

// Page and memory sizes are products of config values: any of them may not fit 64 bits.
template <typename... Factors>
std::int64_t checked_bytes(std::string_view what, Factors... factors) {
  return checked_cast<std::int64_t>(checked_product(what, factors...), what);
}

void require_positive(int value, std::string_view what, KVSpecKind kind) {
  if (value <= 0) {
    fail("{} KV cache spec: {} must be positive, got {}", attention_type_name(kind), what, value);
  }
}

// The fields every attention kind shares; head_size_v < 0 means "same as head_size".
KVCacheSpec attention_spec(KVSpecKind kind, int block_size, int num_kv_heads, int head_size,
                           DType dtype, int head_size_v) {
  require_positive(block_size, "block_size", kind);
  require_positive(num_kv_heads, "num_kv_heads", kind);
  require_positive(head_size, "head_size", kind);
  KVCacheSpec spec;
  spec.kind = kind;
  spec.block_size = block_size;
  spec.num_kv_heads = num_kv_heads;
  spec.head_size = head_size;
  spec.head_size_v = head_size_v < 0 ? head_size : head_size_v;
  spec.dtype = dtype;
  (void)spec.real_page_size_bytes();  // refuses a page that does not fit 64 bits, now
  return spec;
}

}  // namespace

KVCacheSpec KVCacheSpec::full(int block_size, int num_kv_heads, int head_size, DType dtype,
                              int head_size_v) {
  return attention_spec(KVSpecKind::full, block_size, num_kv_heads, head_size, dtype, head_size_v);
}

KVCacheSpec KVCacheSpec::sliding(int block_size, int num_kv_heads, int head_size, DType dtype,
                                 int sliding_window, int head_size_v) {
  KVCacheSpec spec = attention_spec(KVSpecKind::sliding_window, block_size, num_kv_heads, head_size,
                                    dtype, head_size_v);
  require_positive(sliding_window, "sliding_window", spec.kind);
  spec.sliding_window = sliding_window;
  return spec;
}

KVCacheSpec KVCacheSpec::chunked_local(int block_size, int num_kv_heads, int head_size, DType dtype,
                                       int attention_chunk_size, int head_size_v) {
  KVCacheSpec spec = attention_spec(KVSpecKind::chunked_local, block_size, num_kv_heads, head_size,
                                    dtype, head_size_v);
  require_positive(attention_chunk_size, "attention_chunk_size", spec.kind);
  spec.attention_chunk_size = attention_chunk_size;
  return spec;
}

KVCacheSpec KVCacheSpec::mla(int block_size, int head_size, DType dtype, int alignment) {
  // One latent vector per token: a single "head" and no separate V.
  KVCacheSpec spec = attention_spec(KVSpecKind::mla, block_size, 1, head_size, dtype, 0);
  if (alignment < 0) fail("mla KV cache spec: alignment must be >= 0, got {}", alignment);
  const std::int64_t real = spec.real_page_size_bytes();
  std::int64_t aligned = real;
  if (alignment > 0) {
    const std::int64_t units = real / alignment + (real % alignment != 0 ? 1 : 0);
    aligned =
        checked_bytes("mla KV cache page bytes rounded up to the alignment", units, alignment);
  }
  // Padded only when the rounding changes the size, so equal pages give equal specs.
  if (aligned != real) spec.page_size_padded = aligned;
  return spec;
}

KVCacheSpec KVCacheSpec::cross(int block_size, int num_kv_heads, int head_size, DType dtype,
                               int head_size_v) {
  return attention_spec(KVSpecKind::cross, block_size, num_kv_heads, head_size, dtype, head_size_v);
}

KVCacheSpec KVCacheSpec::state(KVSpecKind kind, int block_size,
                               std::vector<StateTensor> state_tensors, int num_speculative_blocks) {
  KVCacheSpec spec;
  spec.kind = kind;
  if (!spec.is_state()) fail("{} is not a state kind of KV cache spec", attention_type_name(kind));
  require_positive(block_size, "block_size", kind);
  if (state_tensors.empty()) fail("{} KV cache spec: no state tensors", attention_type_name(kind));
  if (num_speculative_blocks < 0) {
    fail("{} KV cache spec: num_speculative_blocks must not be negative, got {}",
         attention_type_name(kind), num_speculative_blocks);
  }
  spec.block_size = block_size;
  spec.num_kv_heads = 1;  // one head slot of one state: the whole page
  spec.head_size_v = 0;
  spec.dtype = DType::int8;  // the page as bytes; the tensors carry their own dtypes
  spec.state_tensors = std::move(state_tensors);
  spec.num_speculative_blocks = num_speculative_blocks;
  if (spec.real_page_size_bytes() <= 0)
    fail("{} KV cache spec: empty state", attention_type_name(kind));
  return spec;
}

// tokens_per_state 1 (the usual case) gives one state per token; > 1 compresses several tokens
// into one state. A block always holds at least one state.
int KVCacheSpec::num_kernel_states(int tokens) const {
  if (is_state() || tokens_per_state <= 0) return 1;
  return std::max(1, tokens / tokens_per_state);
}

std::int64_t KVCacheSpec::state_content_size_bytes() const {
  if (is_state()) return state_page_bytes(state_tensors);
  if (state_content_bytes > 0) return state_content_bytes;
  const std::int64_t entries = static_cast<std::int64_t>(head_size) + head_size_v;
  return checked_bytes("KV cache state bytes ((head_size + head_size_v) x dtype bytes)", entries,
                       dtype_size(dtype));
}

std::int64_t KVCacheSpec::real_page_size_bytes() const {
  return checked_bytes(
      "KV cache page bytes (head slots x states per block x (head_size + head_size_v) x dtype "
      "bytes)",
      num_heads(), num_states(), state_content_size_bytes());
}

std::int64_t KVCacheSpec::page_size_bytes() const {
  const std::int64_t real = real_page_size_bytes();
  if (!page_size_padded) return real;
  if (*page_size_padded < real) {
    fail("{}: page_size_padded {} is smaller than the real page {}; pad to at least {}",
         attention_type_name(kind), *page_size_padded, real, real);
  }
  return *page_size_padded;
}

// Tokens in flight per request are bounded by the scheduler's token budget per step.
std::int64_t KVCacheSpec::max_memory_usage_bytes(const EngineConfig& config) const {
  const std::int64_t page = page_size_bytes();
  const std::int64_t max_model_len = config.model.max_model_len;
  const std::int64_t in_flight = config.scheduler.max_num_batched_tokens;
  constexpr std::string_view what = "KV cache bytes per request (blocks x page bytes)";
  switch (kind) {
    case KVSpecKind::full:
    case KVSpecKind::mla:
      return checked_bytes(what, cdiv(max_model_len, block_size), page);
    case KVSpecKind::sliding_window: {
      // The window plus this step's tokens, and one more block as the window slides across.
      const std::int64_t tokens = std::min(sliding_window - 1 + in_flight, max_model_len);
      return checked_bytes(what, cdiv(tokens, block_size) + 1, page);
    }
    case KVSpecKind::chunked_local: {
      const std::int64_t tokens = std::min(attention_chunk_size + in_flight, max_model_len);
      return checked_bytes(what, cdiv(tokens, block_size), page);
    }
    case KVSpecKind::cross:
      return checked_bytes(what, cdiv(config.model.max_encoder_len, block_size), page);
    case KVSpecKind::encoder_only:
      return 0;
    case KVSpecKind::mamba:
    case KVSpecKind::linear_attention:
      // One block ("none") or two ("align"), and one per draft token.
      return checked_bytes(what,
                           state_blocks_per_request(effective_mamba_cache_mode(config.cache),
                                                    num_speculative_blocks),
                           page);
  }
  return 0;
}

std::int64_t KVCacheSpec::max_num_blocks_per_req(int max_len) const {
  if (is_state()) return std::int64_t{1} + num_speculative_blocks;
  return cdiv(max_len, block_size);
}

KVCacheSpec KVCacheSpec::with_block_size(int new_block_size) const {
  if (new_block_size <= 0) {
    fail("{}: block size must be positive, got {}", describe(), new_block_size);
  }
  if (new_block_size == block_size) return *this;
  KVCacheSpec spec = *this;
  spec.block_size = new_block_size;
  if (is_state()) return spec;  // one request's state per block, whatever its token count
  if (is_padded()) {
    // A kernel block is a dense slice of a padded page (the padding stays between manager
    // blocks, see KernelBlockGeometry). Growing would move padding into the page: refused.
    if (new_block_size > block_size || block_size % new_block_size != 0) {
      fail(
          "{}: a padded page can only be split into kernel blocks that divide its {} tokens, "
          "not resized to {}",
          describe(), block_size, new_block_size);
    }
    spec.page_size_padded.reset();
    return spec;
  }
  if (spec.page_size_padded) spec.page_size_padded = spec.real_page_size_bytes();
  return spec;
}

std::string KVCacheSpec::describe() const {
  if (is_state()) {
    std::string text = fmt::format("{}(block {}, state", attention_type_name(kind), block_size);
    for (std::size_t i = 0; i < state_tensors.size(); ++i) {
      text += fmt::format("{} {}", i == 0 ? "" : " +", state_tensors[i].describe());
    }
    if (num_speculative_blocks > 0)
      text += fmt::format(", {} draft blocks", num_speculative_blocks);
    text += fmt::format(", page {}", detail::format_bytes(page_size_bytes()));
    if (is_padded()) {
      text += fmt::format(" padded from {}", detail::format_bytes(real_page_size_bytes()));
    }
    return text + ")";
  }
  std::string text = fmt::format("{}(block {}, kv_heads {}, head {}", attention_type_name(kind),
                                 block_size, num_kv_heads, head_size);
  if (kind != KVSpecKind::mla && head_size_v != head_size) {
    text += fmt::format(", head_v {}", head_size_v);
  }
  if (num_head_slots > 0) text += fmt::format(", head_slots {}", num_head_slots);
  if (tokens_per_state > 1) text += fmt::format(", tokens_per_state {}", tokens_per_state);
  if (state_content_bytes > 0) text += fmt::format(", state {} B", state_content_bytes);
  if (kind == KVSpecKind::sliding_window) text += fmt::format(", window {}", sliding_window);
  if (kind == KVSpecKind::chunked_local) text += fmt::format(", chunk {}", attention_chunk_size);
  text += fmt::format(", {}, page {}", dtype_name(dtype), detail::format_bytes(page_size_bytes()));
  if (is_padded()) {
    text += fmt::format(" padded from {}", detail::format_bytes(real_page_size_bytes()));
  }
  return text + ")";
}

std::size_t KVCacheSpecHash::operator()(const KVCacheSpec& spec) const {
  std::size_t seed = 0;
  auto mix = [&seed](std::int64_t value) {
    // boost::hash_combine's mixing step.
    seed ^= std::hash<std::int64_t>{}(value) + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
  };
  mix(static_cast<std::int64_t>(spec.kind));
  mix(spec.block_size);
  mix(spec.num_kv_heads);
  mix(spec.head_size);
  mix(spec.head_size_v);
  mix(static_cast<std::int64_t>(spec.dtype));
  mix(spec.page_size_padded.value_or(-1));
  mix(spec.num_head_slots);
  mix(spec.state_content_bytes);
  mix(spec.tokens_per_state);
  mix(spec.sliding_window);
  mix(spec.attention_chunk_size);
  for (const StateTensor& tensor : spec.state_tensors) {
    mix(static_cast<std::int64_t>(tensor.dtype));
    for (const std::int64_t extent : tensor.shape) mix(extent);
  }
  mix(spec.num_speculative_blocks);
  return seed;
}

}  // namespace attnrt
