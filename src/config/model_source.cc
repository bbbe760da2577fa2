#include "attnrt/config/model_source.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/printable.h"
#include "config_file.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// A folder stands for the config.json inside it, as a Hugging Face model folder does.
std::string config_file_of(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return path;
  const std::filesystem::path inside = std::filesystem::path(path) / "config.json";
  if (!std::filesystem::exists(inside, error)) {
    fail(
        "{}: a directory without config.json; give an attnrt config, a config.json or a model "
        "folder holding one",
        printable(path));
  }
  return inside.string();
}

}  // namespace

LoadedModel load_model(const std::string& path, const EngineArgs& args) {
  LoadedModel loaded;
  if (path.empty()) {
    loaded.config = default_config();
    loaded.source = "<default>";
    apply_engine_args(loaded.config, args, DType::bf16);
    return loaded;
  }
  loaded.source = config_file_of(path);
  const std::string text = detail::read_config_file(loaded.source);
  nlohmann::json lenient;
  try {
    lenient = parse_hf_config_text(text);
  } catch (const Error&) {
    lenient = nullptr;  // not JSON even for Python: the strict parse below names the problem
  }
  try {
    if (is_hf_config(lenient)) {
      loaded.hf = import_hf_model(lenient, ImportOptions{args});
      loaded.hf_json = std::make_shared<const nlohmann::json>(std::move(lenient));
      loaded.config = loaded.hf->config;
      return loaded;
    }
  } catch (const Error& error) {
    fail("{} (in {})", error.what(), printable(loaded.source));
  }
  loaded.config = load_config_text(text, loaded.source);
  try {
    apply_engine_args(loaded.config, args, DType::bf16);  // attnrt's "auto" cache is bf16
  } catch (const Error& error) {
    fail("{} (in {})", error.what(), printable(loaded.source));
  }
  return loaded;
}

}  // namespace attnrt
