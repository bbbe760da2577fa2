#pragma once
// Test harness for paged attention backends: a random mixed batch over a KV cache planned,
// allocated and bound by the real kv/ code, written through slot mappings and run by the backend
// under test, with its dense oracle (dense_attention.h); full_graph_replay.h replays it as a
// FULL graph.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/core/error.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "attnrt/kv/kv_cache_views.h"
#include "dense_attention.h"
#include "error_of.h"

namespace attnrt::testing {

struct PagedBatchOptions {
  AttentionShape shape;
  DType dtype = DType::f32;
  KVCacheLayout layout = KVCacheLayout::LBNHC;
  int block_size = 16;
  int kernel_block_size = 16;
  int num_layers = 1;  // the batch uses the last layer; the others get unrelated data
  // Per request: cached context (cross: encoder length) and query tokens of this step.
  std::vector<std::pair<int, int>> requests;
  bool encoder_lens_in_seq_lens = false;  // cross: seq_lens carry the encoder lengths
  int block_table_cols = 0;               // at least the widest request's kernel blocks
};

inline AttentionShape attention_shape(AttentionType type, int num_heads, int num_kv_heads,
                                      int head_size, int head_size_v) {
  return AttentionShape{type, num_heads, num_kv_heads, head_size, head_size_v};
}

// Full attention, head size 16, over a batch of prefills, chunked prefills and decodes: contexts
// 0..70 and queries 1..20, across blocks.
inline PagedBatchOptions mixed_batch_options(int num_heads, int num_kv_heads) {
  PagedBatchOptions options;
  options.shape = attention_shape(AttentionType::full, num_heads, num_kv_heads, 16, 16);
  options.requests = {{0, 20}, {70, 1}, {5, 7}, {33, 1}, {16, 16}, {47, 2}, {1, 1}};
  return options;
}

inline KVCacheSpec cache_spec_of(const PagedBatchOptions& o) {
  const AttentionShape& s = o.shape;
  switch (s.type) {
    case AttentionType::sliding_window:
      return KVCacheSpec::sliding(o.block_size, s.num_kv_heads, s.head_size, o.dtype,
                                  s.sliding_window, s.head_size_v);
    case AttentionType::chunked_local:
      return KVCacheSpec::chunked_local(o.block_size, s.num_kv_heads, s.head_size, o.dtype,
                                        s.attention_chunk_size, s.head_size_v);
    case AttentionType::mla:
      return KVCacheSpec::mla(o.block_size, s.head_size, o.dtype);
    case AttentionType::cross:
      return KVCacheSpec::cross(o.block_size, s.num_kv_heads, s.head_size, o.dtype, s.head_size_v);
    default:
      return KVCacheSpec::full(o.block_size, s.num_kv_heads, s.head_size, o.dtype, s.head_size_v);
  }
}

inline DenseAttentionMask dense_mask_of(const AttentionShape& shape) {
  switch (shape.type) {
    case AttentionType::sliding_window:
      return DenseAttentionMask::sliding_window(shape.sliding_window);
    case AttentionType::chunked_local:
      return DenseAttentionMask::chunked_local(shape.attention_chunk_size);
    case AttentionType::cross:
      return DenseAttentionMask::bidirectional();
    default:
      return DenseAttentionMask::causal();
  }
}

// `value` as stored in a cache of `dtype` and read back.
inline float round_to(DType dtype, float value) {
  std::byte bytes[4];
  store_from_float(dtype, bytes, value);
  return load_as_float(dtype, bytes);
}

inline ActivationView rows_of(std::vector<float>& data, int num_tokens, int num_heads,
                              int head_size) {
  const std::int64_t row = static_cast<std::int64_t>(num_heads) * head_size;
  return ActivationView{data.data(), num_tokens, num_heads, head_size, row, head_size};
}

inline std::string layer_name(int l) {
  return "layer" + std::to_string(l);
}

// `num_layers` layers of `spec` in one group, planned for `num_blocks` blocks and allocated.
inline KVCacheAllocation allocate_layers(const KVCacheSpec& spec, KVCacheLayout layout,
                                         int num_layers, std::int64_t num_blocks,
                                         int kernel_block_size) {
  LayerSpecs specs;
  for (int l = 0; l < num_layers; ++l) specs.emplace_back(layer_name(l), spec);
  const std::uint64_t memory =
      static_cast<std::uint64_t>(spec.page_size_bytes()) * num_layers * num_blocks;
  const KVCacheConfig config =
      get_kv_cache_config_from_groups(get_kv_cache_groups(specs), memory, layout);
  const std::vector<int> kernel_block_sizes = {kernel_block_size};
  return allocate_kv_cache(config, Device::cpu(), kernel_block_sizes);
}

// One random batch over a freshly planned and allocated cache, with its own builder (from
// `backend`) and arrays. Context tokens (cross: the encoder output) are written at construction.
class PagedBatch {
 public:
  PagedBatch(AttentionBackendPtr backend, PagedBatchOptions options, unsigned seed)
      : backend_(std::move(backend)), options_(std::move(options)), rng_(seed) {
    allocate_cache();
    make_requests();
    make_step_arrays();
    builder_ =
        backend_->create_builder(spec_.with_block_size(options_.kernel_block_size),
                                 {layer_name(options_.num_layers - 1)}, config_, Device::cpu());
  }
  PagedBatch(const PagedBatch&) = delete;

