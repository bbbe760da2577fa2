#pragma once
// The fixed vocabularies of the config file: the names the loader and the validator accept.

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/nearest_name.h"

namespace attnrt::detail {

// In AttentionType order, so that a type's name is kAttentionTypeNames[type].
inline constexpr std::array<std::string_view, 6> kAttentionTypeNames = {
    "full", "sliding_window", "chunked_local", "mla", "cross", "encoder_only"};

// The six KVCacheLayout names; the kv layer parses the chosen one into its enum.
inline constexpr std::array<std::string_view, 6> kKVCacheLayoutNames = {"LBHNC", "LBNHC", "LHBNC",
                                                                        "BLHNC", "BLNHC", "BHLNC"};

inline constexpr std::array<std::string_view, 5> kCUDAGraphModeNames = {
    "NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"};

inline constexpr std::array<std::string_view, 4> kCGSupportNames = {
    "NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS"};

// Backends a layer may name without declaring a profile. Stands in for the attention layer's
// backend registry until it exists; the registry will then answer this question instead.
// CUDA_PAGED, once listed here, never existed as a backend.
inline constexpr std::array<std::string_view, 8> kBuiltinBackendNames = {
    "CPU_REFERENCE",  "CPU_FLASH",  "FLASH_ATTN",  "FLASH_ATTN_FA2",
    "FLASH_ATTN_FA3", "FLASHINFER", "TRITON_ATTN", "FLASHMLA"};

bool contains_name(std::span<const std::string_view> names, std::string_view name);
std::optional<AttentionType> find_attention_type(std::string_view name);
// "a, b, c" for error messages.
std::string join_names(std::span<const std::string_view> names);
// `"<name>" is not <what>; did you mean "<nearest>"? (one of a, b, c)`, or `...; use one of ...`
// when no name is close: the message for a value outside a fixed vocabulary.
std::string unknown_name_message(std::string_view name, std::string_view what,
                                 std::span<const std::string_view> names);

}  // namespace attnrt::detail
