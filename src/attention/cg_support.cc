#include "attnrt/attention/cg_support.h"

#include <array>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

constexpr std::array<std::string_view, 4> kNames = {"NEVER", "UNIFORM_SINGLE_TOKEN_DECODE",
                                                    "UNIFORM_BATCH", "ALWAYS"};

}  // namespace

std::string_view cg_support_name(AttentionCGSupport support) {
  return kNames.at(static_cast<std::size_t>(support));
}

std::string cg_support_qualified_name(AttentionCGSupport support) {
  return "AttentionCGSupport." + std::string(cg_support_name(support));
}

AttentionCGSupport parse_cg_support(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<AttentionCGSupport>(i);
  }
  fail(
      "unknown CUDA-graph support level \"{}\"; expected one of NEVER, "
      "UNIFORM_SINGLE_TOKEN_DECODE, UNIFORM_BATCH, ALWAYS",
      name);
}

}  // namespace attnrt
