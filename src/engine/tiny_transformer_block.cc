// The decoder stages of TinyTransformer around attention: embedding, the attention inputs
// (RMSNorm, QKV projection, RoPE), the output projection and SwiGLU MLP with their residuals,
// and the LM head. forward() and the dense reference both run them.

#include "attnrt/engine/tiny_transformer.h"
#include "tiny_transformer_impl.h"

namespace attnrt {
namespace {

RowsView rows_of(std::vector<float>& buffer, int num_rows, int width) {
  return RowsView{buffer.data(), num_rows, width};
}

}  // namespace

void TinyTransformer::Impl::embed(std::span<const std::int32_t> token_ids, RowsView hidden) const {
  for (int t = 0; t < hidden.num_rows; ++t) embedding_.copy_row(token_ids[t], hidden.row(t));
}

void TinyTransformer::Impl::attention_inputs(int layer, RowsView hidden,
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

void TinyTransformer::Impl::attention_output_and_mlp(int layer, RowsView hidden,
                                                     DecoderActivations& acts) const {
  const Layer& l = layers_[layer];
  const int rows = hidden.num_rows;
  const int intermediate = intermediate_size();
  add_projection(rows_of(acts.attention, rows, l.output_width), l.weights.output, hidden, acts);

  const RowsView normed = rows_of(acts.normed, rows, hidden_size_);
  rms_norm(hidden, l.weights.mlp_norm, kNormEps, normed);
  const RowsView gate_up = rows_of(acts.gate_up, rows, 2 * intermediate);
  matmul(normed, l.weights.gate_up, gate_up, false, options_.num_threads);
  const RowsView mlp = rows_of(acts.mlp, rows, intermediate);
  swiglu(gate_up, intermediate, mlp);
  add_projection(mlp, l.weights.down, hidden, acts);
}

// On one rank the product adds straight into the residual stream; split across ranks, each
// rank's partial sum over its heads (or MLP columns) is all-reduced first.
void TinyTransformer::Impl::add_projection(RowsView x, const WeightMatrix& w, RowsView hidden,
                                           DecoderActivations& acts) const {
  if (world_ == 1) {
    matmul(x, w, hidden, /*accumulate=*/true, options_.num_threads);
    return;
  }
  const RowsView partial = rows_of(acts.partial, hidden.num_rows, hidden_size_);
  matmul(x, w, partial, /*accumulate=*/false, options_.num_threads);
  const std::size_t size = static_cast<std::size_t>(hidden.num_rows) * hidden_size_;
  options_.communicator->all_reduce_sum(std::span(acts.partial).first(size));
  for (int r = 0; r < hidden.num_rows; ++r) {
    float* out = hidden.row(r);
    const float* sum = partial.row(r);
    for (int c = 0; c < hidden_size_; ++c) out[c] += sum[c];
  }
}

void TinyTransformer::Impl::lm_head(RowsView hidden, RowsView logits) const {
  rms_norm(hidden, final_norm_, kNormEps, hidden);
  matmul(hidden, lm_head_, logits, false, options_.num_threads);
}

}  // namespace attnrt
