// CPU_REFERENCE against dense, unpaged attention (dense_attention.h): mixed batches over caches
// planned and allocated by the real kv/ code, in every layout, cache dtype and kernel-block split,
// plus PAD_SLOT_ID handling and FULL-graph replays with padded metadata (SEMANTICS §0).

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "attnrt/kv/kv_cache_views.h"
#include "dense_attention.h"

namespace attnrt {
namespace {

// Against the oracle on the K/V as rounded into the cache, only fp32 summation order differs from
// its double sums (observed ≤ 2e-7): a paging or masking bug shows as an O(1) error.
constexpr double kPagingTolerance = 1e-5;

// Against the oracle on the unrounded K/V, rounding into the cache adds up to half a unit roundoff
// (f16 2^-11 ≈ 5e-4, bf16 2^-8 ≈ 4e-3) to each K and V entry in [-1, 1]; outputs are convex
// combinations of V and scores move by ~scale·|q|·|Δk|, so errors stay about one roundoff
// (observed: f16 2.3e-4, bf16 2.1e-3); the bounds leave a 10x margin.
double rounding_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 2e-3;
    case DType::bf16:
      return 2e-2;
    default:
      return kPagingTolerance;
  }
}

struct CaseOptions {
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

AttentionShape make_shape(AttentionType type, int num_heads, int num_kv_heads, int head_size,
                          int head_size_v) {
  return AttentionShape{type, num_heads, num_kv_heads, head_size, head_size_v};
}

CaseOptions full_case(int num_heads, int num_kv_heads) {
  CaseOptions options;
  options.shape = make_shape(AttentionType::full, num_heads, num_kv_heads, 16, 16);
  // Contexts 0..70 and queries 1..20: prefills, chunked prefills and decodes, across blocks.
  options.requests = {{0, 20}, {70, 1}, {5, 7}, {33, 1}, {16, 16}, {47, 2}, {1, 1}};
  return options;
}

KVCacheSpec spec_of(const CaseOptions& o) {
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

DenseAttentionMask mask_of(const AttentionShape& shape) {
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

float round_to(DType dtype, float value) {
  std::byte bytes[4];
  store_from_float(dtype, bytes, value);
  return load_as_float(dtype, bytes);
}

ActivationView rows_of(std::vector<float>& data, int num_tokens, int num_heads, int head_size) {
  return ActivationView{data.data(),
                        num_tokens,
                        num_heads,
                        head_size,
                        static_cast<std::int64_t>(num_heads) * head_size,
                        head_size};
}

std::string layer_name(int l) {
  return "layer" + std::to_string(l);
}

// `num_layers` layers of `spec` in one group, planned for `num_blocks` blocks and allocated.
KVCacheAllocation allocate_layers(const KVCacheSpec& spec, KVCacheLayout layout, int num_layers,
                                  std::int64_t num_blocks, int kernel_block_size) {
  LayerSpecs specs;
  for (int l = 0; l < num_layers; ++l) specs.emplace_back(layer_name(l), spec);
  const std::uint64_t memory =
      static_cast<std::uint64_t>(spec.page_size_bytes()) * num_layers * num_blocks;
  const KVCacheConfig config =
      get_kv_cache_config_from_groups(get_kv_cache_groups(specs), memory, layout);
  const std::vector<int> kernel_block_sizes = {kernel_block_size};
  return allocate_kv_cache(config, Device::cpu(), kernel_block_sizes);
}

// One random batch over a freshly planned and allocated cache, with its own backend, builder and
// arrays. Context tokens (cross: the encoder output) are written at construction.
class PagedBatch {
 public:
  PagedBatch(CaseOptions options, unsigned seed) : options_(std::move(options)), rng_(seed) {
    allocate_cache();
    make_requests();
    make_step_arrays();
    builder_ =
        backend_.create_builder(spec_.with_block_size(options_.kernel_block_size),
                                {layer_name(options_.num_layers - 1)}, config_, Device::cpu());
  }
  PagedBatch(const PagedBatch&) = delete;

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
    backend_.write_kv({s, rows_of(keys, n, s.num_kv_heads, s.head_size),
                       rows_of(values, n, s.num_kv_heads, s.head_size_v), slots, cache});
  }
  void write_step_kv() { write(view_, step_keys, step_values, slot_mapping); }

  // Output rows [num_rows][heads][head_size_v], pre-filled with `fill` to expose untouched rows.
  std::vector<float> forward(const AttentionMetadata& metadata, std::vector<float>& query_rows,
                             int num_rows, float fill = NAN) const {
    const AttentionShape& s = shape();
    std::vector<float> output(static_cast<std::size_t>(num_rows) * s.num_heads * s.head_size_v,
                              fill);
    backend_.forward({s, rows_of(query_rows, num_rows, s.num_heads, s.head_size),
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
      const std::vector<float> part = dense_attention(dense_shape, request, mask_of(s));
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
    spec_ = spec_of(options_);
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

  CaseOptions options_;
  std::mt19937 rng_;
  EngineConfig config_;
  CpuReferenceBackend backend_;
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

std::string error_of(auto&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// Entries off by more than tolerance × max(1, |expected|) (NaN included); reports the first.
void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
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

void check_against_dense(const CaseOptions& options, unsigned seed, const std::string& what) {
  SCOPED_TRACE(what);
  PagedBatch batch(options, seed);
  const std::vector<float> output = batch.run_eager();
  expect_close(output, batch.dense(/*rounded=*/true), kPagingTolerance, "vs cache-rounded K/V");
  if (options.dtype != DType::fp8_e4m3) {
    expect_close(output, batch.dense(/*rounded=*/false), rounding_tolerance(options.dtype),
                 "vs exact K/V");
  }
}

TEST(CpuReferenceBackendTest, DeclaresItsCapabilities) {
  const AttentionBackendPtr backend = make_cpu_reference_backend();
  EXPECT_EQ(backend->name(), "CPU_REFERENCE");
  for (KVSpecKind kind : {KVSpecKind::full, KVSpecKind::sliding_window, KVSpecKind::chunked_local,
                          KVSpecKind::mla, KVSpecKind::cross}) {
    EXPECT_TRUE(backend->supports_spec_kind(kind)) << spec_kind_name(kind);
  }
  EXPECT_FALSE(backend->supports_spec_kind(KVSpecKind::encoder_only));
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 16, DType::f32);
  EXPECT_EQ(backend->get_supported_kernel_block_sizes(spec),
            (std::vector<KernelBlockSize>{MultipleOf{1}}));
  EXPECT_TRUE(backend->supported_kv_cache_layouts().empty());
  EXPECT_TRUE(backend->supports_device_cpu_query_lens_mismatch());
  EXPECT_TRUE(backend->supports_batch_invariance());
  EXPECT_TRUE(backend->executable());

  const EngineConfig config;
  const auto builder = backend->create_builder(spec, {"layer0"}, config, Device::cpu());
  EXPECT_EQ(builder->get_cudagraph_support(config, spec), AttentionCGSupport::ALWAYS);
  EXPECT_EQ(builder->get_varlen_cudagraph_max_query_len(config, spec), std::nullopt);
  EXPECT_EQ(builder->layer_names(), std::vector<std::string>{"layer0"});
}

TEST(CpuReferenceBackendTest, BuildKeepsTheCommonMetadataInOneBuilderOwnedObject) {
  const EngineConfig config;
  const auto builder = CpuReferenceBackend().create_builder(KVCacheSpec::full(16, 1, 8, DType::f32),
                                                            {"layer0"}, config, Device::cpu());
  const std::vector<std::int32_t> qsl = {0, 3, 4}, seq_lens = {3, 9};
  CommonAttentionMetadata two;
  two.query_start_loc = qsl;
  two.seq_lens = seq_lens;
  two.num_reqs = 2;
  const AttentionMetadata& first = builder->build(0, two);
  EXPECT_EQ(first.common.query_start_loc.data(), qsl.data());  // a view, not a copy
  EXPECT_EQ(first.common.num_reqs, 2);
  const std::unique_ptr<AttentionMetadata> captured =
      builder->build_for_cudagraph_capture(two).clone();

  CommonAttentionMetadata one = two;
  one.num_reqs = 1;
  const AttentionMetadata& second = builder->build(0, one);
  EXPECT_EQ(&second, &first);  // the same object every step: nothing allocated
  EXPECT_EQ(second.common.num_reqs, 1);
  EXPECT_EQ(captured->common.num_reqs, 2);  // a capture's clone keeps its frozen scalars
}

// One KV head of width 1, scale 1: keys 0 and ln 3 give softmax weights 1/4 and 3/4.
TEST(CpuReferenceBackendTest, HandComputedSoftmaxOverTwoKeys) {
  const CpuReferenceBackend backend;
  AttentionShape shape = make_shape(AttentionType::full, 1, 1, 1, 1);
  shape.scale = 1.f;
  const Tensor cache = Tensor::zeros(DType::f32, {2, 1, 4, 2});  // 2 kernel blocks of 4 tokens
  std::vector<float> keys = {0.f, std::log(3.f)}, values = {4.f, 8.f};
  const std::vector<std::int64_t> slots = {4, 5};  // block 1, offsets 0 and 1
  backend.write_kv({shape, rows_of(keys, 2, 1, 1), rows_of(values, 2, 1, 1), slots, cache});
  EXPECT_EQ(cache.get({1, 0, 1, 0}), std::log(3.f));
  EXPECT_EQ(cache.get({1, 0, 1, 1}), 8.f);
  EXPECT_EQ(cache.get({0, 0, 1, 1}), 0.f);

  const std::vector<std::int32_t> table = {1};
  std::vector<float> query = {1.f, 1.f}, output(2);
  // query_start_loc, seq_lens: a decode at position 1, then a 2-token prefill.
  auto run = [&](std::vector<std::int32_t> qsl, std::vector<std::int32_t> seq_lens, bool causal) {
    AttentionMetadata metadata;
    metadata.common.query_start_loc = qsl;
    metadata.common.seq_lens = seq_lens;
    metadata.common.num_reqs = 1;
    metadata.common.num_actual_tokens = qsl.back();
    metadata.common.block_table = {table.data(), 1, 1, 1};
    metadata.common.causal = causal;
    std::fill(output.begin(), output.end(), -1.f);
    backend.forward({shape, rows_of(query, 2, 1, 1), rows_of(output, 2, 1, 1), cache, metadata});
    return output;
  };
  EXPECT_NEAR(run({0, 1}, {2}, true)[0], 1.f * 4 / 4 + 3.f * 8 / 4, 1e-6);  // 7
  EXPECT_EQ(run({0, 1}, {2}, true)[1], -1.f);  // past num_actual_tokens: untouched
  std::vector<float> prefill = run({0, 2}, {2}, true);
  EXPECT_NEAR(prefill[0], 4.f, 1e-6);  // position 0 sees only itself
  EXPECT_NEAR(prefill[1], 7.f, 1e-6);
  prefill = run({0, 2}, {2}, false);  // bidirectional: position 0 sees both
  EXPECT_NEAR(prefill[0], 7.f, 1e-6);
  shape.type = AttentionType::sliding_window;
  shape.sliding_window = 1;  // the window holds the query's own token only
  EXPECT_NEAR(run({0, 1}, {2}, true)[0], 8.f, 1e-6);

  // Scores near 1000 overflow exp() unless the maximum is subtracted first.
  shape.type = AttentionType::full;
  keys = {1000.f, 1000.f + std::log(3.f)};
  backend.write_kv({shape, rows_of(keys, 2, 1, 1), rows_of(values, 2, 1, 1), slots, cache});
  EXPECT_NEAR(run({0, 1}, {2}, true)[0], 7.f, 1e-3);
}

TEST(CpuReferenceBackendTest, MixedPrefillAndDecodeMatchDenseForGqaRatios) {
  for (int ratio : {1, 4, 8}) {
    CaseOptions options = full_case(2 * ratio, 2);
    if (ratio == 4) options.shape.scale = 0.3f;
    check_against_dense(options, 10 + ratio, "GQA ratio " + std::to_string(ratio));
  }
}

TEST(CpuReferenceBackendTest, SlidingWindowsSmallerAndLargerThanABlock) {
  for (int window : {5, 40}) {
    CaseOptions options = full_case(4, 2);
    options.shape.type = AttentionType::sliding_window;
    options.shape.sliding_window = window;
    check_against_dense(options, 20 + window, "window " + std::to_string(window));
  }
}

TEST(CpuReferenceBackendTest, ChunkedLocalAttentionStaysInItsChunk) {
  for (int chunk : {8, 24}) {
    CaseOptions options = full_case(4, 2);
    options.shape.type = AttentionType::chunked_local;
    options.shape.attention_chunk_size = chunk;
    check_against_dense(options, 30 + chunk, "chunk " + std::to_string(chunk));
  }
}

TEST(CpuReferenceBackendTest, CrossAttentionReadsTheEncoderOutputWrittenOnce) {
  for (bool encoder_lens_in_seq_lens : {false, true}) {
    CaseOptions options;
    options.shape = make_shape(AttentionType::cross, 4, 2, 16, 8);
    options.requests = {{24, 1}, {7, 1}, {40, 3}, {1, 1}, {17, 2}};  // encoder length, queries
    options.encoder_lens_in_seq_lens = encoder_lens_in_seq_lens;
    check_against_dense(options, 40, encoder_lens_in_seq_lens ? "seq_lens" : "encoder_seq_lens");
  }
}

TEST(CpuReferenceBackendTest, MlaUsesTheLatentAsKeyAndItsPrefixAsValue) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    CaseOptions options = full_case(4, 1);
    options.shape = make_shape(AttentionType::mla, 4, 1, 24, 16);
    options.dtype = dtype;
    check_against_dense(options, 50, std::string(dtype_name(dtype)));
  }
}

TEST(CpuReferenceBackendTest, EveryLayoutMatchesDense) {
  for (KVCacheLayout layout : kAllLayouts) {
    CaseOptions options = full_case(4, 2);
    options.layout = layout;
    options.num_layers = 2;
    check_against_dense(options, 60, std::string(layout_name(layout)));
  }
}

TEST(CpuReferenceBackendTest, EveryCacheDtypeMatchesDense) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    CaseOptions options = full_case(8, 2);
    options.dtype = dtype;
    check_against_dense(options, 70, std::string(dtype_name(dtype)));
  }
}

// Manager blocks of 32 split into kernel blocks of 16. Block-outermost layouts with 2 layers keep
// a row of 4 kernel pages per block: spaced ids and translated slots.
TEST(CpuReferenceBackendTest, SplitKernelBlocksMatchDense) {
  for (KVCacheLayout layout : kAllLayouts) {
    CaseOptions options = full_case(4, 2);
    if (layout == KVCacheLayout::LHBNC || layout == KVCacheLayout::BHLNC) {
      options.shape = make_shape(AttentionType::full, 4, 1, 16, 16);  // a head per page: 1 head
    }
    options.layout = layout;
    options.num_layers = 2;
    options.block_size = 32;
    options.kernel_block_size = 16;
    const std::string name(layout_name(layout));
    PagedBatch probe(options, 80);
    EXPECT_EQ(probe.geometry().ratio, 2) << name;
    EXPECT_EQ(probe.geometry().needs_slot_translation(), is_block_outermost(layout)) << name;
    check_against_dense(options, 80, name);
  }
}

// Address bytes [first, first + size) of entry (block, head, state, content) of `view`.
std::pair<std::int64_t, std::int64_t> entry_bytes(const Tensor& view, std::int64_t block,
                                                  std::int64_t head, std::int64_t state,
                                                  std::int64_t content) {
  const auto size = static_cast<std::int64_t>(dtype_size(view.dtype()));
  const std::int64_t element = block * view.stride(0) + head * view.stride(1) +
                               state * view.stride(2) + content * view.stride(3);
  return {view.data() - view.buffer()->data() + element * size, size};
}

TEST(CpuReferenceBackendTest, WriteKvSkipsPadSlotsAndRoundsToTheCacheDtype) {
  // f16, K width 4 and V width 3, 2 layers in BLNHC: strided heads, states and blocks.
  const KVCacheSpec spec = KVCacheSpec::full(4, 2, 4, DType::f16, 3);
  const KVCacheAllocation allocation = allocate_layers(spec, KVCacheLayout::BLNHC, 2, 3, 4);
  const Tensor& view = allocation.views.at("layer1");
  std::byte* backing = allocation.backing->data();
  std::fill_n(backing, allocation.backing->size(), std::byte{0x5A});

  std::mt19937 rng(90);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> keys(4 * 2 * 4), values(4 * 2 * 3);
  for (float& x : keys) x = uniform(rng);
  for (float& x : values) x = uniform(rng);
  const AttentionShape shape = make_shape(AttentionType::full, 2, 2, 4, 3);
  const std::vector<std::int64_t> slots = {PAD_SLOT_ID, 6, PAD_SLOT_ID, 9};
  CpuReferenceBackend().write_kv(
      {shape, rows_of(keys, 4, 2, 4), rows_of(values, 4, 2, 3), slots, view});

  std::vector<bool> written(allocation.backing->size(), false);
  for (int t : {1, 3}) {
    const std::int64_t block = slots[t] / 4, offset = slots[t] % 4;  // slot 6: (1, 2); 9: (2, 1)
    for (int h = 0; h < 2; ++h) {
      for (int c = 0; c < 7; ++c) {
        const float expected = c < 4 ? keys[(t * 2 + h) * 4 + c] : values[(t * 2 + h) * 3 + c - 4];
        EXPECT_EQ(view.get({block, h, offset, c}), round_to(DType::f16, expected));
        const auto [first, size] = entry_bytes(view, block, h, offset, c);
        std::fill_n(written.begin() + first, size, true);
      }
    }
  }
  int untouched_changed = 0;
  for (std::size_t i = 0; i < written.size(); ++i) {
    if (!written[i] && backing[i] != std::byte{0x5A}) ++untouched_changed;
  }
  EXPECT_EQ(std::count(written.begin(), written.end(), true), 2 * 2 * 7 * 2);
  EXPECT_EQ(untouched_changed, 0);  // padding tokens and layer 0 untouched
}

TEST(CpuReferenceBackendTest, WriteKvRejectsBadSlotsBeforeWriting) {
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  const KVCacheAllocation allocation = allocate_layers(spec, KVCacheLayout::LBNHC, 1, 3, 4);
  const AttentionShape shape = make_shape(AttentionType::full, 1, 1, 2, 2);
  std::vector<float> keys(6, 1.f), values(6, 1.f);
  for (std::int64_t bad : {std::int64_t{12}, std::int64_t{-5}}) {
    const std::vector<std::int64_t> slots = {0, 5, bad};
    const std::string error = error_of([&] {
      CpuReferenceBackend().write_kv({shape, rows_of(keys, 3, 1, 2), rows_of(values, 3, 1, 2),
                                      slots, allocation.views.at("layer0")});
    });
    EXPECT_NE(error.find("token 2 has slot " + std::to_string(bad)), std::string::npos) << error;
    EXPECT_NE(error.find("12 slots"), std::string::npos) << error;
  }
  const std::byte* backing = allocation.backing->data();
  EXPECT_TRUE(std::all_of(backing, backing + allocation.backing->size(),
                          [](std::byte b) { return b == std::byte{0}; }));  // tokens 0, 1 too
}

// SEMANTICS §0: a FULL graph captured at padded sizes (frozen num_reqs, num_actual_tokens,
// max_query_len, max_seq_len) and replayed with refreshed arrays gives the eager results.
class GraphReplay {
 public:
  GraphReplay(AttentionMetadataBuilder& builder, int num_reqs, int num_tokens, int cols)
      : num_reqs_(num_reqs),
        num_tokens_(num_tokens),
        cols_(cols),
        query_start_loc_(num_reqs + 1),
        seq_lens_(num_reqs, 1),
        block_table_(static_cast<std::size_t>(num_reqs) * cols, 0),
        slot_mapping_(num_tokens, -1) {
    std::iota(query_start_loc_.begin(), query_start_loc_.end(), 0);  // capture: dummy decodes
    // Host copies keep their capture values: a replay refreshes only the device arrays.
    stale_query_start_loc_ = query_start_loc_;
    stale_seq_lens_ = seq_lens_;
    CommonAttentionMetadata captured;
    captured.query_start_loc = query_start_loc_;
    captured.query_start_loc_cpu = stale_query_start_loc_;
    captured.seq_lens = seq_lens_;
    captured.seq_lens_cpu = stale_seq_lens_;
    captured.num_reqs = num_reqs;
    captured.num_actual_tokens = num_tokens;
    captured.max_query_len = 1;
    captured.max_seq_len = 1;
    captured.block_table = {block_table_.data(), num_reqs, cols, cols};
    captured.slot_mapping = slot_mapping_;
    graph_ = builder.build_for_cudagraph_capture(captured).clone();
  }

  // Refreshes the arrays in place as the runner pads them, writes K/V and runs the graph.
  std::vector<float> replay(PagedBatch& batch) {
    const int total = batch.num_tokens();
    std::fill(query_start_loc_.begin(), query_start_loc_.end(), total);
    std::copy(batch.query_start_loc.begin(), batch.query_start_loc.end(), query_start_loc_.begin());
    std::fill(seq_lens_.begin(), seq_lens_.end(), 0);
    std::copy(batch.seq_lens.begin(), batch.seq_lens.end(), seq_lens_.begin());
    std::fill(block_table_.begin(), block_table_.end(), 0);
    for (int r = 0; r < batch.num_reqs(); ++r) {
      std::copy_n(batch.block_table.begin() + r * batch.block_table_cols(),
                  batch.block_table_cols(), block_table_.begin() + r * cols_);
    }
    std::fill(slot_mapping_.begin(), slot_mapping_.end(), PAD_SLOT_ID);
    std::copy(batch.slot_mapping.begin(), batch.slot_mapping.end(), slot_mapping_.begin());

    // Padded token rows carry garbage that must go nowhere.
    const AttentionShape& s = batch.shape();
    const int pad = num_tokens_ - total;
    std::vector<float> keys = batch.step_keys, values = batch.step_values, query = batch.query;
    keys.resize(keys.size() + static_cast<std::size_t>(pad) * s.num_kv_heads * s.head_size, 9.f);
    values.resize(values.size() + static_cast<std::size_t>(pad) * s.num_kv_heads * s.head_size_v,
                  9.f);
    query.resize(query.size() + static_cast<std::size_t>(pad) * s.num_heads * s.head_size, 9.f);
    batch.write(batch.cache(), keys, values, slot_mapping_);
    return batch.forward(*graph_, query, num_tokens_, /*fill=*/7.f);
  }

 private:
  int num_reqs_, num_tokens_, cols_;
  std::vector<std::int32_t> query_start_loc_, seq_lens_, block_table_;
  std::vector<std::int32_t> stale_query_start_loc_, stale_seq_lens_;
  std::vector<std::int64_t> slot_mapping_;
  std::unique_ptr<AttentionMetadata> graph_;
};

TEST(CpuReferenceBackendTest, FullGraphReplayWithPaddedMetadataMatchesEager) {
  CaseOptions big = full_case(8, 2);
  big.shape.type = AttentionType::sliding_window;
  big.shape.sliding_window = 20;
  big.block_table_cols = 8;
  CaseOptions small = big;
  small.requests = {{3, 2}, {50, 1}};
  PagedBatch eager_big(big, 100), eager_small(small, 101);
  PagedBatch graph_big(big, 100), graph_small(small, 101);  // same data, untouched caches
  GraphReplay graph(graph_big.builder(), eager_big.num_reqs() + 3, eager_big.num_tokens() + 5, 8);

  for (auto [eager, replayed] : {std::pair{&eager_big, &graph_big}, {&eager_small, &graph_small}}) {
    const std::vector<float> expected = eager->run_eager();
    const std::vector<float> output = graph.replay(*replayed);
    ASSERT_GE(output.size(), expected.size());
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), output.begin()));  // bitwise
    EXPECT_TRUE(std::all_of(output.begin() + expected.size(), output.end(),
                            [](float x) { return x == 0.f; }));  // padded rows zeroed
  }
}

