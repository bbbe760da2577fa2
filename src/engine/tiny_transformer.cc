// TinyTransformer construction: which layers it can run, the shape of each decoder block, the
// fast-prefill split, and the persistent buffers every step reuses.

#include "attnrt/engine/tiny_transformer.h"

#include <algorithm>

#include "attnrt/config/cg_support.h"
#include "attnrt/core/checked_math.h"
#include "attnrt/runner/tensor_parallel.h"
#include "core/fail.h"
#include "tiny_transformer_impl.h"

namespace attnrt {
namespace {

int index_of(const ForwardContext& forward_context, const AttentionLayer& layer) {
  return static_cast<int>(&layer - forward_context.layers().data());
}

// The rows a step may ask logits for: one per request, plus its draft tokens.
int max_logits_rows(const EngineConfig& config, int max_num_tokens) {
  const std::int64_t rows = std::int64_t{std::max(1, config.scheduler.max_num_seqs)} *
                            max_decode_query_len(config.speculative);
  return static_cast<int>(std::min<std::int64_t>(rows, max_num_tokens));
}

TinyTransformerOptions options_of(std::uint64_t seed, DType weight_dtype) {
  TinyTransformerOptions options;
  options.seed = seed;
  options.weight_dtype = weight_dtype;
  return options;
}

}  // namespace

TinyTransformer::Impl::Impl(const EngineConfig& config, const ForwardContext& forward_context,
                            const TinyTransformerOptions& options)
    : config_(&config), forward_context_(&forward_context), options_(options) {
  hidden_size_ = config.model.hidden_size;
  vocab_size_ = config.model.vocab_size;
  max_num_tokens_ =
      options.max_num_tokens > 0 ? options.max_num_tokens : config.scheduler.max_num_batched_tokens;
  check_layers();
  set_tensor_parallel();
  describe_layers();
  set_fast_prefill_layers(options.fast_prefill_layers);
  max_num_logits_ = max_logits_rows(config, max_num_tokens_);
  check_step_buffer_bytes();
  generate_weights();

  const auto tokens = static_cast<std::size_t>(max_num_tokens_);
  acts_ = make_activations(max_num_tokens_);
  hidden_.assign(tokens * hidden_size_, 0.f);
  reduced_hidden_.assign(tokens * hidden_size_, 0.f);
  reduced_positions_.assign(tokens, 0);
  logits_hidden_.assign(static_cast<std::size_t>(max_num_logits_) * hidden_size_, 0.f);
  logits_.assign(static_cast<std::size_t>(max_num_logits_) * vocab_size_, 0.f);
}

void TinyTransformer::Impl::check_layers() const {
  if (hidden_size_ <= 0 || vocab_size_ <= 0) {
    fail(
        "model {}: the built-in transformer needs model.hidden_size and model.vocab_size, got {} "
        "and {}; set both in the config",
        config_->model.name, hidden_size_, vocab_size_);
  }
  if (max_num_tokens_ <= 0) {
    fail("model {}: the step capacity must be positive, got {} tokens", config_->model.name,
         max_num_tokens_);
  }
  if (options_.num_threads < 1) {
    fail("model {}: num_threads must be at least 1, got {}", config_->model.name,
         options_.num_threads);
  }
  if (forward_context_->size() == 0) {
    fail("model {}: the forward context has no attention layers", config_->model.name);
  }
  for (const AttentionLayer& layer : forward_context_->layers()) {
    if (layer.type() == AttentionType::cross || layer.type() == AttentionType::encoder_only) {
      fail(
          "layer {}: {} attention needs an encoder, which the built-in transformer does not "
          "have; run a decoder-only config (full, sliding_window, chunked_local, mla layers)",
          layer.name(), attention_type_name(layer.type()));
    }
    if (layer.is_draft()) {
      fail(
          "layer {} is a speculative draft layer, but the built-in transformer has no draft "
          "model; remove the draft layers to run this config",
          layer.name());
    }
  }
}

void TinyTransformer::Impl::set_tensor_parallel() {
  if (options_.communicator == nullptr) return;
  rank_ = options_.communicator->rank();
  world_ = options_.communicator->world();
  if (world_ < 1 || rank_ < 0 || rank_ >= world_) {
    fail("model {}: rank {} of a world of {} ranks", config_->model.name, rank_, world_);
  }
  if (world_ != config_->parallel.tensor_parallel_size) {
    fail(
        "model {}: the communicator has {} ranks, but parallel.tensor_parallel_size is {}; "
        "launch as many ranks as the config splits the heads across",
        config_->model.name, world_, config_->parallel.tensor_parallel_size);
  }
  if ((kMlpExpansion * hidden_size_) % world_ != 0) {
    fail("model {}: the MLP's {} intermediate columns cannot be split evenly across {} ranks",
         config_->model.name, kMlpExpansion * hidden_size_, world_);
  }
}

// The layer's heads in the whole model, and where this rank's begin (rank_head_range's rule).
void TinyTransformer::Impl::describe_rank_heads(Layer& layer,
                                                const AttentionLayer& attention) const {
  const AttentionShape& s = layer.shape;
  layer.model_num_heads = s.num_heads;
  layer.model_num_kv_heads = s.num_kv_heads;
  if (world_ == 1) return;
  const auto& layers = config_->model.layers;
  const auto config = std::find_if(layers.begin(), layers.end(), [&](const LayerConfig& l) {
    return l.name == attention.name();
  });
  if (config == layers.end()) {
    fail("layer {}: not in the config's model.layers, so its heads cannot be split across ranks",
         attention.name());
  }
  const RankHeadRange heads = rank_head_range(*config, rank_, world_);
  layer.model_num_heads = config->num_heads;
  layer.model_num_kv_heads = s.type == AttentionType::mla ? s.num_kv_heads : config->num_kv_heads;
  layer.query_begin = heads.query_begin;
  layer.kv_begin = heads.kv_begin;
}

void TinyTransformer::Impl::describe_layers() {
  const ForwardContext& context = *forward_context_;
  layers_.resize(context.size());
  for (const AttentionLayer& attention : context.layers()) {
    const int i = index_of(context, attention);
    Layer& layer = layers_[i];
    layer.shape = attention.attention_shape();
    layer.kv_source = i;
    if (attention.shares_kv()) {
      const AttentionLayer* target = context.find(attention.kv_sharing_target());
      if (target == nullptr || index_of(context, *target) >= i) {
        fail(
            "layer {} shares the KV cache of {}, which is not an earlier layer of the forward "
            "context; KV-sharing targets must run first",
            attention.name(), attention.kv_sharing_target());
      }
      layer.kv_source = layers_[index_of(context, *target)].kv_source;
    }
    const AttentionShape& s = layer.shape;
    const bool mla = s.type == AttentionType::mla;
    layer.query_width = s.num_heads * s.head_size;
    layer.key_width = attention.shares_kv() ? 0 : s.num_kv_heads * s.head_size;
    layer.value_width = attention.shares_kv() || mla ? 0 : s.num_kv_heads * s.head_size_v;
    layer.output_width = s.num_heads * s.head_size_v;
    // MLA turns only the latent's trailing rope entries (DeepSeek's decoupled RoPE): the value
    // part, the first head_size_v entries, stays position-free.
    layer.rotary_first = mla ? s.head_size_v : 0;
    layer.rotary_dim = s.head_size - layer.rotary_first;
    describe_rank_heads(layer, attention);
  }
}

void TinyTransformer::Impl::set_fast_prefill_layers(const std::set<std::string>& names) {
  first_fast_prefill_layer_ = num_layers();
  std::vector<int> indices;
  for (const std::string& name : names) {
    const AttentionLayer* layer = forward_context_->find(name);
    if (layer == nullptr) {
      fail("fast-prefill layer {} is not a layer of the forward context", name);
    }
    if (!layer->shares_kv()) {
      fail(
          "fast-prefill layer {} owns its KV cache, so it must see every token; only KV-sharing "
          "layers can run on the logits rows alone",
          name);
    }
    indices.push_back(index_of(*forward_context_, *layer));
  }
  std::sort(indices.begin(), indices.end());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const int expected = num_layers() - static_cast<int>(indices.size() - k);
    if (indices[k] != expected) {
      fail(
          "fast-prefill layers must be the trailing layers of the model, but layer {} follows "
          "fast-prefill layer {}; pass get_kv_sharing_fast_prefill_eligible_layers' result",
          forward_context_->layers()[expected].name(),
          forward_context_->layers()[indices[k]].name());
    }
  }
  if (!indices.empty()) first_fast_prefill_layer_ = indices.front();
}

