// vLLM's hybrid block-size alignment for the "none" and "align" state cache modes (SEMANTICS §4.4):
// block = align · cdiv(state page, align · attention bytes per token), then the state page is
// padded to block × attention bytes per token.

#include "attnrt/kv/hybrid_block_size.h"

#include <fmt/format.h>

#include <algorithm>

#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {
namespace {

std::int64_t cdiv(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

bool is_attention(const KVCacheSpec& spec) {
  return spec.owns_kv_cache() && !spec.is_state();
}

// Bytes of one token of an attention layer: its page at block size 1, unpadded (vLLM sizes an
// attention spec of block_size=1).
std::int64_t bytes_per_token(const KVCacheSpec& spec) {
  return spec.with_block_size(1).real_page_size_bytes();
}

// The spec at the aligned block size, with a state page padded to `page_bytes`.
KVCacheSpec aligned_spec(const KVCacheSpec& spec, const HybridBlockSize& aligned) {
  KVCacheSpec result = spec.with_block_size(aligned.block_size);
  if (!spec.is_state()) return result;
  result.page_size_padded.reset();
  if (aligned.page_size_bytes != result.real_page_size_bytes()) {
    result.page_size_padded = aligned.page_size_bytes;
  }
  return result;
}

}  // namespace

std::optional<std::string> HybridBlockSize::block_size_message() const {
  if (!raised()) return std::nullopt;
  return fmt::format(
      "Setting attention block size to {} tokens to ensure that attention page size is >= mamba "
      "page size.",
      block_size);
}

std::optional<std::string> HybridBlockSize::padding_message() const {
  if (padding_bytes() == 0) return std::nullopt;
  return fmt::format(
      "Padding mamba page size by {:.2f}% to ensure that mamba page size and attention page size "
      "are exactly equal.",
      100.0 * static_cast<double>(padding_bytes()) / static_cast<double>(state_page_bytes));
}

HybridBlockSize align_hybrid_block_size(int requested_block_size, int kernel_alignment,
                                        std::int64_t attention_bytes_per_token,
                                        std::int64_t state_page_bytes) {
  if (requested_block_size < 1 || kernel_alignment < 1) {
    fail("hybrid block size: block size {} and kernel alignment {} must be positive",
         requested_block_size, kernel_alignment);
  }
  if (attention_bytes_per_token < 1 || state_page_bytes < 1) {
    fail(
        "hybrid block size: attention bytes per token ({}) and state page bytes ({}) must be "
        "positive",
        attention_bytes_per_token, state_page_bytes);
  }
  HybridBlockSize result;
  result.requested_block_size = requested_block_size;
  result.alignment = std::max(kernel_alignment, requested_block_size);
  result.attention_bytes_per_token = attention_bytes_per_token;
  result.state_page_bytes = state_page_bytes;
  const std::uint64_t grain_bytes =
      checked_mul(static_cast<std::uint64_t>(result.alignment),
                  static_cast<std::uint64_t>(attention_bytes_per_token), "hybrid attention page");
  const std::uint64_t blocks = static_cast<std::uint64_t>(
      cdiv(state_page_bytes, checked_cast<std::int64_t>(grain_bytes, "hybrid attention page")));
  const std::uint64_t aligned =
      checked_mul(blocks, static_cast<std::uint64_t>(result.alignment), "hybrid block size");
  result.block_size =
      std::max(requested_block_size, checked_cast<int>(aligned, "hybrid block size"));
  result.page_size_bytes = checked_cast<std::int64_t>(
      checked_mul(static_cast<std::uint64_t>(result.block_size),
                  static_cast<std::uint64_t>(attention_bytes_per_token), "hybrid page bytes"),
      "hybrid page bytes");
  return result;
}

std::optional<HybridBlockSize> align_hybrid_kv_cache_specs(LayerSpecs& specs,
                                                           int kernel_alignment) {
  std::int64_t attention_bytes = 0;
  std::int64_t state_bytes = 0;
  int requested = 0;
  for (const auto& [layer, spec] : specs) {
    try {
      if (spec.is_state()) {
        state_bytes = std::max(state_bytes, spec.real_page_size_bytes());
      } else if (is_attention(spec)) {
        attention_bytes = std::max(attention_bytes, bytes_per_token(spec));
        requested = std::max(requested, spec.block_size);
      }
    } catch (const Error& error) {
      fail("layer {}: {}", layer, error.what());
    }
  }
  if (attention_bytes == 0 || state_bytes == 0) return std::nullopt;
  const HybridBlockSize aligned =
      align_hybrid_block_size(requested, kernel_alignment, attention_bytes, state_bytes);
  LayerSpecs result = specs;  // all or nothing: an error leaves `specs` as it was
  for (auto& [layer, spec] : result) {
    if (!spec.owns_kv_cache()) continue;
    try {
      spec = aligned_spec(spec, aligned);
    } catch (const Error& error) {
      fail("layer {}: hybrid block size {}: {}", layer, aligned.block_size, error.what());
    }
  }
  specs = std::move(result);
  return aligned;
}

}  // namespace attnrt
