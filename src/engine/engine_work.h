#pragma once
// The layer work of the built-in model, in multiply-adds per token row: projections, MLP and
// attention over the keys the row's position sees. The engine uses it to split a fast-prefill
// step's measured time between the work done and the work the KV-sharing layers skipped, and to
// give the theoretical speed-up 1 / (1 - f) of fast prefill.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/engine/tiny_transformer.h"

namespace attnrt {

class LayerWorkModel {
 public:
  explicit LayerWorkModel(const TinyTransformer& model);

  int num_layers() const { return static_cast<int>(layers_.size()); }
  // Multiply-adds of `layer` on one query row at `position` (position + 1 keys, fewer in a
  // sliding window or an attention chunk).
  double row(int layer, std::int64_t position) const;
  // The same summed over layers [first, last) and the rows at `positions`.
  double rows(int first, int last, std::span<const std::int64_t> positions) const;
  // The LM head on `num_rows` logits rows.
  double logits(int num_rows) const { return logits_per_row_ * num_rows; }

 private:
  struct Layer {
    double projections = 0;  // QKV, output projection and MLP
    double per_key = 0;      // QK and PV products per key
    AttentionType type = AttentionType::full;
    int window = 0;  // sliding window or attention chunk
  };
  std::vector<Layer> layers_;
  double logits_per_row_ = 0;
};

}  // namespace attnrt
