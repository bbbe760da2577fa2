// The defaults of transformers' configuration classes (vLLM's own class where vLLM registers
// one), transcribed from the files each entry names: only the fields the importer or the weight
// count read, and only those whose default is a value (None defaults are derived or absent).

#include "hf_class_defaults.h"

#include <algorithm>
#include <map>

namespace attnrt::detail {
namespace {

struct ClassTable {
  std::string_view model_type;
  std::string_view source;
  std::string_view defaults;  // a JSON object
};

// vLLM registers its own DeepseekV3Config for kimi_k2 and deepseek_v32 (the checkpoints' remote
// code is not read): DeepSeek-V3's values.
constexpr std::string_view kVllmDeepseekV3 =
    R"({"vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_nextn_predict_layers": 1,
        "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1,
        "n_routed_experts": 256, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
        "num_experts_per_tok": 8, "moe_layer_freq": 1, "first_k_dense_replace": 3,
        "max_position_embeddings": 4096, "tie_word_embeddings": false, "attention_bias": false})";

const std::vector<ClassTable>& class_tables() {
  static const std::vector<ClassTable> tables = {
      {"llama", "transformers/models/llama/configuration_llama.py: LlamaConfig",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false})"},
      {"mistral", "transformers/models/mistral/configuration_mistral.py: MistralConfig",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "max_position_embeddings": 131072, "tie_word_embeddings": false,
         "sliding_window": 4096})"},
      {"mixtral", "transformers/models/mixtral/configuration_mixtral.py: MixtralConfig",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "max_position_embeddings": 131072, "tie_word_embeddings": false, "num_experts_per_tok": 2,
         "num_local_experts": 8})"},
      {"phi3", "transformers/models/phi3/configuration_phi3.py: Phi3Config",
       R"({"vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096,
         "tie_word_embeddings": false})"},
      {"qwen2", "transformers/models/qwen2/configuration_qwen2.py: Qwen2Config",
       R"({"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
         "max_position_embeddings": 32768, "tie_word_embeddings": false,
         "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28})"},
      {"qwen2_moe", "transformers/models/qwen2_moe/configuration_qwen2_moe.py: Qwen2MoeConfig",
       R"({"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
         "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
         "max_position_embeddings": 32768, "tie_word_embeddings": false,
         "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28,
         "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
         "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4, "num_experts": 60})"},
      {"qwen3", "transformers/models/qwen3/configuration_qwen3.py: Qwen3Config",
       R"({"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
         "head_dim": 128, "max_position_embeddings": 32768, "tie_word_embeddings": false,
         "attention_bias": false, "use_sliding_window": false, "sliding_window": 4096,
         "max_window_layers": 28})"},
      {"qwen3_moe", "transformers/models/qwen3_moe/configuration_qwen3_moe.py: Qwen3MoeConfig",
       R"({"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
         "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
         "max_position_embeddings": 32768, "tie_word_embeddings": false, "attention_bias": false,
         "use_sliding_window": false, "sliding_window": 4096, "decoder_sparse_step": 1,
         "moe_intermediate_size": 768, "num_experts_per_tok": 8, "num_experts": 128})"},
      {"gemma2", "transformers/models/gemma2/configuration_gemma2.py: Gemma2Config",
       R"({"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
         "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
         "head_dim": 256, "max_position_embeddings": 8192, "tie_word_embeddings": true,
         "attention_bias": false, "sliding_window": 4096})"},
      {"gemma3_text", "transformers/models/gemma3/configuration_gemma3.py: Gemma3TextConfig",
       R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
         "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
         "head_dim": 256, "max_position_embeddings": 131072, "tie_word_embeddings": true,
         "attention_bias": false, "sliding_window": 4096})"},
      {"gemma3n_text", "transformers/models/gemma3n/configuration_gemma3n.py: Gemma3nTextConfig",
       R"({"vocab_size": 262400, "hidden_size": 2048, "intermediate_size": 16384,
         "num_hidden_layers": 35, "num_attention_heads": 8, "num_key_value_heads": 2,
         "head_dim": 256, "max_position_embeddings": 32768, "tie_word_embeddings": true,
         "attention_bias": false, "sliding_window": 512, "vocab_size_per_layer_input": 262144,
         "hidden_size_per_layer_input": 256, "altup_num_inputs": 4, "num_kv_shared_layers": 15,
         "laurel_rank": 64})"},
      {"cohere2", "transformers/models/cohere2/configuration_cohere2.py: Cohere2Config",
       R"({"vocab_size": 256000, "hidden_size": 8192, "intermediate_size": 22528,
         "num_hidden_layers": 40, "num_attention_heads": 64, "max_position_embeddings": 8192,
         "tie_word_embeddings": true, "attention_bias": false, "sliding_window": 4096})"},
      {"gemma4_text", "transformers/models/gemma4/configuration_gemma4.py: Gemma4TextConfig",
       R"({"vocab_size": 262144, "hidden_size": 2304, "intermediate_size": 9216,
         "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4,
         "head_dim": 256, "max_position_embeddings": 131072, "tie_word_embeddings": true,
         "attention_bias": false, "sliding_window": 512, "vocab_size_per_layer_input": 262144,
         "hidden_size_per_layer_input": 256, "attention_k_eq_v": false, "num_kv_shared_layers": 0,
         "enable_moe_block": false})"},
      {"gpt_oss", "transformers/models/gpt_oss/configuration_gpt_oss.py: GptOssConfig",
       R"({"num_hidden_layers": 36, "num_local_experts": 128, "vocab_size": 201088,
         "hidden_size": 2880, "intermediate_size": 2880, "head_dim": 64, "num_attention_heads": 64,
         "num_key_value_heads": 8, "sliding_window": 128, "tie_word_embeddings": false,
         "max_position_embeddings": 131072, "num_experts_per_tok": 4, "attention_bias": true})"},
      {"llama4_text", "transformers/models/llama4/configuration_llama4.py: Llama4TextConfig",
       R"({"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
         "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
         "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
         "tie_word_embeddings": false, "num_experts_per_tok": 1, "num_local_experts": 16,
         "interleave_moe_layer_step": 1, "no_rope_layer_interval": 4, "attention_chunk_size": 8192,
         "attention_bias": false})"},
      {"deepseek_v2",
       "transformers/models/deepseek_v2/configuration_deepseek_v2.py: DeepseekV2Config",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false,
         "first_k_dense_replace": 0, "kv_lora_rank": 512, "q_lora_rank": 1536,
         "n_routed_experts": 64, "n_shared_experts": 2, "qk_nope_head_dim": 128,
         "qk_rope_head_dim": 64, "v_head_dim": 128, "moe_intermediate_size": 1407})"},
      {"deepseek_v3",
       "transformers/models/deepseek_v3/configuration_deepseek_v3.py: DeepseekV3Config",
       R"({"vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
         "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
         "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
         "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "v_head_dim": 128,
         "qk_nope_head_dim": 128, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
         "max_position_embeddings": 4096, "tie_word_embeddings": false,
         "attention_bias": false})"},
      {"whisper", "transformers/models/whisper/configuration_whisper.py: WhisperConfig",
       R"({"vocab_size": 51865, "num_mel_bins": 80, "encoder_layers": 4,
         "encoder_attention_heads": 6, "decoder_layers": 4, "decoder_attention_heads": 6,
         "decoder_ffn_dim": 1536, "encoder_ffn_dim": 1536, "d_model": 384,
         "max_source_positions": 1500, "max_target_positions": 448,
         "tie_word_embeddings": true})"},
      {"granitemoehybrid",
       "transformers/models/granitemoehybrid/configuration_granitemoehybrid.py: "
       "GraniteMoeHybridConfig",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "num_local_experts": 8,
         "num_experts_per_tok": 2, "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256,
         "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256})"},
      {"jamba", "transformers/models/jamba/configuration_jamba.py: JambaConfig",
       R"({"vocab_size": 65536, "tie_word_embeddings": false, "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "max_position_embeddings": 262144, "num_experts_per_tok": 2,
         "num_experts": 16, "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16,
         "mamba_d_conv": 4, "mamba_expand": 2})"},
      {"nemotron_h", "transformers/models/nemotron_h/configuration_nemotron_h.py: NemotronHConfig",
       R"({"vocab_size": 131072, "hidden_size": 4096, "tie_word_embeddings": false,
         "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
         "max_position_embeddings": 4096, "attention_bias": false, "intermediate_size": 21504,
         "mlp_bias": false, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64,
         "n_groups": 8, "conv_kernel": 4, "expand": 2, "chunk_size": 128, "n_routed_experts": 8,
         "n_shared_experts": 1, "moe_intermediate_size": 7688, "num_experts_per_tok": 2,
         "num_nextn_predict_layers": 0})"},
      {"qwen3_next", "transformers/models/qwen3_next/configuration_qwen3_next.py: Qwen3NextConfig",
       R"({"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
         "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
         "max_position_embeddings": 32768, "tie_word_embeddings": false, "attention_bias": false,
         "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
         "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
         "decoder_sparse_step": 1, "moe_intermediate_size": 512,
         "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512})"},
      {"qwen3_5_text", "transformers/models/qwen3_5/configuration_qwen3_5.py: Qwen3_5TextConfig",
       R"({"vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
         "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4,
         "max_position_embeddings": 32768, "tie_word_embeddings": false, "attention_bias": false,
         "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
         "linear_value_head_dim": 128, "linear_num_key_heads": 16,
         "linear_num_value_heads": 32})"},
      {"qwen3_5_moe_text",
       "transformers/models/qwen3_5_moe/configuration_qwen3_5_moe.py: Qwen3_5MoeTextConfig",
       R"({"vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
         "num_attention_heads": 16, "num_key_value_heads": 2, "max_position_embeddings": 32768,
         "tie_word_embeddings": false, "attention_bias": false, "head_dim": 256,
         "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
         "linear_num_key_heads": 16, "linear_num_value_heads": 32, "moe_intermediate_size": 512,
         "shared_expert_intermediate_size": 512, "num_experts_per_tok": 8, "num_experts": 256})"},
      {"glm4", "transformers/models/glm4/configuration_glm4.py: Glm4Config",
       R"({"vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 13696,
         "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
         "head_dim": 128, "max_position_embeddings": 131072, "tie_word_embeddings": false,
         "attention_bias": true})"},
      {"glm4_moe", "transformers/models/glm4_moe/configuration_glm4_moe.py: Glm4MoeConfig",
       R"({"vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 10944,
         "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8,
         "max_position_embeddings": 131072, "tie_word_embeddings": false, "attention_bias": false,
         "moe_intermediate_size": 1408, "num_experts_per_tok": 8, "n_shared_experts": 1,
         "n_routed_experts": 128, "first_k_dense_replace": 1})"},
      {"minimax_m2", "transformers/models/minimax_m2/configuration_minimax_m2.py: MiniMaxM2Config",
       R"({"vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536,
         "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
         "head_dim": 128, "max_position_embeddings": 196608, "tie_word_embeddings": false,
         "num_experts_per_tok": 8, "num_local_experts": 256})"},
      {"exaone4", "transformers/models/exaone4/configuration_exaone4.py: Exaone4Config",
       R"({"vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 16384,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
         "max_position_embeddings": 2048, "tie_word_embeddings": false, "sliding_window": 4096,
         "sliding_window_pattern": 4})"},
      {"olmo2", "transformers/models/olmo2/configuration_olmo2.py: Olmo2Config",
       R"({"vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false})"},
      {"olmo3", "transformers/models/olmo3/configuration_olmo3.py: Olmo3Config",
       R"({"vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "sliding_window": 4096})"},
      {"smollm3", "transformers/models/smollm3/configuration_smollm3.py: SmolLM3Config",
       R"({"vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
         "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
         "max_position_embeddings": 32768, "use_sliding_window": false,
         "no_rope_layer_interval": 4, "attention_bias": false, "mlp_bias": false,
         "tie_word_embeddings": true})"},
      {"granite", "transformers/models/granite/configuration_granite.py: GraniteConfig",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false})"},
      {"granitemoe", "transformers/models/granitemoe/configuration_granitemoe.py: GraniteMoeConfig",
       R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "num_local_experts": 8,
         "num_experts_per_tok": 2})"},
      {"ernie4_5", "transformers/models/ernie4_5/configuration_ernie4_5.py: Ernie4_5Config",
       R"({"vocab_size": 103424, "hidden_size": 1024, "intermediate_size": 3072,
         "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2,
         "max_position_embeddings": 131072, "tie_word_embeddings": true, "head_dim": 128})"},
      {"ernie4_5_moe",
       "transformers/models/ernie4_5_moe/configuration_ernie4_5_moe.py: Ernie4_5_MoeConfig",
       R"({"vocab_size": 103424, "hidden_size": 2560, "intermediate_size": 12288,
         "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4,
         "max_position_embeddings": 131072, "tie_word_embeddings": true,
         "moe_intermediate_size": 1536, "moe_num_experts": 64, "moe_num_shared_experts": 2,
         "moe_layer_start_index": 1, "moe_layer_end_index": -1, "moe_layer_interval": 1})"},
      {"hunyuan_v1_dense",
       "transformers/models/hunyuan_v1_dense/configuration_hunyuan_v1_dense.py: "
       "HunYuanDenseV1Config",
       R"({"vocab_size": 290943, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false})"},
      {"hunyuan_v1_moe",
       "transformers/models/hunyuan_v1_moe/configuration_hunyuan_v1_moe.py: HunYuanMoEV1Config",
       R"({"vocab_size": 290943, "hidden_size": 4096, "intermediate_size": 11008,
         "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
         "tie_word_embeddings": false, "attention_bias": false, "num_experts": 1})"},
      {"seed_oss", "transformers/models/seed_oss/configuration_seed_oss.py: SeedOssConfig",
       R"({"vocab_size": 155136, "hidden_size": 4096, "intermediate_size": 27648,
         "num_hidden_layers": 64, "num_attention_heads": 80, "num_key_value_heads": 8,
         "max_position_embeddings": 524288, "tie_word_embeddings": false, "attention_bias": true,
         "mlp_bias": false, "head_dim": 128})"},
      {"kimi_k2", "vllm/transformers_utils/configs/deepseek_v3.py: DeepseekV3Config",
       kVllmDeepseekV3},
      {"deepseek_v32", "vllm/transformers_utils/configs/deepseek_v3.py: DeepseekV3Config",
       kVllmDeepseekV3},
  };
  return tables;
}