TEST(CpuReferenceBackendTest, ARequestsResultDoesNotDependOnItsBatch) {
  PagedBatch batch(full_case(8, 2), 110);
  const std::vector<float> together = batch.run_eager();
  const AttentionShape& s = batch.shape();
  const std::size_t in_row = static_cast<std::size_t>(s.num_heads) * s.head_size;
  const std::size_t out_row = static_cast<std::size_t>(s.num_heads) * s.head_size_v;
  for (int r = 0; r < batch.num_reqs(); ++r) {
    const int start = batch.query_start_loc[r], len = batch.query_start_loc[r + 1] - start;
    const std::vector<std::int32_t> qsl = {0, len}, seq_lens = {batch.seq_lens[r]};
    AttentionMetadata alone;
    alone.common.query_start_loc = qsl;
    alone.common.seq_lens = seq_lens;
    alone.common.num_reqs = 1;
    alone.common.num_actual_tokens = len;
    alone.common.block_table = {batch.block_table.data() + r * batch.block_table_cols(), 1,
                                batch.block_table_cols(), batch.block_table_cols()};
    std::vector<float> query(batch.query.begin() + start * in_row,
                             batch.query.begin() + (start + len) * in_row);
    const std::vector<float> output = batch.forward(alone, query, len);
    EXPECT_TRUE(std::equal(output.begin(), output.end(), together.begin() + start * out_row))
        << "request " << r;
  }
}

