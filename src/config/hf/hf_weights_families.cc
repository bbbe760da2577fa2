// The tensors of each model family estimate_hf_weight_bytes knows, after vLLM's model files
// (vllm/model_executor/models/<family>.py) and the checkpoints' parameter names.

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/core/checked_math.h"
#include "hf_weights_parts.h"

namespace attnrt::detail {
namespace {

constexpr std::string_view kEmbeddings = "embeddings";
constexpr std::string_view kAttention = "attention";
constexpr std::string_view kDense = "mlp (dense)";
constexpr std::string_view kExperts = "mlp (experts)";
constexpr std::string_view kShared = "mlp (shared experts)";
constexpr std::string_view kRouter = "router";
constexpr std::string_view kPerLayer = "per-layer embeddings";

using Dims = HfDims;
using Attn = HfAttention;

// Routed experts under TP: every rank holds a slice of every expert (vLLM's FusedMoE).
void add_experts(HfWeights& w, std::uint64_t layers, std::uint64_t experts, std::uint64_t hidden,
                 std::uint64_t inter) {
  const std::uint64_t count = checked_mul(layers, experts, "routed experts");
  add_gated_mlp(w, kExperts, count, hidden, inter, HfStore::kExpert);
}

// Vocab-parallel: each rank holds a slice of the rows.
void add_embeddings(HfWeights& w, const Dims& d) {
  w.column(kEmbeddings, 1, d.vocab, d.hidden);
}

// The dense decoders: llama, mistral and phi3 (which fuses qkv and gate/up, same shapes), qwen2
// (QKV biases only), qwen3 and gemma3 (q/k norms), gemma2/3 (four norms a layer), cohere2 (one
// LayerNorm with a weight and no bias: attention and MLP run in parallel).
template <bool kQkvBiasOnly, bool kQkNorm, std::uint64_t kNorms>
HfHeadShape add_dense(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  add_embeddings(w, d);
  const bool bias = kQkvBiasOnly || f.flag_or("attention_bias", false);
  add_attention(w, d.layers, d.hidden,
                {d.heads, d.kv_heads, d.head_dim, bias, bias && !kQkvBiasOnly, kQkNorm, true});
  const std::uint64_t inter = f.dim("intermediate_size");
  add_gated_mlp(w, kDense, d.layers, d.hidden, inter, HfStore::kLinear,
                f.flag_or("mlp_bias", false));
  w.norm(d.layers * kNorms + 1, d.hidden);
  return {d.vocab, d.hidden};
}

HfHeadShape add_mixtral(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  add_embeddings(w, d);
  add_attention(w, d.layers, d.hidden, {d.heads, d.kv_heads, d.head_dim});
  const std::uint64_t experts = f.dim("num_local_experts");
  w.replicated(kRouter, d.layers, experts, d.hidden);
  add_experts(w, d.layers, experts, d.hidden, f.dim("intermediate_size"));
  w.norm(d.layers * 2 + 1, d.hidden);  // input, post-attention; final
  return {d.vocab, d.hidden};
}

// Qwen MoE: a layer is sparse unless in mlp_only_layers or (index + 1) % decoder_sparse_step.
std::uint64_t qwen_sparse_layers(const WeightFields& f, std::uint64_t layers) {
  const std::uint64_t step = f.dim_or("decoder_sparse_step", 1);
  const std::vector<std::uint64_t> only = f.counts("mlp_only_layers");
  const std::set<std::uint64_t> dense(only.begin(), only.end());
  std::uint64_t sparse = 0;
  for (std::uint64_t i = 0; i < layers; ++i) {
    if (!dense.contains(i) && (i + 1) % step == 0) ++sparse;
  }
  return sparse;
}

// Qwen2-MoE adds a shared expert with a sigmoid gate (hidden -> 1); Qwen3-MoE has q/k norms.
template <bool qwen3>
HfHeadShape add_qwen_moe(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  add_embeddings(w, d);
  const bool bias = !qwen3 || f.flag_or("attention_bias", false);
  add_attention(w, d.layers, d.hidden,
                {d.heads, d.kv_heads, d.head_dim, bias, qwen3 && bias, qwen3, true});
  const std::uint64_t experts = f.dim("num_experts");
  const std::uint64_t sparse = qwen_sparse_layers(f, d.layers);
  if (sparse > 0) {
    w.replicated(kRouter, sparse, experts, d.hidden);
    add_experts(w, sparse, experts, d.hidden, f.dim("moe_intermediate_size"));
  }
  if (!qwen3 && sparse > 0) {
    const std::uint64_t shared = f.count_or("shared_expert_intermediate_size", 0);
    if (shared > 0) add_gated_mlp(w, kShared, sparse, d.hidden, shared);
    w.replicated(kRouter, sparse, 1, d.hidden);
  }
  if (sparse < d.layers) {
    add_gated_mlp(w, kDense, d.layers - sparse, d.hidden, f.dim("intermediate_size"));
  }
  w.norm(d.layers * 2 + 1, d.hidden);  // input, post-attention; final
  return {d.vocab, d.hidden};
}

// Multi-head latent attention: low-rank q (when q_lora_rank) and a shared compressed KV.
void add_mla(const WeightFields& f, HfWeights& w, const Dims& d) {
  const std::uint64_t nope = f.dim("qk_nope_head_dim");
  const std::uint64_t rope = f.dim("qk_rope_head_dim");
  const std::uint64_t v = f.dim("v_head_dim");
  const std::uint64_t kv_lora = f.dim("kv_lora_rank");
  const std::uint64_t qk = checked_add(nope, rope, "qk head dim");
  const std::uint64_t n = d.layers;
  if (f.has("q_lora_rank")) {
    const std::uint64_t q_lora = f.dim("q_lora_rank");
    w.replicated(kAttention, n, q_lora, d.hidden, HfStore::kLinear);  // q_a_proj
    w.norm(n, q_lora);                                                // q_a_layernorm
    w.q_heads(kAttention, n, d.heads, qk, q_lora);                    // q_b_proj
  } else {
    w.q_heads(kAttention, n, d.heads, qk, d.hidden);  // q_proj
  }
  const std::uint64_t latent = checked_add(kv_lora, rope, "kv_lora_rank + qk_rope_head_dim");
  w.replicated(kAttention, n, latent, d.hidden, HfStore::kLinear);  // kv_a_proj_with_mqa
  w.norm(n, kv_lora);                                               // kv_a_layernorm
  w.q_heads(kAttention, n, d.heads, checked_add(nope, v, "kv_b head dim"), kv_lora);  // kv_b_proj
  w.o_heads(kAttention, n, d.heads, v, d.hidden);
}

// The first first_k_dense_replace layers are dense, then MoE every moe_layer_freq layers.
HfHeadShape add_deepseek(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  add_embeddings(w, d);
  add_mla(f, w, d);
  const std::uint64_t experts = f.count_or("n_routed_experts", 0);
  const std::uint64_t first_dense = f.count_or("first_k_dense_replace", 0);
  const std::uint64_t freq = f.dim_or("moe_layer_freq", 1);
  std::uint64_t moe = 0;
  for (std::uint64_t i = 0; experts > 0 && i < d.layers; ++i) {
    if (i >= first_dense && i % freq == 0) ++moe;
  }
  if (moe < d.layers) {
    add_gated_mlp(w, kDense, d.layers - moe, d.hidden, f.dim("intermediate_size"));
  }
  if (moe > 0) {
    const std::uint64_t inter = f.dim("moe_intermediate_size");
    w.replicated(kRouter, moe, experts, d.hidden);
    const bool v3 = f.model_type() == "deepseek_v3";
    if (f.text_or("topk_method", v3 ? "noaux_tc" : "greedy") == "noaux_tc") {
      w.replicated(kRouter, moe, experts, 1);  // e_score_correction_bias
    }
    add_experts(w, moe, experts, d.hidden, inter);
    const std::uint64_t shared = f.count_or("n_shared_experts", 0);
    if (shared > 0) add_gated_mlp(w, kShared, moe, d.hidden, checked_mul(shared, inter, "shared"));
  }
  w.norm(d.layers * 2 + 1, d.hidden);  // input, post-attention; final
  return {d.vocab, d.hidden};
}

// moe_layers when given (transformers), else every interleave_moe_layer_step-th layer (vLLM).
std::uint64_t llama4_moe_layers(const WeightFields& f, std::uint64_t layers) {
  if (f.has("moe_layers")) {
    std::set<std::uint64_t> indices;
    for (const std::uint64_t i : f.counts("moe_layers")) {
      if (i < layers) indices.insert(i);
    }
    return indices.size();
  }
  const std::uint64_t step = f.count_or("interleave_moe_layer_step", 1);
  return step == 0 ? 0 : layers / step;
}

// Llama 4: MoE layers have routed experts plus one shared expert of intermediate_size; the
// others a dense MLP of intermediate_size_mlp. Its q/k norm has no weight.
HfHeadShape add_llama4(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  add_embeddings(w, d);
  add_attention(w, d.layers, d.hidden, {d.heads, d.kv_heads, d.head_dim});
  const std::uint64_t moe = llama4_moe_layers(f, d.layers);
  if (moe > 0) {
    const std::uint64_t experts = f.dim("num_local_experts");
    const std::uint64_t inter = f.dim("intermediate_size");
    w.replicated(kRouter, moe, experts, d.hidden);
    add_experts(w, moe, experts, d.hidden, inter);
    add_gated_mlp(w, kShared, moe, d.hidden, inter);
  }
  if (moe < d.layers) {
    add_gated_mlp(w, kDense, d.layers - moe, d.hidden, f.dim("intermediate_size_mlp"));
  }
  w.norm(d.layers * 2 + 1, d.hidden);  // input, post-attention; final
  return {d.vocab, d.hidden};
}

// gpt-oss: biased attention with one learned sink per head; biased router and experts.
HfHeadShape add_gpt_oss(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  add_embeddings(w, d);
  add_attention(w, d.layers, d.hidden, {d.heads, d.kv_heads, d.head_dim, true, true});
  w.column(kAttention, d.layers, d.heads, 1);  // sinks, split with the heads
  const std::uint64_t experts = f.dim("num_local_experts");
  w.replicated(kRouter, d.layers, experts, d.hidden);
  w.replicated(kRouter, d.layers, experts, 1);
  const std::uint64_t count = checked_mul(d.layers, experts, "routed experts");
  add_gated_mlp(w, kExperts, count, d.hidden, f.dim("intermediate_size"), HfStore::kExpert, true);
  w.norm(d.layers * 2 + 1, d.hidden);  // input, post-attention; final
  return {d.vocab, d.hidden};
}

// Whisper self- or cross-attention: biases on q, v and out, none on k.
void add_whisper_attention(HfWeights& w, std::string_view component, std::uint64_t count,
                           std::uint64_t d, std::uint64_t heads) {
  const std::uint64_t head_dim = d / heads;
  w.q_heads(component, count, heads, head_dim, d);
  w.q_heads(component, count, heads, head_dim, 1, HfStore::kPlain);
  w.kv_heads(component, count * 2, heads, head_dim, d);
  w.kv_heads(component, count, heads, head_dim, 1, HfStore::kPlain);
  w.o_heads(component, count, heads, head_dim, d);
  w.replicated(component, count, d, 1);
}

void add_whisper_mlp(HfWeights& w, std::uint64_t count, std::uint64_t d, std::uint64_t ffn) {
  w.column(kDense, count, ffn, d, HfStore::kLinear);
  w.column(kDense, count, ffn, 1);
  w.row(kDense, count, d, ffn, HfStore::kLinear);
  w.replicated(kDense, count, d, 1);
}

// Whisper: the encoder (conv stem, positions, layers) and the decoder with cross attention.
// vLLM's whisper.py keeps token and position embeddings whole (nn.Embedding) on every rank.
HfHeadShape add_whisper(const WeightFields& f, HfWeights& w) {
  const std::uint64_t d = f.dim("d_model");
  const std::uint64_t enc = f.layers("encoder_layers");
  const std::uint64_t dec = f.layers("decoder_layers");
  const std::uint64_t enc_heads = f.dim("encoder_attention_heads");
  const std::uint64_t dec_heads = f.dim("decoder_attention_heads");
  if (enc_heads > d || dec_heads > d) f.fail_field("d_model", "is smaller than the heads");
  const std::uint64_t vocab = f.dim("vocab_size");
  w.replicated(kEmbeddings, 1, vocab, d);
  w.replicated("positional embeddings", 1, f.dim("max_source_positions"), d);
  w.replicated("positional embeddings", 1, f.dim("max_target_positions"), d);
  const std::uint64_t mel = f.dim("num_mel_bins");
  w.replicated("conv stem", 1, d, checked_mul(mel, 3, "conv1 inputs"));
  w.replicated("conv stem", 1, d, checked_mul(d, 3, "conv2 inputs"));
  w.replicated("conv stem", 2, d, 1);
  add_whisper_attention(w, kAttention, enc, d, enc_heads);
  add_whisper_attention(w, kAttention, dec, d, dec_heads);
  add_whisper_attention(w, "cross attention", dec, d, dec_heads);
  add_whisper_mlp(w, enc, d, f.dim("encoder_ffn_dim"));
  add_whisper_mlp(w, dec, d, f.dim("decoder_ffn_dim"));
  // LayerNorms (weight and bias): 2 per encoder layer, 3 per decoder layer, 1 after each stack.
  w.norm(2 * (2 * enc + 3 * dec + 2), d);
  return {vocab, d};
}

// Per-layer embeddings (Gemma 3n, Gemma 4): a vocab-parallel table of every layer's inputs, a
// column-parallel projection from the hidden state, and per layer a replicated gate and
// projection with a norm.
void add_ple(const WeightFields& f, HfWeights& w, const Dims& d, std::uint64_t ple) {
  const std::uint64_t n = d.layers;
  const std::uint64_t all_ple = checked_mul(n, ple, "num_hidden_layers x per-layer input");
  w.column(kPerLayer, 1, f.dim_or("vocab_size_per_layer_input", 262144), all_ple);
  w.column(kPerLayer, 1, all_ple, d.hidden);  // per_layer_model_projection
  w.replicated(kPerLayer, n, ple, d.hidden);  // per_layer_input_gate
  w.replicated(kPerLayer, n, d.hidden, ple);  // per_layer_projection
  w.norm(1, ple);
  w.norm(n, d.hidden);
}

// Gemma 3n: per-layer embeddings (PLE), AltUp's four streams and LAuReL's low-rank residual,
// all with the exact shapes of vLLM's gemma3n.py (nothing approximated).
HfHeadShape add_gemma3n(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  const std::uint64_t n = d.layers;
  add_embeddings(w, d);
  add_ple(f, w, d, f.dim_or("hidden_size_per_layer_input", 256));
  const std::uint64_t streams = f.dim_or("altup_num_inputs", 4);
  const std::uint64_t rank = f.dim_or("laurel_rank", 64);
  const std::string_view altup = "altup/laurel";
  // altup_projections and altup_unembed_projections: streams - 1 of each.
  w.column(altup, checked_mul(2, streams - 1, "altup projections"), d.hidden, d.hidden);
  w.replicated(altup, n, streams, streams);  // correction_coefs
  w.replicated(altup, n, checked_mul(streams, streams, "altup_num_inputs^2"), streams);
  w.replicated(altup, n, streams, d.hidden);  // modality_router
  w.replicated(altup, n, d.hidden, 1);        // correct_output_scale
  w.column(altup, n, rank, d.hidden);         // laurel linear_left
  w.row(altup, n, d.hidden, rank);            // laurel linear_right
  const bool bias = f.flag_or("attention_bias", false);
  add_attention(w, n, d.hidden, {d.heads, d.kv_heads, d.head_dim, bias, bias, true, true});
  std::vector<std::uint64_t> inter = f.counts("intermediate_size");
  if (!f.is_list("intermediate_size")) inter.assign(n, f.dim("intermediate_size"));
  if (inter.size() != n) f.fail_field("intermediate_size", "needs one entry per layer");
  for (const std::uint64_t size : inter) add_gated_mlp(w, kDense, 1, d.hidden, size);
  // input, post-attention, pre/post-feedforward, AltUp router and LAuReL norms.
  w.norm(n * 6 + 1, d.hidden);
  return {d.vocab, d.hidden};
}

// Gemma 4 layer kinds: full (or sliding) attention, double-wide MLP (KV-shared layers).
struct Gemma4Kinds {
  std::uint64_t count[2][2] = {{0, 0}, {0, 0}};  // [full][wide]
};

Gemma4Kinds gemma4_kinds(const WeightFields& f, std::uint64_t layers) {
  std::vector<std::string> types = f.texts("layer_types");
  if (types.empty()) {  // transformers' default: every sixth layer and the last are full
    for (std::uint64_t i = 0; i < layers; ++i) {
      types.emplace_back((i + 1) % 6 == 0 || i + 1 == layers ? "full_attention" : "sliding");
    }
  }
  if (types.size() != layers) f.fail_field("layer_types", "needs one entry per layer");
  const std::uint64_t shared = f.count_or("num_kv_shared_layers", 0);
  const bool double_wide = f.flag_or("use_double_wide_mlp", false);
  // As vLLM: the last num_kv_shared_layers, when some layer is left before them.
  const bool sharing = double_wide && shared > 0 && shared < layers;
  Gemma4Kinds kinds;
  for (std::uint64_t i = 0; i < layers; ++i) {
    const bool full = types[i] == "full_attention";
    const bool wide = sharing && i >= layers - shared;
    ++kinds.count[full ? 1 : 0][wide ? 1 : 0];
  }
  return kinds;
}

// Gemma 4: full layers use global_head_dim and, with attention_k_eq_v, the global KV heads and
// no v_proj. With enable_moe_block every layer has its dense MLP AND a routed MoE block beside
// it (vLLM's gemma4.py), with three more norms.
HfHeadShape add_gemma4(const WeightFields& f, HfWeights& w) {
  const Dims d = read_dims(f);
  const std::uint64_t n = d.layers;
  add_embeddings(w, d);
  const Gemma4Kinds kinds = gemma4_kinds(f, n);
  const bool bias = f.flag_or("attention_bias", false);
  const bool k_eq_v = f.flag_or("attention_k_eq_v", false);
  const std::uint64_t global_kv =
      k_eq_v ? f.dim_or("num_global_key_value_heads", d.kv_heads) : d.kv_heads;
  const std::uint64_t global_dim = f.dim_or("global_head_dim", d.head_dim);
  const std::uint64_t sliding = kinds.count[0][0] + kinds.count[0][1];
  const std::uint64_t full = kinds.count[1][0] + kinds.count[1][1];
  add_attention(w, sliding, d.hidden, {d.heads, d.kv_heads, d.head_dim, bias, bias, true, true});
  add_attention(w, full, d.hidden, {d.heads, global_kv, global_dim, bias, bias, true, !k_eq_v});
  const std::uint64_t inter = f.dim("intermediate_size");
  add_gated_mlp(w, kDense, kinds.count[0][0] + kinds.count[1][0], d.hidden, inter);
  add_gated_mlp(w, kDense, kinds.count[0][1] + kinds.count[1][1], d.hidden,
                checked_mul(inter, 2, "double-wide intermediate_size"));
  w.norm(n * 4 + 1, d.hidden);
  w.norm(n, 1);  // layer_scalar
  if (f.flag_or("enable_moe_block", false)) {
    const std::uint64_t experts = f.dim("num_experts");
    w.replicated(kRouter, n, experts, d.hidden);  // router.proj
    w.replicated(kRouter, n, d.hidden, 1);        // router.scale
    w.replicated(kRouter, n, experts, 1);         // per_expert_scale
    add_experts(w, n, experts, d.hidden, f.dim("moe_intermediate_size"));
    w.norm(n * 3, d.hidden);
  }
  // transformers' default hidden_size_per_layer_input is 256; 0 turns PLE off.
  const std::uint64_t ple = f.count_or("hidden_size_per_layer_input", 256);
  if (ple > 0) add_ple(f, w, d, ple);
  return {d.vocab, d.hidden};
}

// ties_by_default: the class default of tie_word_embeddings in transformers.
constexpr HfFamily kFamilies[] = {
    {"llama", false, add_dense<false, false, 2>},
    {"mistral", false, add_dense<false, false, 2>},
    {"mixtral", false, add_mixtral},
    {"qwen2", false, add_dense<true, false, 2>},
    {"qwen2_moe", false, add_qwen_moe<false>},
    {"qwen3", false, add_dense<false, true, 2>},
    {"qwen3_moe", false, add_qwen_moe<true>},
    {"gemma2", true, add_dense<false, false, 4>},
    {"gemma3_text", true, add_dense<false, true, 4>},
    {"gemma3n_text", true, add_gemma3n},
    {"gemma4_text", true, add_gemma4},
    {"gpt_oss", false, add_gpt_oss},
    {"deepseek_v2", false, add_deepseek},
    {"deepseek_v3", false, add_deepseek},
    {"llama4_text", false, add_llama4},
    {"phi3", false, add_dense<false, false, 2>},
    {"cohere2", true, add_dense<false, false, 1>},
    {"whisper", true, add_whisper},
};

}  // namespace

std::span<const HfFamily> hf_families() {
  return kFamilies;
}

}  // namespace attnrt::detail
