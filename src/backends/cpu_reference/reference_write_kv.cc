// write_kv of the reference backend: every token's K and V (MLA: its latent vector) go to the
// kernel slot its slot mapping names, rounded to the cache dtype; PAD_SLOT_ID tokens are skipped.

#include "../cpu_backend_checks.h"
#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/core/error.h"
#include "paged_kv_cache.h"
#include "reference_kernels.h"

namespace attnrt::cpu_reference {
namespace {

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
  backend_checks::check_write(
      "CPU_REFERENCE", args, content.key_size, content.value_size,
      {cache.num_kernel_blocks(), cache.kernel_block_size(), cache.dtype()});
  const int num_tokens = args.key.num_tokens;

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
