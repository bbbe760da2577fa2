#pragma once
// Test harness of cpu_flash_backend_test.cc: random paged batches over caches planned and
// allocated by the real kv/ code, written and run through CPU_FLASH and CPU_REFERENCE side by
// side (each backend with its own cache of identical geometry).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "attnrt/kv/kv_cache_views.h"

namespace attnrt::flash_test {

struct Scenario {
  AttentionShape shape;
  DType dtype = DType::f32;
  KVCacheLayout layout = KVCacheLayout::LBNHC;
  int block_size = 16;
  int kernel_block_size = 16;
  int num_layers = 1;
  std::vector<std::pair<int, int>> requests;  // (context, or encoder length; query tokens)
  bool causal = true;
  int padded_tokens = 0;  // rows past the real tokens, as a graph replay has
};

inline KVCacheSpec spec_of(const Scenario& s) {
  const AttentionShape& a = s.shape;
  switch (a.type) {
    case AttentionType::sliding_window:
      return KVCacheSpec::sliding(s.block_size, a.num_kv_heads, a.head_size, s.dtype,
                                  a.sliding_window, a.head_size_v);
    case AttentionType::chunked_local:
      return KVCacheSpec::chunked_local(s.block_size, a.num_kv_heads, a.head_size, s.dtype,
                                        a.attention_chunk_size, a.head_size_v);
    case AttentionType::mla:
      return KVCacheSpec::mla(s.block_size, a.head_size, s.dtype);
    case AttentionType::cross:
      return KVCacheSpec::cross(s.block_size, a.num_kv_heads, a.head_size, s.dtype, a.head_size_v);
    default:
      return KVCacheSpec::full(s.block_size, a.num_kv_heads, a.head_size, s.dtype, a.head_size_v);
  }
}

inline KVCacheAllocation allocate(const Scenario& s, std::int64_t num_blocks) {
  const KVCacheSpec spec = spec_of(s);
  LayerSpecs specs;
  for (int l = 0; l < s.num_layers; ++l) specs.emplace_back("layer" + std::to_string(l), spec);
  const KVCacheConfig config = get_kv_cache_config_from_groups(
      get_kv_cache_groups(specs),
      static_cast<std::uint64_t>(spec.page_size_bytes()) * s.num_layers * num_blocks, s.layout);
  const std::vector<int> kernel_block_sizes = {s.kernel_block_size};
  return allocate_kv_cache(config, Device::cpu(), kernel_block_sizes);
}

inline ActivationView rows_of(std::vector<float>& data, int tokens, int heads, int size) {
  return {data.data(), tokens, heads, size, static_cast<std::int64_t>(heads) * size, size};
}

// One scenario's caches (one per backend, same geometry and bytes), K/V, block tables and step
// arrays. Context K/V is written by each backend into its own cache at construction.
class Batch {
 public:
  Batch(Scenario scenario, unsigned seed, const AttentionBackend& flash)
      : s_(std::move(scenario)), rng_(seed), flash_(flash) {
    std::int64_t blocks = 3;
    for (int r = 0; r < num_reqs(); ++r) blocks += (kv_len(r) + s_.block_size - 1) / s_.block_size;
    reference_cache_ = allocate(s_, blocks);
    flash_cache_ = allocate(s_, blocks);
    const std::string layer = "layer" + std::to_string(s_.num_layers - 1);
    geometry_ = flash_cache_.geometry.at(layer);
    std::vector<std::int32_t> pool(static_cast<std::size_t>(flash_cache_.num_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng_);
    cols_ = 1;
    for (int r = 0, next = 0; r < num_reqs(); ++r) {
      const int n = (kv_len(r) + s_.block_size - 1) / s_.block_size;
      blocks_.emplace_back(pool.begin() + next, pool.begin() + next + n);
      next += n;
      cols_ = std::max(cols_, n * geometry_.ratio);
    }
    make_step_arrays();
    write_context();
  }

  const Scenario& scenario() const { return s_; }
  int num_reqs() const { return static_cast<int>(s_.requests.size()); }
  int num_tokens() const { return query_start_loc.back(); }
  int num_rows() const { return num_tokens() + s_.padded_tokens; }
  int cols() const { return cols_; }
  bool caches_equal() const {
    return std::memcmp(reference_cache_.backing->data(), flash_cache_.backing->data(),
                       reference_cache_.backing->size()) == 0;
  }
  const Tensor& flash_view() const { return flash_cache_.views.at(last_layer()); }

  CommonAttentionMetadata common() const {
    CommonAttentionMetadata c;
    c.query_start_loc = c.query_start_loc_cpu = query_start_loc;
    c.seq_lens = c.seq_lens_cpu = seq_lens;
    c.num_reqs = num_reqs();
    c.num_actual_tokens = num_rows();
    c.block_table = {block_table.data(), num_reqs(), cols_, cols_};
    c.slot_mapping = slot_mapping;
    c.causal = s_.causal;
    c.encoder_seq_lens = encoder_seq_lens;
    return c;
  }

  // Writes this step's K/V through each backend, then runs each backend's forward.
  std::pair<std::vector<float>, std::vector<float>> run(const AttentionMetadata& flash_metadata) {
    write_both(step_keys, step_values, slot_mapping);
    AttentionMetadata reference_metadata;
    reference_metadata.common = common();
    return {forward(reference_, reference_cache_, reference_metadata),
            forward(flash_, flash_cache_, flash_metadata)};
  }

  // CPU_FLASH alone on its cache (the step's K/V must already be written).
  std::vector<float> flash_forward(const AttentionMetadata& metadata) {
    return forward(flash_, flash_cache_, metadata);
  }

  std::vector<std::int32_t> query_start_loc, seq_lens, encoder_seq_lens, block_table;
  std::vector<std::int64_t> slot_mapping;
  std::vector<float> query, step_keys, step_values;

 private:
  bool cross() const { return s_.shape.type == AttentionType::cross; }
  int kv_len(int r) const {
    return cross() ? s_.requests[r].first : s_.requests[r].first + s_.requests[r].second;
  }
  std::string last_layer() const { return "layer" + std::to_string(s_.num_layers - 1); }

  std::vector<float> forward(const AttentionBackend& backend, const KVCacheAllocation& cache,
                             const AttentionMetadata& metadata) {
    const AttentionShape& a = s_.shape;
    std::vector<float> out(static_cast<std::size_t>(num_rows()) * a.num_heads * a.head_size_v, NAN);
    backend.forward({a, rows_of(query, num_rows(), a.num_heads, a.head_size),
                     rows_of(out, num_rows(), a.num_heads, a.head_size_v),
                     cache.views.at(last_layer()), metadata});
    return out;
  }
  std::vector<float> random(std::size_t n) {
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    std::vector<float> v(n);
    for (float& x : v) x = uniform(rng_);
    return v;
  }
  std::int64_t slot(int r, int position) const {
    const int bs = s_.block_size;
    return geometry_.map_to_kernel_slot(static_cast<std::int64_t>(blocks_[r][position / bs]) * bs +
                                        position % bs);
  }

  void write_both(std::vector<float>& keys, std::vector<float>& values,
                  std::span<const std::int64_t> slots, const std::string& layer = "") {
    const AttentionShape& a = s_.shape;
    const int n = static_cast<int>(slots.size());
    const std::string name = layer.empty() ? last_layer() : layer;
    const KVWriteArgs reference_args{a, rows_of(keys, n, a.num_kv_heads, a.head_size),
                                     rows_of(values, n, a.num_kv_heads, a.head_size_v), slots,
                                     reference_cache_.views.at(name)};
    reference_.write_kv(reference_args);
    flash_.write_kv(
        {a, reference_args.key, reference_args.value, slots, flash_cache_.views.at(name)});
  }

  void write_context() {
    const AttentionShape& a = s_.shape;
    std::vector<std::int64_t> slots;
    for (int r = 0; r < num_reqs(); ++r) {
      for (int p = 0; p < s_.requests[r].first; ++p) slots.push_back(slot(r, p));
    }
    for (int l = 0; l < s_.num_layers; ++l) {  // other layers hold unrelated data
      std::vector<float> keys = random(slots.size() * a.num_kv_heads * a.head_size);
      std::vector<float> values = random(slots.size() * a.num_kv_heads * a.head_size_v);
      write_both(keys, values, slots, "layer" + std::to_string(l));
    }
  }

  void make_step_arrays() {
    const AttentionShape& a = s_.shape;
    block_table.assign(static_cast<std::size_t>(num_reqs()) * cols_, 0);
    query_start_loc = {0};
    for (int r = 0; r < num_reqs(); ++r) {
      const auto [context, query_len] = s_.requests[r];
      geometry_.expand_block_ids(blocks_[r], std::span(block_table)
                                                 .subspan(static_cast<std::size_t>(r) * cols_,
                                                          blocks_[r].size() * geometry_.ratio));
      query_start_loc.push_back(query_start_loc.back() + query_len);
      seq_lens.push_back(cross() ? 2 + query_len : context + query_len);
      if (cross()) encoder_seq_lens.push_back(context);
      for (int i = 0; i < query_len; ++i) {
        slot_mapping.push_back(cross() ? PAD_SLOT_ID : slot(r, context + i));
      }
    }
    slot_mapping.insert(slot_mapping.end(), s_.padded_tokens, PAD_SLOT_ID);
    query = random(static_cast<std::size_t>(num_rows()) * a.num_heads * a.head_size);
    step_keys = random(slot_mapping.size() * a.num_kv_heads * a.head_size);
    step_values = random(slot_mapping.size() * a.num_kv_heads * a.head_size_v);
  }

  Scenario s_;
  std::mt19937 rng_;
  const AttentionBackend& flash_;
  CpuReferenceBackend reference_;
  KVCacheAllocation reference_cache_, flash_cache_;
  KernelBlockGeometry geometry_;
  std::vector<std::vector<std::int32_t>> blocks_;
  int cols_ = 1;
};

inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                         double tol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]);
    if (!(error <= tol * std::max(1.0, std::abs(static_cast<double>(expected[i]))))) {
      ADD_FAILURE() << what << ": entry " << i << " is " << actual[i] << ", expected "
                    << expected[i];
      return;
    }
  }
}

