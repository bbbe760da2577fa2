#include "cpu_backend_checks.h"

#include <span>

#include "core/fail.h"

namespace attnrt::backend_checks {
namespace {

void check_rows(std::string_view backend, const ActivationView& view, std::string_view what,
                int num_heads, int head_size) {
  if (view.num_heads != num_heads || view.head_size != head_size) {
    fail("{} forward: {} rows have {} heads x {} entries, but the layer needs {} x {}", backend,
         what, view.num_heads, view.head_size, num_heads, head_size);
  }
}

void check_write_activation(std::string_view backend, const ActivationView& view,
                            std::string_view what, int num_tokens, int num_heads, int head_size) {
  if (view.data == nullptr && num_tokens > 0) {
    fail("{} write_kv: {} has no data for {} tokens", backend, what, num_tokens);
  }
  if (view.num_tokens < num_tokens || view.num_heads != num_heads || view.head_size != head_size) {
    fail(
        "{} write_kv: {} has {} tokens x {} heads x {} entries, but the layer writes {} tokens x "
        "{} KV heads x {} entries",
        backend, what, view.num_tokens, view.num_heads, view.head_size, num_tokens, num_heads,
        head_size);
  }
}

}  // namespace

void check_cache_view(std::string_view backend, std::string_view kernel, const Tensor& view,
                      const AttentionShape& shape, std::int64_t stored_size,
                      bool contiguous_content) {
  if (shape.type == AttentionType::encoder_only) {
    fail(
        "{} {}: encoder_only attention keeps no KV cache, and the kernel arguments carry keys "
        "only through the cache; choose another backend for encoder-only layers",
        backend, kernel);
  }
  if (!view.defined() || view.dim() != 4) {
    fail(
        "{} {}: the KV cache must be a layer's 4-D view [kernel blocks, head slots, states, "
        "content], got {}; bind the layer's cache before running it",
        backend, kernel, view.defined() ? view.describe() : std::string("no tensor"));
  }
  if (!view.device().is_cpu()) {
    fail("{} {}: the KV cache lives on {}, but this backend reads host memory", backend, kernel,
         view.device().str());
  }
  if (!is_floating(view.dtype())) {
    fail(
        "{} {}: KV cache dtype {} is not a floating type; use float32, float16, bfloat16 or "
        "fp8_e4m3",
        backend, kernel, dtype_name(view.dtype()));
  }
  if (contiguous_content && view.size(3) > 1 && view.stride(3) != 1) {
    fail(
        "{} {}: the KV cache's content axis has stride {}; the kernels need K and V contiguous "
        "(every KVCacheLayout keeps content innermost)",
        backend, kernel, view.stride(3));
  }
  if (view.size(1) < shape.num_kv_heads) {
    fail("{} {}: the KV cache has {} head slots but the layer has {} KV heads", backend, kernel,
         view.size(1), shape.num_kv_heads);
  }
  if (view.size(3) < stored_size) {
    fail(
        "{} {}: the KV cache stores {} content entries per head and token, but the layer needs "
        "{} (head_size {}, head_size_v {})",
        backend, kernel, view.size(3), stored_size, shape.head_size, shape.head_size_v);
  }
}

void check_write(std::string_view backend, const KVWriteArgs& args, int key_size, int value_size,
                 const CacheBlocks& cache) {
  const int num_tokens = args.key.num_tokens;
  const int heads = args.shape.num_kv_heads;
  check_write_activation(backend, args.key, "key", num_tokens, heads, key_size);
  if (args.shape.type != AttentionType::mla) {
    check_write_activation(backend, args.value, "value", num_tokens, heads, value_size);
  }
  if (args.slot_mapping.size() < static_cast<std::size_t>(num_tokens)) {
    fail("{} write_kv: the slot mapping has {} entries for {} tokens", backend,
         args.slot_mapping.size(), num_tokens);
  }
  const std::int64_t num_slots = cache.num_kernel_blocks * cache.kernel_block_size;
  for (int t = 0; t < num_tokens; ++t) {
    const std::int64_t slot = args.slot_mapping[t];
    if (slot == PAD_SLOT_ID) continue;
    if (slot < 0 || slot >= num_slots) {
      fail(
          "{} write_kv: token {} has slot {}, outside the {} slots of the KV cache view ({} "
          "kernel blocks of {} tokens, {}); slot mappings hold kernel slots (block * kernel "
          "block size + offset) or PAD_SLOT_ID (-1)",
          backend, t, slot, num_slots, cache.num_kernel_blocks, cache.kernel_block_size,
          dtype_name(cache.dtype));
    }
  }
}

void check_forward_shape(std::string_view backend, const AttentionForwardArgs& args, int key_size,
                         int value_size) {
  const AttentionShape& shape = args.shape;
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0) {
    fail("{} forward: {} query heads do not divide into groups of {} KV heads", backend,
         shape.num_heads, shape.num_kv_heads);
  }
  const bool windowed =
      shape.type == AttentionType::sliding_window || shape.type == AttentionType::chunked_local;
  if (!args.metadata.common.causal && windowed) {
    fail("{} forward: {} attention is causal by definition, but the metadata says causal = false",
         backend, attention_type_name(shape.type));
  }
  if ((shape.type == AttentionType::sliding_window && shape.sliding_window <= 0) ||
      (shape.type == AttentionType::chunked_local && shape.attention_chunk_size <= 0)) {
    fail("{} forward: {} attention needs a positive window/chunk size, got {}/{}", backend,
         attention_type_name(shape.type), shape.sliding_window, shape.attention_chunk_size);
  }
  check_rows(backend, args.query, "query", shape.num_heads, key_size);
  check_rows(backend, args.output, "output", shape.num_heads, value_size);
}