// The floats the constructor allocates per token row and per logits row, in checked arithmetic.
void TinyTransformer::Impl::check_step_buffer_bytes() const {
  std::uint64_t widest_qkv = 0;
  std::uint64_t widest_output = 0;
  for (const Layer& layer : layers_) {
    widest_qkv = std::max<std::uint64_t>(
        widest_qkv, std::uint64_t{0} + layer.query_width + layer.key_width + layer.value_width);
    widest_output = std::max<std::uint64_t>(widest_output, layer.output_width);
  }
  const std::uint64_t hidden = hidden_size_;
  const std::uint64_t intermediate = intermediate_size();
  const std::string_view what = "the built-in transformer's step buffers";
  const std::uint64_t partial = world_ > 1 ? hidden : 0;
  const std::uint64_t per_token =
      3 * hidden + widest_qkv + widest_output + 3 * intermediate + partial + 1;
  const std::uint64_t per_logit = hidden + static_cast<std::uint64_t>(vocab_size_);
  const std::uint64_t floats =
      checked_add(checked_mul(static_cast<std::uint64_t>(max_num_tokens_), per_token, what),
                  checked_mul(static_cast<std::uint64_t>(max_num_logits_), per_logit, what), what);
  const std::uint64_t bytes = checked_mul(floats, sizeof(float), what);
  if (bytes > options_.max_step_buffer_bytes) {
    fail(
        "scheduler.max_num_batched_tokens: {} tokens of hidden_size {} (and {} logits rows of "
        "vocab_size {}) need {} MiB of step buffers in the built-in transformer (limit {} MiB); "
        "lower scheduler.max_num_batched_tokens or max_num_seqs",
        max_num_tokens_, hidden_size_, max_num_logits_, vocab_size_, bytes >> 20,
        options_.max_step_buffer_bytes >> 20);
  }
}