// A random scenario: small shapes, so the suite stays fast under ASan.
inline Scenario random_scenario(std::mt19937& rng) {
  const auto pick = [&](auto... values) {
    const std::vector<int> options = {static_cast<int>(values)...};
    return options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
  };
  Scenario s;
  const auto type = static_cast<AttentionType>(pick(0, 0, 1, 2, 3, 4));
  const int kv_heads = type == AttentionType::mla ? 1 : pick(1, 2, 3);
  const int group = type == AttentionType::mla ? pick(1, 4, 16, 20) : pick(1, 2, 3, 4, 8, 16);
  const int head_size = pick(8, 16, 20, 32);
  const int head_size_v = type == AttentionType::mla ? pick(8, head_size) : pick(head_size, 12);
  s.shape = AttentionShape{type,        kv_heads * group,   kv_heads,        head_size,
                           head_size_v, pick(1, 3, 16, 40), pick(4, 16, 32), pick(0, 0, 1) * 0.3f};
  s.dtype = static_cast<DType>(pick(0, 1, 2, 3));
  s.layout = kAllLayouts[pick(0, 1, 2, 3, 4, 5)];
  s.block_size = pick(4, 8, 16);
  s.kernel_block_size = s.block_size / pick(1, 1, 2, 4);
  const bool head_outside_page =
      s.layout == KVCacheLayout::LHBNC || s.layout == KVCacheLayout::BHLNC;
  if (head_outside_page && kv_heads > 1) s.kernel_block_size = s.block_size;
  s.num_layers = pick(1, 2);
  s.causal = type == AttentionType::full || type == AttentionType::mla ? pick(1, 1, 1, 0) : 1;
  s.padded_tokens = pick(0, 3);
  const int num_reqs = pick(1, 2, 3, 5);
  for (int r = 0; r < num_reqs; ++r) {
    const int query_len = pick(0, 1, 1, 2, 3, 9, 24);
    s.requests.emplace_back(pick(0, 5, 16, 33, 70, 130), query_len);
  }
  return s;
}

inline std::string describe(const Scenario& s) {
  std::string text = fmt::format(
      "{} heads {}/{} size {}/{} window {} chunk {} {} {} block {}/{} layers {} causal {} pad {} "
      "requests",
      attention_type_name(s.shape.type), s.shape.num_heads, s.shape.num_kv_heads, s.shape.head_size,
      s.shape.head_size_v, s.shape.sliding_window, s.shape.attention_chunk_size,
      dtype_name(s.dtype), layout_name(s.layout), s.block_size, s.kernel_block_size, s.num_layers,
      s.causal, s.padded_tokens);
  for (const auto& [context, query] : s.requests) text += fmt::format(" ({},{})", context, query);
  return text;
}

}  // namespace attnrt::flash_test
