// Naming and recording the layers of a family's shape, and the two families whose layers are not
// "one attention per decoder layer": DeepSeek's MLA and Whisper's encoder-decoder.

#include <fmt/format.h>

#include "hf_layer_rules.h"
#include "hf_layers.h"

namespace attnrt::detail {
namespace {

std::string layer_name(std::string_view prefix, int index, std::string_view module) {
  return fmt::format("{}.layers.{}.{}.attn", prefix, index, module);
}

}  // namespace

HfLayer make_layer(std::string name, AttentionType type, const HfHeads& heads, int head_size_v,
                   std::string decided_by) {
  HfLayer layer;
  layer.name = std::move(name);
  layer.type = type;
  layer.num_heads = heads.num_heads;
  layer.num_kv_heads = heads.num_kv_heads;
  layer.head_size = heads.head_size;
  layer.head_size_v = head_size_v;
  layer.decided_by = std::move(decided_by);
  return layer;
}

// DeepSeek-V2/V3 and Kimi K2: MLA when kv_lora_rank is set (vLLM's default; its cache row is the
// latent plus the RoPE key, one "head" replicated on every rank), else multi-head attention with
// nope + rope key dims, V zero-padded to the same width.
HfLayerSet map_deepseek_layers(const HfFields& fields, std::string_view prefix) {
  if (fields.has("index_topk")) {
    fields.fail_at("index_topk",
                   "DeepSeek-V3.2's sparse indexer keeps a second cache attnrt does not plan");
  }
  const int num_layers = fields.require_int("num_hidden_layers");
  if (num_layers <= 0) fields.fail_at("num_hidden_layers", "must be positive");
  HfHeads heads;
  heads.num_heads = fields.require_int("num_attention_heads");
  const int rope = fields.require_int("qk_rope_head_dim");
  HfLayerSet set;
  AttentionType type = AttentionType::mla;
  int head_size_v = 0;
  std::string decided_by;
  if (const std::optional<int> rank = fields.get_int("kv_lora_rank")) {
    heads.num_kv_heads = 1;
    heads.head_size = *rank + rope;
    head_size_v = *rank;
    decided_by = "num_attention_heads, kv_lora_rank + qk_rope_head_dim (MLA latent, 1 KV head)";
  } else {
    type = AttentionType::full;
    heads.num_kv_heads = heads.num_heads;
    heads.head_size = fields.require_int("qk_nope_head_dim") + rope;
    // vLLM pads V to the key width before it writes the cache (deepseek_v2.py).
    head_size_v = heads.head_size;
    decided_by =
        "kv_lora_rank null: multi-head, qk_nope_head_dim + qk_rope_head_dim (V padded to it)";
  }
  for (int i = 0; i < num_layers; ++i) {
    set.layers.push_back(
        make_layer(layer_name(prefix, i, "self_attn"), type, heads, head_size_v, decided_by));
  }
  if (const int mtp = fields.int_or("num_nextn_predict_layers", 0); mtp > 0) {
    set.notes.push_back(fmt::format(
        "num_nextn_predict_layers {}: MTP layers run only as a speculative draft, not planned",
        mtp));
  }
  set.notes.push_back("head_dim (transformers sets it to qk_rope_head_dim) is not the cache width");
  return set;
}

// Whisper: encoder self-attention (no cache), then per decoder layer a causal self-attention and
// a cross-attention over max_source_positions encoder tokens.
HfLayerSet map_whisper_layers(const HfFields& fields) {
  const int d_model = fields.require_int("d_model");
  const auto heads_of = [&](std::string_view key) {
    HfHeads heads;
    heads.num_heads = fields.require_int(key);
    if (heads.num_heads <= 0 || d_model % heads.num_heads != 0) {
      fields.fail_at(key, "{} does not divide d_model {}", heads.num_heads, d_model);
    }
    heads.num_kv_heads = heads.num_heads;
    heads.head_size = d_model / heads.num_heads;
    return heads;
  };
  const HfHeads encoder = heads_of("encoder_attention_heads");
  const HfHeads decoder = heads_of("decoder_attention_heads");
  const int encoder_layers = fields.require_int("encoder_layers");
  const int decoder_layers = fields.require_int("decoder_layers");
  if (encoder_layers < 0 || decoder_layers <= 0) {
    fields.fail_at("decoder_layers", "layer counts must be positive");
  }
  HfLayerSet set;
  for (int i = 0; i < encoder_layers; ++i) {
    set.layers.push_back(make_layer(fmt::format("model.encoder.layers.{}.self_attn.attn", i),
                                    AttentionType::encoder_only, encoder, encoder.head_size,
                                    "encoder_layers, encoder_attention_heads, d_model"));
  }
  for (int i = 0; i < decoder_layers; ++i) {
    set.layers.push_back(make_layer(fmt::format("model.decoder.layers.{}.self_attn.attn", i),
                                    AttentionType::full, decoder, decoder.head_size,
                                    "decoder_layers, decoder_attention_heads, d_model"));
    set.layers.push_back(make_layer(fmt::format("model.decoder.layers.{}.encoder_attn.attn", i),
                                    AttentionType::cross, decoder, decoder.head_size,
                                    "decoder_layers, max_source_positions"));
  }
  set.max_encoder_len = fields.int_or("max_source_positions", 1500);
  return set;
}

}  // namespace attnrt::detail
