#include "hf_fields.h"

#include <cmath>
#include <limits>

#include "attnrt/core/printable.h"
#include "config/json_reader.h"

namespace attnrt::detail {

using nlohmann::json;

HfFields::HfFields(const json& object, const std::string& model_type, std::string prefix)
    : object_(object), model_type_(printable(model_type, 80)), prefix_(std::move(prefix)) {}

const json* HfFields::get(std::string_view key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool HfFields::is_null(std::string_view key) const {
  if (!object_.is_object()) return false;
  const auto it = object_.find(key);
  return it != object_.end() && it->is_null();
}

bool HfFields::has(std::string_view key) const {
  return get(key) != nullptr;
}

int HfFields::as_int(const json& value, std::string_view key) const {
  if (value.is_number_integer()) {
    const auto wide = value.get<std::int64_t>();
    if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
      fail_at(key, "{} does not fit a 32-bit integer", wide);
    }
    return static_cast<int>(wide);
  }
  if (value.is_number_unsigned()) fail_at(key, "{} does not fit a 32-bit integer", value.dump());
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (!std::isfinite(number) || number != std::floor(number) || std::abs(number) > 2e9) {
      fail_at(key, "expected an integer, got {}", printable(value.dump(), 40));
    }
    return static_cast<int>(number);
  }
  fail_at(key, "expected an integer, got {}", describe_json(value));
}

std::optional<int> HfFields::get_int(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) return std::nullopt;
  return as_int(*value, key);
}

int HfFields::require_int(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) fail_at(key, "missing; the importer needs it to size the KV cache");
  return as_int(*value, key);
}

std::optional<double> HfFields::get_number(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) fail_at(key, "expected a number, got {}", describe_json(*value));
  return value->get<double>();
}

std::optional<bool> HfFields::get_bool(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) fail_at(key, "expected true or false, got {}", describe_json(*value));
  return value->get<bool>();
}

std::optional<std::string> HfFields::get_string(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) fail_at(key, "expected a string, got {}", describe_json(*value));
  return value->get<std::string>();
}

std::vector<std::string> HfFields::string_list(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) return {};
  if (!value->is_array()) fail_at(key, "expected a list of strings, got {}", describe_json(*value));
  std::vector<std::string> items;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_string()) {
      fail_at(key, "entry {} is {}, expected a string", i, describe_json(item));
    }
    items.push_back(item.get<std::string>());
  }
  return items;
}

std::vector<int> HfFields::int_list(std::string_view key) const {
  const json* value = get(key);
  if (value == nullptr) return {};
  if (!value->is_array())
    fail_at(key, "expected a list of integers, got {}", describe_json(*value));
  std::vector<int> items;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_number())
      fail_at(key, "entry {} is {}, expected an integer", i, describe_json(item));
    items.push_back(as_int(item, key));
  }
  return items;
}

}  // namespace attnrt::detail
