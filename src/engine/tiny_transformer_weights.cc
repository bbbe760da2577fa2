// TinyTransformer's weights: uniform values from a SplitMix64 stream per tensor, seeded by the
// model seed and the tensor's id, so a seed names one model and adding a layer does not change
// the others. Projections have variance 1/fan_in, so activations keep their scale through a
// block; the output and down projections are further scaled by 1/sqrt(2 x layers) (GPT-2's
// residual scaling), so the residual stream grows slowly with depth. A tensor-parallel rank
// generates the whole-model tensors and keeps its slice, so every world runs the same model.

#include <cmath>

#include "attnrt/engine/tiny_transformer.h"
#include "core/fail.h"
#include "tiny_transformer_impl.h"

namespace attnrt {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-bound, bound).
  float uniform(float bound) {
    const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return static_cast<float>((2.0 * unit - 1.0) * bound);
  }

 private:
  std::uint64_t state_;
};

// Tensor ids: 0-2 model-wide, then 8 per layer.
enum TensorId : std::uint64_t {
  kEmbedding = 0,
  kFinalNorm = 1,
  kLmHead = 2,
  kFirstLayer = 8,
};
enum LayerTensor : std::uint64_t { kAttentionNorm, kQkv, kOutput, kMlpNorm, kGateUp, kDown };

SplitMix64 stream(std::uint64_t seed, std::uint64_t tensor) {
  SplitMix64 mixer(seed);
  return SplitMix64(mixer.next() ^ (tensor * 0xd1b54a32d192ed03ull));
}

std::uint64_t layer_tensor(int layer, LayerTensor tensor) {
  return kFirstLayer + 8 * static_cast<std::uint64_t>(layer) + tensor;
}

WeightMatrix random_matrix(DType dtype, int rows, int cols, float bound, SplitMix64 random) {
  WeightMatrix matrix(dtype, rows, cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) matrix.set(r, c, random.uniform(bound));
  }
  return matrix;
}

// RMSNorm gains near 1, rounded like the other weights.
std::vector<float> random_gain(DType dtype, int size, SplitMix64 random) {
  std::vector<float> gain(static_cast<std::size_t>(size));
  for (float& g : gain) {
    g = 1.f + random.uniform(0.1f);
    if (dtype == DType::bf16) g = bf16_bits_to_float(float_to_bf16_bits(g));
  }
  return gain;
}

// [begin, begin + count) of a matrix's rows or columns.
struct Span {
  int begin = 0;
  int count = 0;
};

WeightMatrix keep_columns(const WeightMatrix& full, std::initializer_list<Span> spans) {
  int cols = 0;
  for (const Span& span : spans) cols += span.count;
  WeightMatrix kept(full.dtype(), full.rows(), cols);
  for (int r = 0; r < full.rows(); ++r) {
    int c = 0;
    for (const Span& span : spans) {
      for (int k = 0; k < span.count; ++k) kept.set(r, c++, full.get(r, span.begin + k));
    }
  }
  return kept;
}

WeightMatrix keep_rows(const WeightMatrix& full, Span rows) {
  WeightMatrix kept(full.dtype(), rows.count, full.cols());
  for (int r = 0; r < rows.count; ++r) {
    for (int c = 0; c < full.cols(); ++c) kept.set(r, c, full.get(rows.begin + r, c));
  }
  return kept;
}

// Uniform in [-b, b) has variance b²/3: b = sqrt(3 / fan_in) gives variance 1 / fan_in.
float fan_in_bound(int fan_in) {
  return std::sqrt(3.f / static_cast<float>(fan_in));
}

}  // namespace

std::uint64_t TinyTransformer::Impl::weight_bytes() const {
  std::uint64_t bytes = embedding_.bytes() + lm_head_.bytes() + final_norm_.size() * 4;
  for (const Layer& layer : layers_) {
    const BlockWeights& w = layer.weights;
    bytes += w.qkv.bytes() + w.output.bytes() + w.gate_up.bytes() + w.down.bytes() +
             (w.attention_norm.size() + w.mlp_norm.size()) * 4;
  }
  return bytes;
}