  const AttentionBackend& backend() const { return *backend_; }
  const AttentionShape& shape() const { return options_.shape; }
  const Tensor& cache() const { return view_; }
  const KernelBlockGeometry& geometry() const { return geometry_; }
  AttentionMetadataBuilder& builder() { return *builder_; }
  int num_reqs() const { return static_cast<int>(options_.requests.size()); }
  int num_tokens() const { return query_start_loc.back(); }
  int block_table_cols() const { return block_table_cols_; }

  // This step's arrays, in the runner's layout (what a graph replay refreshes).
  std::vector<std::int32_t> query_start_loc, seq_lens, encoder_seq_lens, block_table;
  std::vector<std::int64_t> slot_mapping;
  std::vector<float> query, step_keys, step_values;

  CommonAttentionMetadata eager_metadata() const {
    CommonAttentionMetadata common;
    common.query_start_loc = common.query_start_loc_cpu = query_start_loc;
    common.seq_lens = common.seq_lens_cpu = seq_lens;
    common.num_reqs = num_reqs();
    common.num_actual_tokens = num_tokens();
    common.max_query_len = 0;
    for (int r = 0; r < num_reqs(); ++r) {
      common.max_query_len = std::max(common.max_query_len, options_.requests[r].second);
    }
    common.max_seq_len = *std::max_element(seq_lens.begin(), seq_lens.end());
    common.block_table = {block_table.data(), num_reqs(), block_table_cols_, block_table_cols_};
    common.slot_mapping = slot_mapping;
    common.causal = shape().type != AttentionType::cross;
    common.encoder_seq_lens = encoder_seq_lens;
    return common;
  }

  void write(const Tensor& cache, std::vector<float>& keys, std::vector<float>& values,
             std::span<const std::int64_t> slots) const {
    const int n = static_cast<int>(slots.size());
    const AttentionShape& s = shape();
    backend_->write_kv({s, rows_of(keys, n, s.num_kv_heads, s.head_size),
                        rows_of(values, n, s.num_kv_heads, s.head_size_v), slots, cache});
  }
  void write_step_kv() { write(view_, step_keys, step_values, slot_mapping); }

  // Output rows [num_rows][heads][head_size_v], pre-filled with `fill` to expose untouched rows.
  std::vector<float> forward(const AttentionMetadata& metadata, std::vector<float>& query_rows,
                             int num_rows, float fill = NAN) const {
    const AttentionShape& s = shape();
    std::vector<float> output(static_cast<std::size_t>(num_rows) * s.num_heads * s.head_size_v,
                              fill);
    backend_->forward({s, rows_of(query_rows, num_rows, s.num_heads, s.head_size),
                       rows_of(output, num_rows, s.num_heads, s.head_size_v), view_, metadata});
    return output;
  }
  std::vector<float> run_eager() {
    write_step_kv();
    return forward(builder_->build(0, eager_metadata()), query, num_tokens());
  }

