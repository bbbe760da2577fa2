// dense_forward: the built-in transformer on one request, every position at once, with K/V in
// plain arrays instead of the paged cache. Attention follows the reference kernel's arithmetic
// (f32, keys in ascending order, max-subtracted softmax) and masks, so on an f32 cache the two
// agree to rounding.

#include "support/dense_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "attention/key_mask.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// One owning layer's K and V for every position: [positions, kv heads, entries].
struct DenseKV {
  int num_heads = 0;
  int key_size = 0;
  int value_size = 0;
  std::vector<float> keys;
  std::vector<float> values;

  const float* key(int position, int head) const {
    return keys.data() + (static_cast<std::size_t>(position) * num_heads + head) * key_size;
  }
  const float* value(int position, int head) const {
    return values.data() + (static_cast<std::size_t>(position) * num_heads + head) * value_size;
  }
};

float round_to(DType dtype, float value) {
  if (dtype == DType::f32) return value;
  std::byte stored[8];
  store_from_float(dtype, stored, value);
  return load_as_float(dtype, stored);
}

std::vector<float> copy_rows(const ActivationView& rows, DType cache_dtype) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rows.num_tokens) * rows.num_heads * rows.head_size);
  for (int t = 0; t < rows.num_tokens; ++t) {
    for (int h = 0; h < rows.num_heads; ++h) {
      const float* row = rows.row(t, h);
      for (int i = 0; i < rows.head_size; ++i) out.push_back(round_to(cache_dtype, row[i]));
    }
  }
  return out;
}

// MLA's value view is the latent's first head_size_v entries, so it is rounded like the latent.
DenseKV store_kv(const AttentionOperands& operands, DType cache_dtype) {
  DenseKV kv;
  kv.num_heads = operands.key.num_heads;
  kv.key_size = operands.key.head_size;
  kv.value_size = operands.value.head_size;
  kv.keys = copy_rows(operands.key, cache_dtype);
  kv.values = copy_rows(operands.value, cache_dtype);
  return kv;
}

void attend_row(const float* query, const DenseKV& kv, int kv_head, KeyRange keys, float scale,
                std::vector<float>& scores, float* output) {
  const auto [begin, end] = keys;
  scores.assign(static_cast<std::size_t>(end - begin), 0.f);
  float max_score = -std::numeric_limits<float>::infinity();
  for (int k = begin; k < end; ++k) {
    const float* key = kv.key(k, kv_head);
    float dot = 0.f;
    for (int i = 0; i < kv.key_size; ++i) dot += query[i] * key[i];
    scores[k - begin] = scale * dot;
    max_score = std::max(max_score, scores[k - begin]);
  }
  float denominator = 0.f;
  for (float& s : scores) {
    s = std::exp(s - max_score);
    denominator += s;
  }
  std::fill_n(output, kv.value_size, 0.f);
  for (int k = begin; k < end; ++k) {
    const float* value = kv.value(k, kv_head);
    for (int j = 0; j < kv.value_size; ++j) output[j] += scores[k - begin] * value[j];
  }
  for (int j = 0; j < kv.value_size; ++j) {
    output[j] = denominator > 0.f ? output[j] / denominator : 0.f;
  }
}

void dense_attention(const AttentionShape& shape, const ActivationView& query, const DenseKV& kv,
                     const ActivationView& output) {
  const float scale =
      shape.scale != 0.f ? shape.scale : 1.f / std::sqrt(static_cast<float>(shape.head_size));
  const int heads_per_kv_head = shape.num_heads / shape.num_kv_heads;
  std::vector<float> scores;
  // Every position at once: position p is the newest token of a causal request of p + 1 keys.
  const KeyMask mask = key_mask_of(shape, /*causal=*/true);
  for (int p = 0; p < query.num_tokens; ++p) {
    const KeyRange keys = visible_keys(mask, p, p + 1);
    for (int h = 0; h < shape.num_heads; ++h) {
      attend_row(query.row(p, h), kv, h / heads_per_kv_head, keys, scale, scores, output.row(p, h));
    }
  }
}

void check_tokens(const TinyTransformer& model, std::span<const std::int32_t> tokens) {
  if (tokens.empty()) fail("dense_forward: the request has no tokens");
  for (std::size_t p = 0; p < tokens.size(); ++p) {
    if (tokens[p] < 0 || tokens[p] >= model.vocab_size()) {
      fail("dense_forward: position {} holds token {}, outside the vocabulary of {} tokens", p,
           tokens[p], model.vocab_size());
    }
  }
}

}  // namespace

DenseResult dense_forward(const TinyTransformer& model, std::span<const std::int32_t> tokens,
                          const DenseOptions& options) {
  check_tokens(model, tokens);
  const auto n = static_cast<int>(tokens.size());
  const int hidden_size = model.hidden_size();
  const DType cache_dtype =
      options.round_kv_to_cache_dtype ? model.config().cache.dtype : DType::f32;
  std::vector<std::int64_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), 0);

  DecoderActivations acts = model.make_activations(n);
  std::vector<float> hidden_rows(static_cast<std::size_t>(n) * hidden_size);
  const RowsView hidden{hidden_rows.data(), n, hidden_size};
  model.embed(tokens, hidden);
  std::vector<DenseKV> kv(static_cast<std::size_t>(model.num_layers()));
  for (int l = 0; l < model.num_layers(); ++l) {
    model.attention_inputs(l, hidden, positions, acts);
    const AttentionOperands operands = model.attention_operands(l, acts, n);
    if (model.owns_kv(l)) kv[l] = store_kv(operands, cache_dtype);
    dense_attention(model.attention_shape(l), operands.query, kv[model.kv_source_layer(l)],
                    operands.output);
    model.attention_output_and_mlp(l, hidden, acts);
  }

  DenseResult result;
  result.num_tokens = n;
  result.vocab_size = model.vocab_size();
  result.logits.assign(static_cast<std::size_t>(n) * result.vocab_size, 0.f);
  model.lm_head(hidden, RowsView{result.logits.data(), n, result.vocab_size});
  return result;
}

}  // namespace attnrt
