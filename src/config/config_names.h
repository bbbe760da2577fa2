#pragma once
// Helpers for the config file's fixed vocabularies. Each list of names lives with its concept:
// kAttentionTypeNames (engine_config.h), kKVCacheLayoutNames, kCUDAGraphModeNames, kCGSupportNames.

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/nearest_name.h"

namespace attnrt::detail {

bool contains_name(std::span<const std::string_view> names, std::string_view name);
std::optional<AttentionType> find_attention_type(std::string_view name);
// "a, b, c" for error messages.
std::string join_names(std::span<const std::string_view> names);
// `"<name>" is not <what>; did you mean "<nearest>"? (one of a, b, c)`, or `...; use one of ...`
// when no name is close: the message for a value outside a fixed vocabulary.
std::string unknown_name_message(std::string_view name, std::string_view what,
                                 std::span<const std::string_view> names);

}  // namespace attnrt::detail