DecoderActivations TinyTransformer::Impl::make_activations(int capacity) const {
  int qkv_width = 0;
  int output_width = 0;
  for (const Layer& layer : layers_) {
    qkv_width = std::max(qkv_width, layer.query_width + layer.key_width + layer.value_width);
    output_width = std::max(output_width, layer.output_width);
  }
  const auto rows = static_cast<std::size_t>(std::max(capacity, 0));
  DecoderActivations acts;
  acts.capacity = capacity;
  acts.normed.assign(rows * hidden_size_, 0.f);
  acts.qkv.assign(rows * qkv_width, 0.f);
  acts.attention.assign(rows * output_width, 0.f);
  acts.gate_up.assign(rows * 2 * intermediate_size(), 0.f);
  acts.mlp.assign(rows * intermediate_size(), 0.f);
  if (world_ > 1) acts.partial.assign(rows * hidden_size_, 0.f);
  return acts;
}

AttentionOperands TinyTransformer::Impl::attention_operands(int layer, DecoderActivations& acts,
                                                            int rows) const {
  const Layer& l = layers_[layer];
  const AttentionShape& s = l.shape;
  const std::int64_t width = l.query_width + l.key_width + l.value_width;
  float* query = acts.qkv.data();
  float* key = query + l.query_width;
  AttentionOperands operands;
  operands.query = {query, rows, s.num_heads, s.head_size, width, s.head_size};
  if (owns_kv(layer)) {
    operands.key = {key, rows, s.num_kv_heads, s.head_size, width, s.head_size};
    operands.value = s.type == AttentionType::mla
                         ? ActivationView{key, rows, 1, s.head_size_v, width, s.head_size}
                         : ActivationView{key + l.key_width, rows,  s.num_kv_heads,
                                          s.head_size_v,     width, s.head_size_v};
  }
  operands.output = {acts.attention.data(), rows,           s.num_heads,
                     s.head_size_v,         l.output_width, s.head_size_v};
  return operands;
}

