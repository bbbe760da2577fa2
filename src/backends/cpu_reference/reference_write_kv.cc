// write_kv of the reference backend: every token's K and V (MLA: its latent vector) go to the
// kernel slot its slot mapping names, rounded to the cache dtype; PAD_SLOT_ID tokens are skipped.

#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/core/error.h"
#include "paged_kv_cache.h"
#include "reference_kernels.h"

namespace attnrt::cpu_reference {
namespace {

void check_activation(const ActivationView& view, std::string_view what, int num_tokens,
                      int num_heads, int head_size) {
  if (view.data == nullptr && num_tokens > 0) {
    fail("CPU_REFERENCE write_kv: {} has no data for {} tokens", what, num_tokens);
  }
  if (view.num_tokens < num_tokens || view.num_heads != num_heads || view.head_size != head_size) {
    fail(
        "CPU_REFERENCE write_kv: {} has {} tokens x {} heads x {} entries, but the layer writes {} "
        "tokens x {} KV heads x {} entries",
        what, view.num_tokens, view.num_heads, view.head_size, num_tokens, num_heads, head_size);
  }
}

void check_inputs(const KVWriteArgs& args, const ContentLayout& content) {
  const int num_tokens = args.key.num_tokens;
  check_activation(args.key, "key", num_tokens, args.shape.num_kv_heads, content.key_size);
  if (args.shape.type != AttentionType::mla) {
    check_activation(args.value, "value", num_tokens, args.shape.num_kv_heads, content.value_size);
  }
  if (args.slot_mapping.size() < static_cast<std::size_t>(num_tokens)) {
    fail("CPU_REFERENCE write_kv: the slot mapping has {} entries for {} tokens",
         args.slot_mapping.size(), num_tokens);
  }
}

// All slots are checked before any is written, so a bad mapping leaves the cache unchanged.
void check_slots(std::span<const std::int64_t> slot_mapping, int num_tokens,
                 const PagedKVCache& cache) {
  for (int t = 0; t < num_tokens; ++t) {
    const std::int64_t slot = slot_mapping[t];
    if (slot == PAD_SLOT_ID) continue;
    if (slot < 0 || slot >= cache.num_slots()) {
      fail(
          "CPU_REFERENCE write_kv: token {} has slot {}, outside the {} slots of the KV cache "
          "view ({}); slot mappings hold kernel slots (block * kernel block size + offset) or "
          "PAD_SLOT_ID (-1)",
          t, slot, cache.num_slots(), cache.describe());
    }
  }
}

void store_row(const float* row, int size, const PagedKVCache& cache, std::int64_t slot, int head,
               int first_entry) {
  for (int i = 0; i < size; ++i) {
    store_from_float(cache.dtype(), cache.entry(slot, head, first_entry + i), row[i]);
  }
}

}  // namespace

void write_kv(const KVWriteArgs& args) {
  const PagedKVCache cache(args.kv_cache, args.shape, "write_kv");
  const ContentLayout& content = cache.content();
  check_inputs(args, content);
  const int num_tokens = args.key.num_tokens;
  check_slots(args.slot_mapping, num_tokens, cache);

  const bool writes_value = args.shape.type != AttentionType::mla;
  for (int t = 0; t < num_tokens; ++t) {
    const std::int64_t slot = args.slot_mapping[t];
    if (slot == PAD_SLOT_ID) continue;
    for (int h = 0; h < args.shape.num_kv_heads; ++h) {
      store_row(args.key.row(t, h), content.key_size, cache, slot, h, content.key_offset);
      if (writes_value) {
        store_row(args.value.row(t, h), content.value_size, cache, slot, h, content.value_offset);
      }
    }
  }
}

}  // namespace attnrt::cpu_reference