void check_step_arrays(std::string_view backend, const CommonAttentionMetadata& common,
                       bool cross) {
  const auto num_reqs = static_cast<std::size_t>(common.num_reqs);
  if (common.num_reqs < 0 || common.query_start_loc.size() < num_reqs + 1 ||
      common.seq_lens.size() < num_reqs || common.block_table.num_rows < common.num_reqs) {
    fail(
        "{} forward: num_reqs {} needs query_start_loc of {} entries, seq_lens and block-table "
        "rows of {}; got {}, {} and {}",
        backend, common.num_reqs, num_reqs + 1, num_reqs, common.query_start_loc.size(),
        common.seq_lens.size(), common.block_table.num_rows);
  }
  if (cross && !common.encoder_seq_lens.empty() && common.encoder_seq_lens.size() < num_reqs) {
    fail("{} forward: encoder_seq_lens has {} entries for {} requests", backend,
         common.encoder_seq_lens.size(), num_reqs);
  }
  if (common.query_start_loc[0] != 0) {
    fail("{} forward: query_start_loc must start at 0, got {}", backend, common.query_start_loc[0]);
  }
}

void check_request(std::string_view backend, const AttentionShape& shape,
                   const CommonAttentionMetadata& common, int r, const RequestExtent& extent,
                   const CacheBlocks& cache) {
  if (extent.query_len < 0) {
    fail("{} forward: query_start_loc decreases at request {} ({} then {})", backend, r,
         extent.query_start, extent.query_start + extent.query_len);
  }
  if (extent.query_len == 0) return;  // padded or idle: nothing is read
  const bool cross = shape.type == AttentionType::cross;
  if (extent.kv_len < 0 || (!cross && extent.kv_len < extent.query_len)) {
    fail("{} forward: request {} has seq_len {} but {} query tokens", backend, r, extent.kv_len,
         extent.query_len);
  }
  const int num_blocks = (extent.kv_len + cache.kernel_block_size - 1) / cache.kernel_block_size;
  if (num_blocks > common.block_table.num_cols) {
    fail(
        "{} forward: request {} needs {} kernel blocks of {} tokens for {} keys, but the block "
        "table has {} columns",
        backend, r, num_blocks, cache.kernel_block_size, extent.kv_len,
        common.block_table.num_cols);
  }
  const std::span<const std::int32_t> row = common.block_table.row(r);
  for (int b = 0; b < num_blocks; ++b) {
    if (row[b] < 0 || row[b] >= cache.num_kernel_blocks) {
      fail(
          "{} forward: request {} block-table entry {} is kernel block {}, outside the KV cache "
          "view ({} kernel blocks of {} tokens, {})",
          backend, r, b, row[b], cache.num_kernel_blocks, cache.kernel_block_size,
          dtype_name(cache.dtype));
    }
  }
}

}  // namespace attnrt::backend_checks
