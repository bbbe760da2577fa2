#pragma once
// TinyTransformer: the small built-in decoder the engine drives (DESIGN.md §1, §4). One decoder
// block per attention layer of the forward context: RMSNorm → QKV projection (Q only for
// KV-sharing layers) → RoPE (MLA: on the latent's trailing head_size - head_size_v entries) →
// attention through the layer's backend on its bound KV cache view → output projection +
// residual → RMSNorm → SwiGLU MLP (intermediate 2 x hidden) + residual; then a final RMSNorm and
// the LM head. Weights come from a seeded generator, so a seed names a model. On steps with
// fast-prefill rows, the trailing KV-sharing layers run on those rows only (SEMANTICS §6.5).
// Split across tensor-parallel ranks (Megatron style), rank r holds the columns of its heads in
// the QKV projection and their rows in the output projection, a slice of the MLP's columns
// (gate, up) and rows (down), cut from the same seeded full-model weights; the output and down
// projections' partial sums are all-reduced, so every rank keeps the whole residual stream.

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/attention/forward_context.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/engine/communicator.h"
#include "attnrt/engine/model_math.h"

namespace attnrt {

struct TinyTransformerOptions {
  std::uint64_t seed = 0;
  DType weight_dtype = DType::f32;  // bf16: weights rounded to bf16 and kept so; math in f32
  int max_num_tokens = 0;           // rows of a step, padding included; 0: max_num_batched_tokens
  // Layers that take the fast-prefill path (AttentionPlan::fast_prefill_layers): a trailing run
  // of KV-sharing layers.
  std::set<std::string> fast_prefill_layers;
  std::uint64_t max_weight_bytes = 1ull << 30;  // refuses configs too large for a demo model
  // Likewise for the step buffers, which grow with max_num_batched_tokens x hidden_size: checked
  // before they are allocated, so a huge but valid config is refused instead of exhausting RAM.
  std::uint64_t max_step_buffer_bytes = 4ull << 30;
  // Threads of the dense projections; results are the same for any count. 1 by default: on a
  // loaded machine, OpenMP barriers cost more than they save.
  int num_threads = 1;
  // The tensor-parallel group this model is one rank of (it must outlive the model); null: one
  // rank. The forward context must hold this rank's share of the heads (tensor_parallel_size =
  // the group's world).
  Communicator* communicator = nullptr;
};

// One step's inputs. Spans point into the caller's persistent buffers.
struct ModelStep {
  int num_tokens = 0;                       // rows, padding included
  std::span<const std::int32_t> token_ids;  // [num_tokens]; padding rows hold any valid id
  std::span<const std::int64_t> positions;  // [num_tokens]
  // One per layer of the forward context, in its order. An owning layer writes K/V through its
  // metadata's common.slot_mapping (PAD_SLOT_ID rows are skipped); a fast-prefill layer's
  // metadata describes the gathered logits rows (the FastPrefill wrapper's).
  std::span<const AttentionMetadata* const> metadata;
  std::span<const std::int32_t> logits_indices;  // rows whose logits are produced, in order
  // FastPrefillHelper::prepare's rows (the logits rows, padded by repeating the last) and how
  // many are real; empty: every layer runs on every row. The fast-prefill layers run on all
  // logits_indices_padded rows; the first num_logits_indices are scattered back.
  std::span<const std::int32_t> logits_indices_padded;
  int num_logits_indices = 0;
};

// Row buffers of one decoder block for up to `capacity` rows, reused by every layer.
struct DecoderActivations {
  int capacity = 0;
  std::vector<float> normed;     // [capacity, hidden]
  std::vector<float> qkv;        // [capacity, widest Q|K|V of any layer]
  std::vector<float> attention;  // [capacity, widest attention output]
  std::vector<float> gate_up;    // [capacity, 2 * intermediate]
  std::vector<float> mlp;        // [capacity, intermediate]
  std::vector<float> partial;    // [capacity, hidden]: a rank's share before the all-reduce
};

// The attention operands of one layer inside a DecoderActivations.
struct AttentionOperands {
  ActivationView query;
  ActivationView key;    // empty for KV-sharing layers
  ActivationView value;  // MLA: the latent's first head_size_v entries
  ActivationView output;
};

class ATTNRT_API TinyTransformer {
 public:
  // Per-layer weights of one decoder block.
  struct BlockWeights {
    std::vector<float> attention_norm;
    WeightMatrix qkv;  // [hidden, Q | K | V]
    WeightMatrix output;
    std::vector<float> mlp_norm;
    WeightMatrix gate_up;  // [hidden, gate | up]
    WeightMatrix down;
  };

