#include "attnrt/config/cg_support.h"

#include <fmt/ranges.h>

#include <array>
#include <cstdint>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {

std::string_view cg_support_name(AttentionCGSupport support) {
  return kCGSupportNames.at(static_cast<std::size_t>(support));
}

std::string cg_support_qualified_name(AttentionCGSupport support) {
  return "AttentionCGSupport." + std::string(cg_support_name(support));
}

AttentionCGSupport parse_cg_support(std::string_view name) {
  for (std::size_t i = 0; i < kCGSupportNames.size(); ++i) {
    if (kCGSupportNames[i] == name) return static_cast<AttentionCGSupport>(i);
  }
  fail("unknown CUDA-graph support level \"{}\"; expected one of {}", name,
       fmt::join(kCGSupportNames, ", "));
}

int max_decode_query_len(const SpeculativeConfig& speculative) {
  const int drafts = speculative.num_speculative_tokens;
  if (drafts < 0) {
    fail("speculative.num_speculative_tokens: must not be negative (got {}); use 0 for no drafts",
         drafts);
  }
  constexpr std::string_view what = "decode query length (1 + speculative.num_speculative_tokens)";
  return checked_cast<int>(checked_add(1, static_cast<std::uint64_t>(drafts), what), what);
}

}  // namespace attnrt
