#pragma once
// TinyTransformer's state, out of the public header: the layers' shapes and weights and the step
// buffers. It is the model; the public class forwards every call to it
// (src/engine/tiny_transformer.cc), and a copy copies it whole.

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "attnrt/engine/tiny_transformer.h"
#include "core/hidden.h"

namespace attnrt {

struct ATTNRT_HIDDEN TinyTransformer::Impl {
  struct Layer {
    AttentionShape shape;
    int kv_source = 0;
    int query_width = 0;
    int key_width = 0;  // 0 for KV-sharing layers
    int value_width = 0;
    int output_width = 0;
    int rotary_first = 0;  // entries of each head that RoPE turns
    int rotary_dim = 0;
    // The whole model's heads and this rank's first ones (tensor parallelism).
    int model_num_heads = 0;
    int model_num_kv_heads = 0;
    int query_begin = 0;
    int kv_begin = 0;
    BlockWeights weights;
  };

  Impl(const EngineConfig& config, const ForwardContext& forward_context,
       const TinyTransformerOptions& options);

  // TinyTransformer's calls, as documented there.
  void forward(const ModelStep& step);
  std::span<const float> logits() const { return {logits_.data(), num_logits_ * vocab_size_}; }
  std::span<const float> logits_row(int i) const {
    return logits().subspan(static_cast<std::size_t>(i) * vocab_size_, vocab_size_);
  }
  int intermediate_size() const { return kMlpExpansion * hidden_size_ / world_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  bool owns_kv(int layer) const { return layers_[layer].kv_source == layer; }
  std::uint64_t weight_bytes() const;
  DecoderActivations make_activations(int capacity) const;
  AttentionOperands attention_operands(int layer, DecoderActivations& acts, int rows) const;
  void embed(std::span<const std::int32_t> token_ids, RowsView hidden) const;
  void attention_inputs(int layer, RowsView hidden, std::span<const std::int64_t> positions,
                        DecoderActivations& acts) const;
  void attention_output_and_mlp(int layer, RowsView hidden, DecoderActivations& acts) const;
  void lm_head(RowsView hidden, RowsView logits) const;

  void check_layers() const;
  void check_step_buffer_bytes() const;
  void describe_layers();
  void describe_rank_heads(Layer& layer, const AttentionLayer& attention) const;
  void set_tensor_parallel();
  // Sum of every rank's `partial` rows, added to hidden's rows (world 1: the matmul adds them).
  void add_projection(RowsView x, const WeightMatrix& w, RowsView hidden,
                      DecoderActivations& acts) const;
  void set_fast_prefill_layers(const std::set<std::string>& names);
  void generate_weights();
  void generate_layer_weights(int layer);
  void check_step(const ModelStep& step) const;
  void check_layer_metadata(const ModelStep& step, int layer, int rows) const;
  void run_layer(int layer, RowsView hidden, std::span<const std::int64_t> positions,
                 const AttentionMetadata& metadata);
  void run_fast_prefill_layers(const ModelStep& step);
  void compute_logits(std::span<const std::int32_t> rows);

  const EngineConfig* config_;
  const ForwardContext* forward_context_;
  TinyTransformerOptions options_;
  int hidden_size_ = 0;
  int vocab_size_ = 0;
  int max_num_tokens_ = 0;
  int max_num_logits_ = 0;
  int first_fast_prefill_layer_ = 0;
  int rank_ = 0;
  int world_ = 1;
  std::vector<Layer> layers_;
  WeightMatrix embedding_;  // [vocab, hidden]
  std::vector<float> final_norm_;
  WeightMatrix lm_head_;  // [hidden, vocab]

  // Persistent step buffers, sized at construction.
  DecoderActivations acts_;
  std::vector<float> hidden_;          // [max_num_tokens, hidden]
  std::vector<float> reduced_hidden_;  // [max_num_tokens, hidden]: the gathered logits rows
  std::vector<std::int64_t> reduced_positions_;
  std::vector<float> logits_hidden_;  // [max_num_logits, hidden]
  std::vector<float> logits_;         // [max_num_logits, vocab]
  std::size_t num_logits_ = 0;
};

}  // namespace attnrt