const ClassTable* find_table(std::string_view model_type) {
  const auto& tables = class_tables();
  const auto it = std::ranges::find(tables, model_type, &ClassTable::model_type);
  return it == tables.end() ? nullptr : &*it;
}

// Parsed once; the tables are constants of this file, so a parse error is a bug caught by the
// tests that walk every table.
const nlohmann::json& parsed(const ClassTable& table) {
  static const std::map<std::string_view, nlohmann::json> cache = [] {
    std::map<std::string_view, nlohmann::json> parsed_tables;
    for (const ClassTable& entry : class_tables()) {
      parsed_tables.emplace(entry.model_type, nlohmann::json::parse(entry.defaults));
    }
    return parsed_tables;
  }();
  return cache.at(table.model_type);
}

}  // namespace

// The text model type a wrapper holds when its text_config omits model_type (transformers: the
// wrapper's own text class; llava and mistral3 build an AutoConfig of llama and mistral).
std::string wrapped_text_model_type(std::string_view wrapper) {
  static const std::map<std::string_view, std::string_view> kTextTypes = {
      {"gemma3", "gemma3_text"}, {"gemma3n", "gemma3n_text"}, {"gemma4", "gemma4_text"},
      {"llama4", "llama4_text"}, {"qwen3_5", "qwen3_5_text"}, {"qwen3_5_moe", "qwen3_5_moe_text"},
      {"mistral3", "mistral"},   {"llava", "llama"}};
  const auto it = kTextTypes.find(wrapper);
  return std::string(it == kTextTypes.end() ? wrapper : it->second);
}

// The text_config a wrapper builds when config.json has none: its text class's defaults, except
// Mistral3Config, which builds a MistralConfig of Mistral Small's shape
// (transformers/models/mistral3/configuration_mistral3.py).
nlohmann::json default_text_config(std::string_view wrapper) {
  if (wrapper != "mistral3") return nlohmann::json::object();
  return nlohmann::json::parse(R"({"hidden_size": 5120, "head_dim": 128, "intermediate_size": 32768,
      "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 40,
      "num_key_value_heads": 8, "sliding_window": null, "vocab_size": 131072})");
}

HfClassDefaults apply_class_defaults(nlohmann::json& object, std::string_view model_type) {
  HfClassDefaults result;
  const ClassTable* table = find_table(model_type);
  if (table == nullptr || !object.is_object()) return result;
  result.model_type = table->model_type;
  result.source = table->source;
  for (const auto& [field, value] : parsed(*table).items()) {
    if (object.contains(field)) continue;
    object[field] = value;
    result.filled.push_back(field);
  }
  return result;
}

std::vector<std::string_view> class_default_model_types() {
  std::vector<std::string_view> types;
  for (const ClassTable& table : class_tables()) types.push_back(table.model_type);
  return types;
}

}  // namespace attnrt::detail
