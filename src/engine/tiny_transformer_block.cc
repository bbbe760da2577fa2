// The decoder stages of TinyTransformer around attention: embedding, the attention inputs
// (RMSNorm, QKV projection, RoPE), the output projection and SwiGLU MLP with their residuals,
// and the LM head. forward() and the dense reference both run them.

#include "attnrt/engine/tiny_transformer.h"

namespace attnrt {
namespace {

RowsView rows_of(std::vector<float>& buffer, int num_rows, int width) {
  return RowsView{buffer.data(), num_rows, width};
}

}  // namespace

void TinyTransformer::embed(std::span<const std::int32_t> token_ids, RowsView hidden) const {
  for (int t = 0; t < hidden.num_rows; ++t) embedding_.copy_row(token_ids[t], hidden.row(t));
}

void TinyTransformer::attention_inputs(int layer, RowsView hidden,
                                       std::span<const std::int64_t> positions,
                                       DecoderActivations& acts) const {
  const Layer& l = layers_[layer];
  const int rows = hidden.num_rows;
  const RowsView normed = rows_of(acts.normed, rows, hidden_size_);
  rms_norm(hidden, l.weights.attention_norm, kNormEps, normed);
  const int width = l.query_width + l.key_width + l.value_width;
  matmul(normed, l.weights.qkv, rows_of(acts.qkv, rows, width), false, options_.num_threads);

  const AttentionOperands operands = attention_operands(layer, acts, rows);
  apply_rotary(operands.query, positions, l.rotary_first, l.rotary_dim, kRopeTheta);
  if (owns_kv(layer)) {
    apply_rotary(operands.key, positions, l.rotary_first, l.rotary_dim, kRopeTheta);
  }
}

void TinyTransformer::attention_output_and_mlp(int layer, RowsView hidden,
                                               DecoderActivations& acts) const {
  const Layer& l = layers_[layer];
  const int rows = hidden.num_rows;
  const int intermediate = intermediate_size();
  matmul(rows_of(acts.attention, rows, l.output_width), l.weights.output, hidden,
         /*accumulate=*/true, options_.num_threads);

  const RowsView normed = rows_of(acts.normed, rows, hidden_size_);
  rms_norm(hidden, l.weights.mlp_norm, kNormEps, normed);
  const RowsView gate_up = rows_of(acts.gate_up, rows, 2 * intermediate);
  matmul(normed, l.weights.gate_up, gate_up, false, options_.num_threads);
  const RowsView mlp = rows_of(acts.mlp, rows, intermediate);
  swiglu(gate_up, intermediate, mlp);
  matmul(mlp, l.weights.down, hidden, /*accumulate=*/true, options_.num_threads);
}

void TinyTransformer::lm_head(RowsView hidden, RowsView logits) const {
  rms_norm(hidden, final_norm_, kNormEps, hidden);
  matmul(hidden, lm_head_, logits, false, options_.num_threads);
}

}  // namespace attnrt