  // Dense attention of every request, concatenated, on the exact or the cache-rounded K/V.
  std::vector<float> dense(bool rounded) const {
    const AttentionShape& s = shape();
    const DenseAttentionShape dense_shape{s.num_heads, s.num_kv_heads, s.head_size, s.head_size_v,
                                          s.scale};
    std::vector<float> out;
    for (DenseAttentionRequest request : dense_) {
      if (rounded) {
        for (float& x : request.k) x = round_to(options_.dtype, x);
        for (float& x : request.v) x = round_to(options_.dtype, x);
      }
      const std::vector<float> part = dense_attention(dense_shape, request, dense_mask_of(s));
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }

 private:
  bool is_cross() const { return shape().type == AttentionType::cross; }
  int kv_len(int r) const {
    const auto [context, query_len] = options_.requests[r];
    return is_cross() ? context : context + query_len;
  }

  std::vector<float> random_values(std::size_t n) {
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    std::vector<float> values(n);
    for (float& x : values) x = uniform(rng_);
    return values;
  }

  void allocate_cache() {
    spec_ = cache_spec_of(options_);
    std::int64_t blocks = 2;  // spare blocks keep ids from being trivially dense
    for (int r = 0; r < num_reqs(); ++r) {
      blocks += (kv_len(r) + options_.block_size - 1) / options_.block_size;
    }
    allocation_ = allocate_layers(spec_, options_.layout, options_.num_layers, blocks,
                                  options_.kernel_block_size);
    view_ = allocation_.views.at(layer_name(options_.num_layers - 1));
    geometry_ = allocation_.geometry.at(layer_name(options_.num_layers - 1));
    pool_.resize(allocation_.num_blocks);
    std::iota(pool_.begin(), pool_.end(), 0);
    std::shuffle(pool_.begin(), pool_.end(), rng_);
  }

  std::int64_t kernel_slot(int r, int position) const {
    const int bs = options_.block_size;
    return geometry_.map_to_kernel_slot(
        static_cast<std::int64_t>(manager_blocks_[r][position / bs]) * bs + position % bs);
  }

  // Random Q/K/V per request, manager blocks from the shuffled pool, cached tokens written.
  void make_requests() {
    const AttentionShape& s = shape();
    std::size_t next_block = 0;
    for (int r = 0; r < num_reqs(); ++r) {
      const auto [context, query_len] = options_.requests[r];
      DenseAttentionRequest request;
      request.num_queries = query_len;
      request.num_keys = kv_len(r);
      request.first_query_position = is_cross() ? 0 : context;
      request.q = random_values(static_cast<std::size_t>(query_len) * s.num_heads * s.head_size);
      request.k = random_values(static_cast<std::size_t>(kv_len(r)) * s.num_kv_heads * s.head_size);
      if (s.type == AttentionType::mla) {  // the value is the latent's first head_size_v entries
        for (int j = 0; j < kv_len(r); ++j) {
          const auto first = request.k.begin() + static_cast<std::ptrdiff_t>(j) * s.head_size;
          request.v.insert(request.v.end(), first, first + s.head_size_v);
        }
      } else {
        request.v =
            random_values(static_cast<std::size_t>(kv_len(r)) * s.num_kv_heads * s.head_size_v);
      }
      const int blocks = (kv_len(r) + options_.block_size - 1) / options_.block_size;
      manager_blocks_.emplace_back(pool_.begin() + next_block, pool_.begin() + next_block + blocks);
      next_block += blocks;
      dense_.push_back(std::move(request));
    }
    write_cached_tokens();
  }

  // Token rows [first, last) of request r's K and V.
  void append_kv_rows(int r, int first, int last, std::vector<float>& keys,
                      std::vector<float>& values) const {
    const AttentionShape& s = shape();
    const std::size_t k_row = static_cast<std::size_t>(s.num_kv_heads) * s.head_size;
    const std::size_t v_row = static_cast<std::size_t>(s.num_kv_heads) * s.head_size_v;
    keys.insert(keys.end(), dense_[r].k.begin() + first * k_row,
                dense_[r].k.begin() + last * k_row);
    values.insert(values.end(), dense_[r].v.begin() + first * v_row,
                  dense_[r].v.begin() + last * v_row);
  }

  void write_cached_tokens() {
    std::vector<float> keys, values;
    std::vector<std::int64_t> slots;
    for (int r = 0; r < num_reqs(); ++r) {
      const int cached = options_.requests[r].first;  // context, or the whole encoder output
      append_kv_rows(r, 0, cached, keys, values);
      for (int p = 0; p < cached; ++p) slots.push_back(kernel_slot(r, p));
    }
    write(view_, keys, values, slots);
    // Other layers share the blocks; unrelated data there must not leak into this layer.
    for (int l = 0; l + 1 < options_.num_layers; ++l) {
      std::vector<float> other_keys = random_values(keys.size());
      std::vector<float> other_values = random_values(values.size());
      write(allocation_.views.at(layer_name(l)), other_keys, other_values, slots);
    }
  }

  void make_step_arrays() {
    const int ratio = geometry_.ratio;
    block_table_cols_ = std::max(1, options_.block_table_cols);
    for (const auto& blocks : manager_blocks_) {
      block_table_cols_ = std::max(block_table_cols_, static_cast<int>(blocks.size()) * ratio);
    }
    block_table.assign(static_cast<std::size_t>(num_reqs()) * block_table_cols_, 0);
    query_start_loc = {0};
    for (int r = 0; r < num_reqs(); ++r) {
      const auto [context, query_len] = options_.requests[r];
      geometry_.expand_block_ids(manager_blocks_[r],
                                 std::span(block_table)
                                     .subspan(static_cast<std::size_t>(r) * block_table_cols_,
                                              manager_blocks_[r].size() * ratio));
      query_start_loc.push_back(query_start_loc.back() + query_len);
      query.insert(query.end(), dense_[r].q.begin(), dense_[r].q.end());
      if (is_cross()) {
        // Decoder lengths in seq_lens unless they carry the encoder's; no K/V written this step.
        seq_lens.push_back(options_.encoder_lens_in_seq_lens ? context : 3 + r + query_len);
        if (!options_.encoder_lens_in_seq_lens) encoder_seq_lens.push_back(context);
        slot_mapping.insert(slot_mapping.end(), query_len, PAD_SLOT_ID);
      } else {
        seq_lens.push_back(context + query_len);
        append_kv_rows(r, context, context + query_len, step_keys, step_values);
        for (int i = 0; i < query_len; ++i) slot_mapping.push_back(kernel_slot(r, context + i));
      }
    }
    if (is_cross()) {
      const AttentionShape& s = shape();
      step_keys.assign(slot_mapping.size() * s.num_kv_heads * s.head_size, 0.f);
      step_values.assign(slot_mapping.size() * s.num_kv_heads * s.head_size_v, 0.f);
    }
  }

  AttentionBackendPtr backend_;
  PagedBatchOptions options_;
  std::mt19937 rng_;
  EngineConfig config_;
  KVCacheSpec spec_;
  KVCacheAllocation allocation_;
  Tensor view_;
  KernelBlockGeometry geometry_;
  std::vector<std::int32_t> pool_;
  std::vector<std::vector<std::int32_t>> manager_blocks_;
  std::vector<DenseAttentionRequest> dense_;
  int block_table_cols_ = 1;
  std::unique_ptr<AttentionMetadataBuilder> builder_;
};

// Entries off by more than tolerance × max(1, |expected|) (NaN included); reports the first.
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                         double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int mismatches = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]);
    if (!(error <= tolerance * std::max(1.0, std::abs(static_cast<double>(expected[i]))))) {
      if (mismatches++ == 0) first = i;
    }
  }
  EXPECT_EQ(mismatches, 0) << what << ": entry " << first << " is " << actual[first]
                           << ", expected " << expected[first];
}

}  // namespace attnrt::testing
