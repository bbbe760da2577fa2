#pragma once
// KVCacheLayout: the physical order of the five logical axes of a KV cache (SEMANTICS §3.5):
// L (layer slot), B (block), H (head slot), N (state within a block), C (content bytes). A config
// value (cache.layout), so it lives in the config layer; kv/ lays caches out by it.

#include <array>
#include <span>
#include <string>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

enum class KVCacheLayout { LBHNC, LBNHC, LHBNC, BLHNC, BLNHC, BHLNC };

namespace kv_axis {
inline constexpr int L = 0, B = 1, H = 2, N = 3, C = 4;
}

ATTNRT_API std::string_view layout_name(KVCacheLayout layout);
// "LBHNC, BLHNC": a list of layouts for messages.
ATTNRT_API std::string layout_names(std::span<const KVCacheLayout> layouts);
// Throws Error naming the text and the six valid names.
ATTNRT_API KVCacheLayout parse_kv_cache_layout(std::string_view name);
inline constexpr std::array<KVCacheLayout, 6> kAllLayouts = {
    KVCacheLayout::LBHNC, KVCacheLayout::LBNHC, KVCacheLayout::LHBNC,
    KVCacheLayout::BLHNC, KVCacheLayout::BLNHC, KVCacheLayout::BHLNC};
// Their names, in kAllLayouts order: the spelling the config file uses.
inline constexpr std::array<std::string_view, 6> kKVCacheLayoutNames = {"LBHNC", "LBNHC", "LHBNC",
                                                                        "BLHNC", "BLNHC", "BHLNC"};

// For each physical position (outermost first), the logical axis stored there.
ATTNRT_API std::array<int, 5> stride_order(KVCacheLayout layout);
// The stride order of a layer's 4-D view [B, H, N, C] (L removed, indices shifted down).
ATTNRT_API std::array<int, 4> layer_view_order(KVCacheLayout layout);
ATTNRT_API bool is_layer_compact(KVCacheLayout layout);  // L outermost
ATTNRT_API bool is_block_contiguous(
    KVCacheLayout layout);                               // the last three physical axes are H, N, C
ATTNRT_API bool is_block_compact(KVCacheLayout layout);  // the first two physical axes are {L, B}
ATTNRT_API bool is_block_outermost(KVCacheLayout layout);  // B outermost

}  // namespace attnrt
