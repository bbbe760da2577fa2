// attention_forward of the reference backend: for every request, query token and query head, a
// softmax over the keys the attention type lets it see, read from the paged cache through the
// request's block-table row. fp32 throughout, keys summed in ascending position order.
//
// Request extents come only from the device arrays (query_start_loc, seq_lens, encoder_seq_lens):
// a FULL graph replay refreshes them in place while num_reqs and num_actual_tokens stay frozen at
// the padded capture sizes, and max_query_len / max_seq_len are never read. Padded requests have
// zero-length queries and are skipped; padded token rows of the output are zeroed, so a replay's
// output is fully determined by the batch.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../cpu_backend_checks.h"
#include "attention/key_mask.h"
#include "core/fail.h"
#include "paged_kv_cache.h"
#include "reference_kernels.h"

namespace attnrt::cpu_reference {
namespace {

struct RequestExtent {
  int query_start = 0;
  int query_len = 0;
  int kv_len = 0;          // keys the request may see: seq_len, or the encoder length (cross)
  int first_position = 0;  // absolute position of the first query token
};

bool is_cross(const AttentionShape& shape) {
  return shape.type == AttentionType::cross;
}

// Cross layers attend to the encoder output: their key count is encoder_seq_lens[r] when the
// metadata carries encoder lengths, else seq_lens[r] (the runner then puts encoder lengths there).
RequestExtent request_extent(const AttentionShape& shape, const CommonAttentionMetadata& common,
                             int r) {
  RequestExtent extent;
  extent.query_start = common.query_start_loc[r];
  extent.query_len = common.query_start_loc[r + 1] - extent.query_start;
  if (is_cross(shape)) {
    extent.kv_len =
        common.encoder_seq_lens.empty() ? common.seq_lens[r] : common.encoder_seq_lens[r];
  } else {
    extent.kv_len = common.seq_lens[r];
    extent.first_position = extent.kv_len - extent.query_len;  // tokens already cached
  }
  return extent;
}

// Checks the whole batch before any output row is written; returns the real token count.
int check_batch(const AttentionForwardArgs& args, const PagedKVCache& cache) {
  const CommonAttentionMetadata& common = args.metadata.common;
  backend_checks::check_step_arrays("CPU_REFERENCE", common, is_cross(args.shape));
  for (int r = 0; r < common.num_reqs; ++r) {
    const RequestExtent extent = request_extent(args.shape, common, r);
    backend_checks::check_request(
        "CPU_REFERENCE", args.shape, common, r,
        {extent.query_start, extent.query_len, extent.kv_len},
        {cache.num_kernel_blocks(), cache.kernel_block_size(), cache.dtype()});
  }
  const int num_tokens = common.query_start_loc[common.num_reqs];
  if (num_tokens > args.query.num_tokens || num_tokens > args.output.num_tokens) {
    fail("CPU_REFERENCE forward: the batch has {} query tokens but {} query and {} output rows",
         num_tokens, args.query.num_tokens, args.output.num_tokens);
  }
  return num_tokens;
}

// Reused buffers of one forward call.
struct Scratch {
  std::vector<float> probabilities;
  std::vector<float> accumulator;
};

float dot_key(const float* query, const PagedKVCache& cache, std::int64_t slot, int kv_head) {
  const ContentLayout& content = cache.content();
  float sum = 0.f;
  for (int i = 0; i < content.key_size; ++i) {
    sum +=
        query[i] * load_as_float(cache.dtype(), cache.entry(slot, kv_head, content.key_offset + i));
  }
  return sum;
}

// One output row: softmax(scale · q·K) · V over `keys`, max-subtracted; an empty range gives 0.
void attend_row(const float* query, const PagedKVCache& cache, std::span<const std::int32_t> row,
                int kv_head, KeyRange keys, float scale, Scratch& scratch, float* output) {
  const ContentLayout& content = cache.content();
  scratch.probabilities.assign(static_cast<std::size_t>(std::max(0, keys.end - keys.begin)), 0.f);
  float max_score = -std::numeric_limits<float>::infinity();
  for (int k = keys.begin; k < keys.end; ++k) {
    const float score = scale * dot_key(query, cache, cache.slot_of(row, k), kv_head);
    scratch.probabilities[k - keys.begin] = score;
    max_score = std::max(max_score, score);
  }
  float denominator = 0.f;
  for (float& p : scratch.probabilities) {
    p = std::exp(p - max_score);
    denominator += p;
  }
  scratch.accumulator.assign(static_cast<std::size_t>(content.value_size), 0.f);
  for (int k = keys.begin; k < keys.end; ++k) {
    const float p = scratch.probabilities[k - keys.begin];
    const std::int64_t slot = cache.slot_of(row, k);
    for (int j = 0; j < content.value_size; ++j) {
      scratch.accumulator[j] +=
          p * load_as_float(cache.dtype(), cache.entry(slot, kv_head, content.value_offset + j));
    }
  }
  for (int j = 0; j < content.value_size; ++j) {
    output[j] = denominator > 0.f ? scratch.accumulator[j] / denominator : 0.f;
  }
}

void attend_request(const AttentionForwardArgs& args, const PagedKVCache& cache, int r,
                    Scratch& scratch) {
  const AttentionShape& shape = args.shape;
  const CommonAttentionMetadata& common = args.metadata.common;
  const RequestExtent extent = request_extent(shape, common, r);
  if (extent.query_len == 0) return;
  const std::span<const std::int32_t> row = common.block_table.row(r);
  const int heads_per_kv_head = shape.num_heads / shape.num_kv_heads;
  const float scale =
      shape.scale != 0.f ? shape.scale : 1.f / std::sqrt(static_cast<float>(shape.head_size));
  const KeyMask mask = key_mask_of(shape, common.causal);
  for (int i = 0; i < extent.query_len; ++i) {
    const int token = extent.query_start + i;
    const KeyRange keys = visible_keys(mask, extent.first_position + i, extent.kv_len);
    for (int h = 0; h < shape.num_heads; ++h) {
      attend_row(args.query.row(token, h), cache, row, h / heads_per_kv_head, keys, scale, scratch,
                 args.output.row(token, h));
    }
  }
}

// Rows past the real tokens (graph padding) get zeros rather than stale values.
void zero_padding_rows(const ActivationView& output, int first, int end) {
  end = std::min(end, output.num_tokens);
  for (int t = first; t < end; ++t) {
    for (int h = 0; h < output.num_heads; ++h) std::fill_n(output.row(t, h), output.head_size, 0.f);
  }
}

}  // namespace

void attention_forward(const AttentionForwardArgs& args) {
  const PagedKVCache cache(args.kv_cache, args.shape, "forward");
  backend_checks::check_forward_shape("CPU_REFERENCE", args, cache.content().key_size,
                                      cache.content().value_size);
  const int num_tokens = check_batch(args, cache);
  Scratch scratch;
  for (int r = 0; r < args.metadata.common.num_reqs; ++r) attend_request(args, cache, r, scratch);
  zero_padding_rows(args.output, num_tokens, args.metadata.common.num_actual_tokens);
}

}  // namespace attnrt::cpu_reference
