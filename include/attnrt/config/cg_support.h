#pragma once
// AttentionCGSupport: how much of a batch a backend's metadata builder can serve from a FULL CUDA
// graph (SEMANTICS §1.1). Ordered: a smaller value is weaker.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

struct SpeculativeConfig;

enum class AttentionCGSupport : int {
  NEVER = 0,                        // no FULL graphs at all
  UNIFORM_SINGLE_TOKEN_DECODE = 1,  // pure decode, one token per request
  UNIFORM_BATCH = 2,                // every request has the same query length (spec-decode verify)
  ALWAYS = 3,                       // any batch, mixed prefill and decode included
};

// In value order; kCGSupportNames spells them.
inline constexpr std::array<AttentionCGSupport, 4> kAllCGSupports = {
    AttentionCGSupport::NEVER, AttentionCGSupport::UNIFORM_SINGLE_TOKEN_DECODE,
    AttentionCGSupport::UNIFORM_BATCH, AttentionCGSupport::ALWAYS};
inline constexpr std::array<std::string_view, 4> kCGSupportNames = {
    "NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS"};

constexpr bool weaker(AttentionCGSupport a, AttentionCGSupport b) {
  return static_cast<int>(a) < static_cast<int>(b);
}
// "UNIFORM_BATCH"
ATTNRT_API std::string_view cg_support_name(AttentionCGSupport support);
// "AttentionCGSupport.UNIFORM_BATCH", as vLLM prints it inside messages.
ATTNRT_API std::string cg_support_qualified_name(AttentionCGSupport support);
// Throws Error naming the text and the four valid names.
ATTNRT_API AttentionCGSupport parse_cg_support(std::string_view name);

// The query length of a decode step, 1 + num_speculative_tokens (vLLM's max_decode_query_len):
// uniform decode graphs and varlen bounds are sized by it. Throws Error naming
// speculative.num_speculative_tokens when it is negative or 1 + it does not fit an int.
ATTNRT_API int max_decode_query_len(const SpeculativeConfig& speculative);

}  // namespace attnrt