// The public class: one pointer to Impl, calls forwarded.
TinyTransformer::TinyTransformer(const EngineConfig& config, const ForwardContext& forward_context,
                                 const TinyTransformerOptions& options)
    : impl_(std::make_unique<Impl>(config, forward_context, options)) {}
TinyTransformer::TinyTransformer(const EngineConfig& config, const ForwardContext& forward_context,
                                 std::uint64_t seed, DType weight_dtype)
    : TinyTransformer(config, forward_context, options_of(seed, weight_dtype)) {}
TinyTransformer::TinyTransformer(const TinyTransformer& other)
    : impl_(std::make_unique<Impl>(*other.impl_)) {}
TinyTransformer& TinyTransformer::operator=(const TinyTransformer& other) {
  if (this != &other) *this = TinyTransformer(other);
  return *this;
}
TinyTransformer::TinyTransformer(TinyTransformer&& other) noexcept = default;
TinyTransformer& TinyTransformer::operator=(TinyTransformer&& other) noexcept = default;
TinyTransformer::~TinyTransformer() = default;

void TinyTransformer::forward(const ModelStep& step) {
  impl_->forward(step);
}
std::span<const float> TinyTransformer::logits() const {
  return impl_->logits();
}
std::span<const float> TinyTransformer::logits_row(int i) const {
  return impl_->logits_row(i);
}
int TinyTransformer::num_logits() const {
  return static_cast<int>(impl_->num_logits_);
}

const EngineConfig& TinyTransformer::config() const {
  return *impl_->config_;
}
const ForwardContext& TinyTransformer::forward_context() const {
  return *impl_->forward_context_;
}
const TinyTransformerOptions& TinyTransformer::options() const {
  return impl_->options_;
}
int TinyTransformer::hidden_size() const {
  return impl_->hidden_size_;
}
int TinyTransformer::vocab_size() const {
  return impl_->vocab_size_;
}
int TinyTransformer::intermediate_size() const {
  return impl_->intermediate_size();
}
int TinyTransformer::rank() const {
  return impl_->rank_;
}
int TinyTransformer::world() const {
  return impl_->world_;
}
int TinyTransformer::num_layers() const {
  return impl_->num_layers();
}
int TinyTransformer::max_num_tokens() const {
  return impl_->max_num_tokens_;
}
int TinyTransformer::max_num_logits() const {
  return impl_->max_num_logits_;
}
std::uint64_t TinyTransformer::weight_bytes() const {
  return impl_->weight_bytes();
}
int TinyTransformer::first_fast_prefill_layer() const {
  return impl_->first_fast_prefill_layer_;
}

const AttentionShape& TinyTransformer::attention_shape(int layer) const {
  return impl_->layers_[layer].shape;
}
bool TinyTransformer::owns_kv(int layer) const {
  return impl_->owns_kv(layer);
}
int TinyTransformer::kv_source_layer(int layer) const {
  return impl_->layers_[layer].kv_source;
}
const TinyTransformer::BlockWeights& TinyTransformer::block_weights(int layer) const {
  return impl_->layers_[layer].weights;
}
DecoderActivations TinyTransformer::make_activations(int capacity) const {
  return impl_->make_activations(capacity);
}
AttentionOperands TinyTransformer::attention_operands(int layer, DecoderActivations& acts,
                                                      int rows) const {
  return impl_->attention_operands(layer, acts, rows);
}
void TinyTransformer::embed(std::span<const std::int32_t> token_ids, RowsView hidden) const {
  impl_->embed(token_ids, hidden);
}
void TinyTransformer::attention_inputs(int layer, RowsView hidden,
                                       std::span<const std::int64_t> positions,
                                       DecoderActivations& acts) const {
  impl_->attention_inputs(layer, hidden, positions, acts);
}
void TinyTransformer::attention_output_and_mlp(int layer, RowsView hidden,
                                               DecoderActivations& acts) const {
  impl_->attention_output_and_mlp(layer, hidden, acts);
}
void TinyTransformer::lm_head(RowsView hidden, RowsView logits) const {
  impl_->lm_head(hidden, logits);
}

}  // namespace attnrt
