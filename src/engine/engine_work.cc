// LayerWorkModel: multiply-adds per token row of each decoder block of the built-in model.

#include "engine_work.h"

#include <algorithm>

namespace attnrt {

LayerWorkModel::LayerWorkModel(const TinyTransformer& model) {
  const double hidden = model.hidden_size();
  const double intermediate = model.intermediate_size();
  for (int l = 0; l < model.num_layers(); ++l) {
    const AttentionShape& shape = model.attention_shape(l);
    const double query = double{1} * shape.num_heads * shape.head_size;
    // A KV-sharing layer projects its query only.
    const double key_value =
        model.owns_kv(l) ? double{1} * shape.num_kv_heads * (shape.head_size + shape.head_size_v)
                         : 0.0;
    const double output = double{1} * shape.num_heads * shape.head_size_v;
    Layer layer;
    layer.projections = hidden * (query + key_value) + output * hidden + hidden * 2 * intermediate +
                        intermediate * hidden;
    layer.per_key = double{1} * shape.num_heads * (shape.head_size + shape.head_size_v);
    layer.type = shape.type;
    layer.window = shape.type == AttentionType::sliding_window  ? shape.sliding_window
                   : shape.type == AttentionType::chunked_local ? shape.attention_chunk_size
                                                                : 0;
    layers_.push_back(layer);
  }
  logits_per_row_ = hidden * model.vocab_size();
}

double LayerWorkModel::row(int layer, std::int64_t position) const {
  const Layer& l = layers_[static_cast<std::size_t>(layer)];
  std::int64_t keys = position + 1;
  if (l.window > 0 && l.type == AttentionType::sliding_window) {
    keys = std::min<std::int64_t>(keys, l.window);
  } else if (l.window > 0 && l.type == AttentionType::chunked_local) {
    keys = position % l.window + 1;
  }
  return l.projections + l.per_key * static_cast<double>(keys);
}

double LayerWorkModel::rows(int first, int last, std::span<const std::int64_t> positions) const {
  double total = 0;
  for (int l = first; l < last; ++l) {
    for (const std::int64_t position : positions) total += row(l, position);
  }
  return total;
}

}  // namespace attnrt