TEST(CpuReferenceBackendTest, RefusesWhatItCannotServe) {
  const CpuReferenceBackend backend;
  const EngineConfig config;
  KVCacheSpec encoder_only = KVCacheSpec::full(16, 2, 16, DType::f32);
  encoder_only.kind = KVSpecKind::encoder_only;
  const std::string encoder =
      error_of([&] { backend.create_builder(encoder_only, {"enc0"}, config, Device::cpu()); });
  EXPECT_NE(encoder.find("encoder_only attention (layers enc0)"), std::string::npos) << encoder;

  KVCacheSpec compressed = KVCacheSpec::full(16, 2, 16, DType::f32);
  compressed.tokens_per_state = 4;
  const std::string states =
      error_of([&] { backend.create_builder(compressed, {"layer3"}, config, Device::cpu()); });
  EXPECT_NE(states.find("packs 4 tokens per state (layers layer3)"), std::string::npos) << states;

  PagedBatch batch(full_case(4, 2), 120);
  AttentionShape encoder_shape = batch.shape();
  encoder_shape.type = AttentionType::encoder_only;
  std::vector<float> query = batch.query, output(batch.query.size());
  const AttentionMetadata& metadata = batch.builder().build(0, batch.eager_metadata());
  const int n = batch.num_tokens();
  const std::string forward = error_of([&] {
    backend.forward({encoder_shape, rows_of(query, n, 4, 16), rows_of(output, n, 4, 16),
                     batch.cache(), metadata});
  });
  EXPECT_NE(forward.find("encoder_only attention keeps no KV cache"), std::string::npos) << forward;
}

TEST(CpuReferenceBackendTest, ForwardRejectsMetadataOutsideTheCache) {
  PagedBatch batch(full_case(4, 2), 130);
  batch.write_step_kv();
  auto forward = [&] {
    batch.forward(batch.builder().build(0, batch.eager_metadata()), batch.query,
                  batch.num_tokens());
  };
  const std::int32_t block = batch.block_table[1];
  batch.block_table[1] = 100000;  // request 0 (20 tokens), its second kernel block
  std::string error = error_of(forward);
  EXPECT_NE(error.find("request 0 block-table entry 1 is kernel block 100000"), std::string::npos)
      << error;
  batch.block_table[1] = block;
  batch.seq_lens[2] = 6;  // request 2 has 7 query tokens
  error = error_of(forward);
  EXPECT_NE(error.find("request 2 has seq_len 6 but 7 query tokens"), std::string::npos) << error;
}

}  // namespace
}  // namespace attnrt
