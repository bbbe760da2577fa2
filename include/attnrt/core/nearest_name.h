#pragma once
// "Did you mean …?": the candidate a mistyped name most likely meant, for the messages of config
// keys, vocabularies and CLI commands alike.

#include <span>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

// The candidate within a small edit distance of `name` (case-insensitive; about one edit per four
// characters), or an empty view when none is that close.
ATTNRT_API std::string_view nearest_name(std::string_view name,
                                         std::span<const std::string_view> candidates);

}  // namespace attnrt
