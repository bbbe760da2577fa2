// Layers to KV cache groups (SEMANTICS §4.3, vLLM's hybrid grouping). Layers with equal specs
// share one group. Otherwise every page is made as large as the largest one (a smaller page gets
// a proportionally larger block), layers are bucketed by spec, and big buckets are split
// round-robin into groups of about the smallest bucket's size, so that one block id addresses the
// same bytes in every group and the layer slots of the backing stay few.

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "attnrt/core/checked_math.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "byte_text.h"
#include "core/fail.h"

namespace attnrt {
namespace {

using detail::format_bytes;

struct Bucket {
  KVCacheSpec spec;
  std::vector<std::string> layers;  // execution order
};

bool all_specs_equal(const LayerSpecs& specs) {
  return std::all_of(specs.begin(), specs.end(),
                     [&](const auto& entry) { return entry.second == specs.front().second; });
}

// Grows the block size of every layer whose page is smaller than the largest page until the pages
// match; a smaller state page is padded instead. Throws when an attention page does not divide
// the largest one or cannot grow (padded pages).
LayerSpecs unify_page_sizes(LayerSpecs specs) {
  const auto largest =
      std::max_element(specs.begin(), specs.end(), [](const auto& a, const auto& b) {
        return a.second.page_size_bytes() < b.second.page_size_bytes();
      });
  const std::string largest_layer = largest->first;
  const std::int64_t max_page = largest->second.page_size_bytes();
  for (auto& [layer, spec] : specs) {
    const std::int64_t page = spec.page_size_bytes();
    if (page == max_page) continue;
    if (page <= 0) fail("layer {} has an empty KV cache page ({})", layer, spec.describe());
    if (spec.is_state()) {
      spec.page_size_padded = max_page;  // a state page is one request's state: padded, as vLLM
      continue;
    }
    if (max_page % page != 0) {
      fail(
          "cannot unify page sizes: layer {} has a {} page ({}), which does not divide the {} "
          "page of layer {}; choose block or head sizes whose pages divide each other",
          layer, format_bytes(page), spec.describe(), format_bytes(max_page), largest_layer);
    }
    if (spec.is_padded()) {
      fail(
          "cannot unify page sizes: layer {} has a padded {} page ({}), smaller than the {} page "
          "of layer {}, and a padded page cannot grow its block size; pad it to {} instead",
          layer, format_bytes(page), spec.describe(), format_bytes(max_page), largest_layer,
          max_page);
    }
    // The product may pass 64 bits before the int check, so it is done in checked steps.
    const std::uint64_t block_size =
        checked_mul(static_cast<std::uint64_t>(spec.block_size),
                    static_cast<std::uint64_t>(max_page / page), "unified block size");
    if (block_size > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      fail("cannot unify page sizes: layer {} would need a block of {} tokens", layer, block_size);
    }
    KVCacheSpec grown = spec.with_block_size(static_cast<int>(block_size));
    if (grown.page_size_bytes() != max_page) {
      fail(
          "cannot unify page sizes: layer {} ({}) reaches a {} page, not the {} page of layer {}, "
          "with block size {}; use a block size that is a multiple of tokens_per_state",
          layer, spec.describe(), format_bytes(grown.page_size_bytes()), format_bytes(max_page),
          largest_layer, block_size);
    }
    spec = std::move(grown);
  }
  return specs;
}

// Layers bucketed by identical spec, buckets in first-seen order. A hash map finds a layer's
// bucket, since a model may hold as many distinct specs as layers.
std::vector<Bucket> bucket_by_spec(const LayerSpecs& specs) {
  std::vector<Bucket> buckets;
  std::unordered_map<KVCacheSpec, std::size_t, KVCacheSpecHash> bucket_of_spec;
  for (const auto& [layer, spec] : specs) {
    const auto [it, added] = bucket_of_spec.try_emplace(spec, buckets.size());
    if (added) buckets.push_back(Bucket{spec, {}});
    buckets[it->second].layers.push_back(layer);
  }
  return buckets;
}

// The smallest bucket's size, or the largest one's when all buckets are within 1.5× of each other
// (then padding the smaller buckets wastes less than splitting the larger ones).
std::size_t group_size_for(const std::vector<Bucket>& buckets) {
  const auto [smallest, largest] = std::minmax_element(
      buckets.begin(), buckets.end(),
      [](const Bucket& a, const Bucket& b) { return a.layers.size() < b.layers.size(); });
  const std::size_t min_layers = smallest->layers.size();
  const std::size_t max_layers = largest->layers.size();
  return 2 * max_layers < 3 * min_layers ? max_layers : min_layers;
}

// Splits a bucket into cdiv(size, group_size) groups; group k takes layers k, k + n, k + 2n, ...
// (round-robin keeps the layers of a pipeline stage spread over the groups).
void append_split_groups(const Bucket& bucket, std::size_t group_size,
                         std::vector<KVCacheGroupSpec>& groups) {
  const std::size_t num_groups = (bucket.layers.size() + group_size - 1) / group_size;
  for (std::size_t k = 0; k < num_groups; ++k) {
    KVCacheGroupSpec group{{}, bucket.spec};
    for (std::size_t i = k; i < bucket.layers.size(); i += num_groups) {
      group.layer_names.push_back(bucket.layers[i]);
    }
    groups.push_back(std::move(group));
  }
}

}  // namespace

std::vector<KVCacheGroupSpec> get_kv_cache_groups(const LayerSpecs& specs) {
  LayerSpecs owning;
  for (const auto& entry : specs) {
    if (entry.second.owns_kv_cache()) owning.push_back(entry);
  }
  if (owning.empty()) return {};
  if (all_specs_equal(owning)) {
    KVCacheGroupSpec group{{}, owning.front().second};
    for (const auto& entry : owning) group.layer_names.push_back(entry.first);
    return {std::move(group)};
  }
  const std::vector<Bucket> buckets = bucket_by_spec(unify_page_sizes(std::move(owning)));
  const std::size_t group_size = group_size_for(buckets);
  std::vector<KVCacheGroupSpec> groups;
  for (const Bucket& bucket : buckets) append_split_groups(bucket, group_size, groups);
  return groups;
}

}  // namespace attnrt