void TinyTransformer::Impl::generate_weights() {
  const DType dtype = options_.weight_dtype;
  const std::uint64_t hidden = hidden_size_;
  const std::uint64_t intermediate = intermediate_size();
  std::uint64_t elements = 2 * hidden * static_cast<std::uint64_t>(vocab_size_);
  for (const Layer& layer : layers_) {
    const std::uint64_t qkv = layer.query_width + layer.key_width + layer.value_width;
    elements += hidden * (qkv + layer.output_width + 3 * intermediate);
  }
  const std::uint64_t bytes = elements * (dtype == DType::bf16 ? 2 : 4);
  if (bytes > options_.max_weight_bytes) {
    fail(
        "model {}: the built-in transformer would need {} MiB of weights (limit {} MiB); it is "
        "a demo model, so run a small config such as examples/tiny-yoco.json",
        config_->model.name, bytes >> 20, options_.max_weight_bytes >> 20);
  }

  const std::uint64_t seed = options_.seed;
  embedding_ =
      random_matrix(dtype, vocab_size_, hidden_size_, std::sqrt(3.f), stream(seed, kEmbedding));
  for (int i = 0; i < num_layers(); ++i) generate_layer_weights(i);
  final_norm_ = random_gain(dtype, hidden_size_, stream(seed, kFinalNorm));
  lm_head_ = random_matrix(dtype, hidden_size_, vocab_size_, fan_in_bound(hidden_size_),
                           stream(seed, kLmHead));
}

}  // namespace attnrt

namespace attnrt {

// The whole model's tensors of layer `i`, then this rank's columns and rows of them.
void TinyTransformer::Impl::generate_layer_weights(int i) {
  const DType dtype = options_.weight_dtype;
  const std::uint64_t seed = options_.seed;
  const float residual_scale = 1.f / std::sqrt(2.f * static_cast<float>(num_layers()));
  Layer& layer = layers_[i];
  const AttentionShape& s = layer.shape;
  BlockWeights& w = layer.weights;
  const int kv_heads = layer.key_width == 0 ? 0 : layer.model_num_kv_heads;
  const int query = layer.model_num_heads * s.head_size;
  const int key = kv_heads * s.head_size;
  const int value = layer.value_width == 0 ? 0 : kv_heads * s.head_size_v;
  const int output = layer.model_num_heads * s.head_size_v;
  const int mlp = kMlpExpansion * hidden_size_;
  w.attention_norm =
      random_gain(dtype, hidden_size_, stream(seed, layer_tensor(i, kAttentionNorm)));
  w.qkv = random_matrix(dtype, hidden_size_, query + key + value, fan_in_bound(hidden_size_),
                        stream(seed, layer_tensor(i, kQkv)));
  w.output = random_matrix(dtype, output, hidden_size_, fan_in_bound(output) * residual_scale,
                           stream(seed, layer_tensor(i, kOutput)));
  w.mlp_norm = random_gain(dtype, hidden_size_, stream(seed, layer_tensor(i, kMlpNorm)));
  w.gate_up = random_matrix(dtype, hidden_size_, 2 * mlp, fan_in_bound(hidden_size_),
                            stream(seed, layer_tensor(i, kGateUp)));
  w.down = random_matrix(dtype, mlp, hidden_size_, fan_in_bound(mlp) * residual_scale,
                         stream(seed, layer_tensor(i, kDown)));
  if (world_ == 1) return;
  const int rank_mlp = intermediate_size();
  w.qkv = keep_columns(w.qkv, {{layer.query_begin * s.head_size, layer.query_width},
                               {query + layer.kv_begin * s.head_size, layer.key_width},
                               {query + key + layer.kv_begin * s.head_size_v, layer.value_width}});
  w.output = keep_rows(w.output, {layer.query_begin * s.head_size_v, layer.output_width});
  w.gate_up =
      keep_columns(w.gate_up, {{rank_ * rank_mlp, rank_mlp}, {mlp + rank_ * rank_mlp, rank_mlp}});
  w.down = keep_rows(w.down, {rank_ * rank_mlp, rank_mlp});
}

}  // namespace attnrt
