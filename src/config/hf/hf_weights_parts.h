#pragma once
// The pieces hf_weights.cc and hf_weights_families.cc share: a field reader that names the model
// type, per-rank splitting, and the attention and MLP counters of the families.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/config/hf_weights.h"

namespace attnrt {
namespace detail {

// Reads the fields of one JSON object; every error names the model type and the field (after
// `field_prefix`, e.g. "quantization_config."). A null field counts as absent.
class WeightFields {
 public:
  WeightFields(const nlohmann::json& object, std::string model_type, std::string field_prefix = "");
  const std::string& model_type() const { return model_type_; }
  bool has(std::string_view field) const { return find(field) != nullptr; }
  bool is_list(std::string_view field) const { return has(field) && find(field)->is_array(); }
  std::uint64_t dim(std::string_view field) const;  // required, at least 1
  std::uint64_t dim_or(std::string_view field, std::uint64_t fallback) const {
    return has(field) ? dim(field) : fallback;
  }
  std::uint64_t count_or(std::string_view field, std::uint64_t fallback) const {  // 0 allowed
    return has(field) ? integer(field, *find(field)) : fallback;
  }
  std::uint64_t layers(std::string_view field) const;  // dim() capped by limits::kMaxLayers
  bool flag_or(std::string_view field, bool fallback) const;
  std::string text_or(std::string_view field, std::string_view fallback) const;
  std::vector<std::uint64_t> counts(std::string_view field) const;  // array of integers
  std::vector<std::string> texts(std::string_view field) const;     // array of strings
  [[noreturn]] void fail_field(std::string_view field, std::string_view problem) const;

 private:
  const nlohmann::json* find(std::string_view field) const;
  std::uint64_t integer(std::string_view field, const nlohmann::json& value) const;
  const nlohmann::json& object_;
  std::string model_type_;
  std::string field_prefix_;
};

// How a tensor is stored: kPlain always in the model dtype (embeddings, norms, routers);
// kLinear is a projection a quant_method quantizes; kExpert is a routed-expert weight (mxfp4 too).
enum class HfStore { kPlain, kLinear, kExpert };

// `count` identical tensors of rows x cols (output x input; cols 1 for a vector), of which one
// rank holds rank_rows x rank_cols.
struct HfTensor {
  std::string_view component;
  std::uint64_t count = 0;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::uint64_t rank_rows = 0;
  std::uint64_t rank_cols = 0;
  HfStore store = HfStore::kPlain;
};

// The tensors of a model, each with the split vLLM gives it.
class HfWeights {
 public:
  explicit HfWeights(std::uint64_t tensor_parallel_size) : tp_(tensor_parallel_size) {}
  // Whole on every rank: norms, routers, biases of row-parallel layers, small gates.
  void replicated(std::string_view component, std::uint64_t count, std::uint64_t rows,
                  std::uint64_t cols, HfStore store = HfStore::kPlain) {
    add(component, count, rows, cols, rows, cols, store);
  }
  // Output rows split (column-parallel linears, vocab-parallel embeddings and LM head).
  void column(std::string_view component, std::uint64_t count, std::uint64_t rows,
              std::uint64_t cols, HfStore store = HfStore::kPlain) {
    add(component, count, rows, cols, ceil_div(rows, tp_), cols, store);
  }
  // Input columns split (row-parallel linears).
  void row(std::string_view component, std::uint64_t count, std::uint64_t rows, std::uint64_t cols,
           HfStore store = HfStore::kPlain) {
    add(component, count, rows, cols, rows, ceil_div(cols, tp_), store);
  }
  // Column-parallel by whole heads: Q (and MLA's per-head projections) split by heads.
  void q_heads(std::string_view component, std::uint64_t count, std::uint64_t heads,
               std::uint64_t head_dim, std::uint64_t cols, HfStore store = HfStore::kLinear) {
    add(component, count, product(heads, head_dim), cols, ceil_div(heads, tp_) * head_dim, cols,
        store);
  }
  // K or V: split by heads, or (vLLM's QKVParallelLinear) one head per rank when tp > heads.
  void kv_heads(std::string_view component, std::uint64_t count, std::uint64_t heads,
                std::uint64_t head_dim, std::uint64_t cols, HfStore store = HfStore::kLinear) {
    const std::uint64_t rank_heads = heads >= tp_ ? ceil_div(heads, tp_) : 1;
    add(component, count, product(heads, head_dim), cols, rank_heads * head_dim, cols, store);
  }
  // The output projection: row-parallel over whole heads.
  void o_heads(std::string_view component, std::uint64_t count, std::uint64_t heads,
               std::uint64_t head_dim, std::uint64_t rows) {
    add(component, count, rows, product(heads, head_dim), rows, ceil_div(heads, tp_) * head_dim,
        HfStore::kLinear);
  }
  void norm(std::uint64_t count, std::uint64_t size) { replicated("norms", count, size, 1); }
  std::uint64_t tp() const { return tp_; }
  const std::vector<HfTensor>& tensors() const { return tensors_; }

 private:
  static std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return a / b + (a % b != 0 ? 1 : 0);
  }
  static std::uint64_t product(std::uint64_t heads, std::uint64_t head_dim);  // checked
  void add(std::string_view component, std::uint64_t count, std::uint64_t rows, std::uint64_t cols,
           std::uint64_t rank_rows, std::uint64_t rank_cols, HfStore store);
  std::uint64_t tp_;
  std::vector<HfTensor> tensors_;
};

// The building blocks of the families (hf_weights.cc).
struct HfDims {
  std::uint64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
};
// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default: heads),
// head_dim (default: hidden / heads), vocab_size.
HfDims read_dims(const WeightFields& fields);

struct HfAttention {
  std::uint64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool qkv_bias = false, o_bias = false, qk_norm = false, v_proj = true;
};
// q, k, v, o (with their biases and per-head q/k norms when set) of `count` layers.
void add_attention(HfWeights& w, std::uint64_t count, std::uint64_t hidden, const HfAttention& a);
// gate and up (column-parallel), down (row-parallel) of width `inter`, `count` times.
void add_gated_mlp(HfWeights& w, std::string_view component, std::uint64_t count,
                   std::uint64_t hidden, std::uint64_t inter, HfStore store = HfStore::kLinear,
                   bool bias = false);

// One supported model_type: whether it ties the LM head when the config does not say, and the
// function adding its tensors (all but the LM head). It returns the LM head's vocab x hidden.
struct HfHeadShape {
  std::uint64_t vocab = 0;
  std::uint64_t hidden = 0;
};
struct HfFamily {
  std::string_view model_type;
  bool ties_by_default = false;
  HfHeadShape (*add)(const WeightFields& fields, HfWeights& weights) = nullptr;
};
std::span<const HfFamily> hf_families();

}  // namespace detail

}  // namespace attnrt
