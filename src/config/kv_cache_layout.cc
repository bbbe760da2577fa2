// The six physical orders of a KV cache's [L, B, H, N, C] axes and their properties (SEMANTICS
// §3.5).

#include "attnrt/config/kv_cache_layout.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "core/fail.h"

namespace attnrt {

std::string_view layout_name(KVCacheLayout layout) {
  const auto index = static_cast<std::size_t>(layout);
  if (index >= kKVCacheLayoutNames.size()) fail("unknown KVCacheLayout value {}", index);
  return kKVCacheLayoutNames[index];
}

std::string layout_names(std::span<const KVCacheLayout> layouts) {
  std::string names;
  for (KVCacheLayout layout : layouts) {
    if (!names.empty()) names += ", ";
    names += layout_name(layout);
  }
  return names;
}

KVCacheLayout parse_kv_cache_layout(std::string_view name) {
  // Case-insensitive, so that "lbnhc" from an environment variable or a config also resolves.
  const auto same = [name](std::string_view candidate) {
    return std::ranges::equal(name, candidate, [](char a, char b) {
      return std::toupper(static_cast<unsigned char>(a)) == b;
    });
  };
  for (KVCacheLayout layout : kAllLayouts) {
    if (same(layout_name(layout))) return layout;
  }
  fail("unknown KV cache layout '{}'; valid layouts are {}", name,
       fmt::join(kKVCacheLayoutNames, ", "));
}

std::array<int, 5> stride_order(KVCacheLayout layout) {
  using namespace kv_axis;
  switch (layout) {
    case KVCacheLayout::LBHNC:
      return {L, B, H, N, C};
    case KVCacheLayout::LBNHC:
      return {L, B, N, H, C};
    case KVCacheLayout::LHBNC:
      return {L, H, B, N, C};
    case KVCacheLayout::BLHNC:
      return {B, L, H, N, C};
    case KVCacheLayout::BLNHC:
      return {B, L, N, H, C};
    case KVCacheLayout::BHLNC:
      return {B, H, L, N, C};
  }
  fail("unknown KVCacheLayout value {}", static_cast<int>(layout));
}

std::array<int, 4> layer_view_order(KVCacheLayout layout) {
  std::array<int, 4> order{};
  int position = 0;
  for (int axis : stride_order(layout)) {
    if (axis != kv_axis::L) order[position++] = axis - 1;
  }
  return order;
}

bool is_layer_compact(KVCacheLayout layout) {
  return stride_order(layout)[0] == kv_axis::L;
}

bool is_block_contiguous(KVCacheLayout layout) {
  const std::array<int, 5> order = stride_order(layout);
  return order[2] == kv_axis::H && order[3] == kv_axis::N && order[4] == kv_axis::C;
}

bool is_block_compact(KVCacheLayout layout) {
  const std::array<int, 5> order = stride_order(layout);
  return std::min(order[0], order[1]) == kv_axis::L && std::max(order[0], order[1]) == kv_axis::B;
}

bool is_block_outermost(KVCacheLayout layout) {
  return stride_order(layout)[0] == kv_axis::B;
}

}  // namespace attnrt
