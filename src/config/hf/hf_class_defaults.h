#pragma once
// transformers' configuration classes, family by family: a config.json omits every field equal to
// its class's default (nested text_configs most of all), and vLLM reads the config *object*, in
// which transformers filled them in. The importer and the weight count fill them in the same way
// before any of vLLM's rules run (docs/hf-import.md, "Class defaults").

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt::detail {

struct HfClassDefaults {
  std::string_view model_type;
  std::string_view source;  // "transformers/models/<family>/configuration_<family>.py: <Class>"
  std::vector<std::string> filled;  // the fields the config omitted, by name
};

// The language model type a multimodal wrapper holds when its text_config omits model_type
// ("gemma3" -> "gemma3_text"); any other model type is returned unchanged.
std::string wrapped_text_model_type(std::string_view model_type);
// The text_config a wrapper builds when config.json has none (to be filled by
// apply_class_defaults): empty, except Mistral 3's.
nlohmann::json default_text_config(std::string_view wrapper);

// Sets every field of `model_type`'s configuration class that `object` omits to the class
// default. Only absent fields are filled: an explicit null stays (transformers keeps None, and
// the importer reads null as "none"). Fields whose class default is None, or that the class
// derives from others (head_dim from hidden_size, layer_types from a pattern), are not in the
// tables: the importer's family rules derive them. A model type without a table fills nothing.
HfClassDefaults apply_class_defaults(nlohmann::json& object, std::string_view model_type);

// The model types that have a table (tests walk them).
std::vector<std::string_view> class_default_model_types();

}  // namespace attnrt::detail
