#pragma once
// Input rules every CPU paged-attention backend applies before it writes anything: the layer's
// cache view, the layer's shape against the activation rows, the step's metadata arrays against
// num_reqs, and the rows write_kv stores. Messages start with the backend's name
// ("CPU_FLASH forward: ...").

#include <cstdint>
#include <string_view>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/common_attention_metadata.h"

namespace attnrt::backend_checks {

// The layer's cache `view` for `shape`: not encoder-only, a 4-D host tensor [kernel blocks, head
// slots, states, content] of a floating dtype, with the layer's KV heads and at least
// `stored_size` content entries, contiguous if `contiguous_content`. `kernel` ("forward",
// "write_kv") names the caller.
void check_cache_view(std::string_view backend, std::string_view kernel, const Tensor& view,
                      const AttentionShape& shape, std::int64_t stored_size,
                      bool contiguous_content);

// Query heads divide into KV-head groups, windowed types are causal with a positive window or
// chunk, and the query/output rows have the layer's heads and key/value sizes.
void check_forward_shape(std::string_view backend, const AttentionForwardArgs& args, int key_size,
                         int value_size);

// query_start_loc (num_reqs + 1 entries, starting at 0), seq_lens, block-table rows and, for
// cross attention, encoder_seq_lens are long enough for num_reqs requests.
void check_step_arrays(std::string_view backend, const CommonAttentionMetadata& common, bool cross);

// The extent of request r of a step and the cache it reads: query_start_loc does not decrease,
// a request with query tokens has at least as many keys (cross attention aside), and its
// block-table row has a valid kernel block for every key. Requests without query tokens read
// nothing and pass.
struct RequestExtent {
  int query_start = 0;
  int query_len = 0;
  int kv_len = 0;
};
struct CacheBlocks {
  std::int64_t num_kernel_blocks = 0;
  int kernel_block_size = 1;
  DType dtype = DType::f32;
};
void check_request(std::string_view backend, const AttentionShape& shape,
                   const CommonAttentionMetadata& common, int r, const RequestExtent& extent,
                   const CacheBlocks& cache);

// write_kv's inputs: key (and, but for MLA, value) rows for the tokens it writes with the layer's
// KV heads and sizes, a slot-mapping entry per token, and every slot PAD_SLOT_ID or inside the
// cache, so that a bad mapping leaves the cache unchanged.
void check_write(std::string_view backend, const KVWriteArgs& args, int key_size, int value_size,
                 const CacheBlocks& cache);

}  // namespace attnrt::backend_checks
