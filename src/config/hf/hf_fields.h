#pragma once
// Typed reads of a Hugging Face config object. `null` reads as absent (transformers configs write
// `"head_dim": null` to mean "derive it"); a value of the wrong kind is an Error naming the
// model_type and the field's path, e.g. `llama: text_config.head_dim: expected an integer, ...`.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fail.h"

namespace attnrt::detail {

class HfFields {
 public:
  // `object` must outlive the reader; `prefix` is its path ("text_config." or "").
  HfFields(const nlohmann::json& object, const std::string& model_type, std::string prefix);

  const std::string& model_type() const { return model_type_; }
  std::string path(std::string_view key) const { return prefix_ + std::string(key); }

  // Present and not null.
  bool has(std::string_view key) const;
  const nlohmann::json* get(std::string_view key) const;
  // Present with the value null: "none", where absence means transformers' default.
  bool is_null(std::string_view key) const;

  // Integers also accept integral floats (4096.0), which some exporters write.
  std::optional<int> get_int(std::string_view key) const;
  int require_int(std::string_view key) const;
  int int_or(std::string_view key, int fallback) const { return get_int(key).value_or(fallback); }
  std::optional<double> get_number(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  // An absent list reads as empty.
  std::vector<std::string> string_list(std::string_view key) const;
  std::vector<int> int_list(std::string_view key) const;

  // `<model_type>: <path of key>: <message>`.
  template <typename... Args>
  [[noreturn]] void fail_at(std::string_view key, fmt::format_string<Args...> format,
                            Args&&... args) const {
    fail("{}: {}: {}", model_type_, path(key), fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  int as_int(const nlohmann::json& value, std::string_view key) const;

  const nlohmann::json& object_;
  std::string model_type_;
  std::string prefix_;
};

}  // namespace attnrt::detail