  static constexpr int kMlpExpansion = 2;  // intermediate size = 2 x hidden size
  static constexpr float kNormEps = 1e-6f;
  static constexpr double kRopeTheta = 10000.0;

  // `config` and `forward_context` must outlive the model. Throws Error for cross or
  // encoder-only layers (the engine has no encoder), draft layers, a KV-sharing target outside
  // the context, bad fast-prefill layers, or a model over options.max_weight_bytes or step
  // buffers over options.max_step_buffer_bytes.
  TinyTransformer(const EngineConfig& config, const ForwardContext& forward_context,
                  const TinyTransformerOptions& options);
  TinyTransformer(const EngineConfig& config, const ForwardContext& forward_context,
                  std::uint64_t seed, DType weight_dtype = DType::f32);
  // A copy has its own weights and buffers (and the same config and forward context).
  TinyTransformer(const TinyTransformer& other);
  TinyTransformer& operator=(const TinyTransformer& other);
  TinyTransformer(TinyTransformer&& other) noexcept;
  TinyTransformer& operator=(TinyTransformer&& other) noexcept;
  ~TinyTransformer();

  // Runs one step and leaves the logits of step.logits_indices in logits(). Checks every input
  // first and throws Error naming the culprit; allocates nothing.
  void forward(const ModelStep& step);
  // [num_logits, vocab_size] of the last forward.
  std::span<const float> logits() const;
  std::span<const float> logits_row(int i) const;
  int num_logits() const;

  const EngineConfig& config() const;
  const ForwardContext& forward_context() const;
  const TinyTransformerOptions& options() const;
  int hidden_size() const;
  int vocab_size() const;
  // The MLP's intermediate width on this rank: kMlpExpansion x hidden / world.
  int intermediate_size() const;
  int rank() const;
  int world() const;
  int num_layers() const;
  int max_num_tokens() const;
  int max_num_logits() const;  // max_num_seqs x (1 + drafts)
  std::uint64_t weight_bytes() const;
  // Layers [first_fast_prefill_layer(), num_layers()) take the fast-prefill path.
  int first_fast_prefill_layer() const;

  // Decoder stages, shared by forward() and the dense reference so that the two differ only in
  // how attention reads K/V.
  const AttentionShape& attention_shape(int layer) const;
  bool owns_kv(int layer) const;
  int kv_source_layer(int layer) const;  // itself or its KV-sharing target
  const BlockWeights& block_weights(int layer) const;
  DecoderActivations make_activations(int capacity) const;
  AttentionOperands attention_operands(int layer, DecoderActivations& acts, int rows) const;
  // Token embeddings of `token_ids` into hidden's rows.
  void embed(std::span<const std::int32_t> token_ids, RowsView hidden) const;
  // RMSNorm of hidden's rows, QKV projection, RoPE at `positions`, into acts.qkv.
  void attention_inputs(int layer, RowsView hidden, std::span<const std::int64_t> positions,
                        DecoderActivations& acts) const;
  // Output projection of acts.attention, then the SwiGLU MLP, each added to hidden's rows.
  void attention_output_and_mlp(int layer, RowsView hidden, DecoderActivations& acts) const;
  // Final RMSNorm (in place on hidden's rows) and LM head into logits' rows.
  void lm_head(RowsView hidden, RowsView logits) const;

 private:
  // Shapes, weights and step buffers (src/engine/tiny_transformer_impl.h).
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnrt
