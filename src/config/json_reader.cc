#include "json_reader.h"

#include <algorithm>
#include <limits>

#include "attnrt/core/printable.h"
#include "config_names.h"
#include "core/fail.h"

namespace attnrt::detail {
namespace {

// Shown in place of an empty path, i.e. for the document itself.
constexpr std::string_view kTopLevel = "(top level)";

std::string shown(std::string_view path) {
  return path.empty() ? std::string(kTopLevel) : std::string(path);
}

[[noreturn]] void expected(const std::string& path, std::string_view what, const json& value) {
  fail("{}: expected {}, got {}", shown(path), what, describe_json(value));
}

const json::object_t& read_object(const json& value, const std::string& path) {
  if (!value.is_object()) expected(path, "an object", value);
  return value.get_ref<const json::object_t&>();
}

}  // namespace

std::string describe_json(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return fmt::format("a boolean ({})", value.get<bool>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return fmt::format("an integer ({})", value.dump());
    case json::value_t::number_float:
      return fmt::format("a number ({})", value.dump());
    case json::value_t::string: {
      // dump() escapes control characters; `replace` keeps invalid UTF-8 from throwing.
      std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
      if (text.size() > 40) text = text.substr(0, 36) + "...\"";
      return fmt::format("a string ({})", printable(text));
    }
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported JSON value";
  }
}

std::string child_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return fmt::format("{}.{}", parent, key);
}

std::string element_path(std::string_view parent, std::size_t index) {
  return fmt::format("{}[{}]", shown(parent), index);
}

int read_int(const json& value, const std::string& path) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      fail("{}: {} is too large (at most {})", shown(path), number,
           std::numeric_limits<int>::max());
    }
    return static_cast<int>(number);
  }
  if (value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number < std::numeric_limits<int>::min()) fail("{}: {} is too small", shown(path), number);
    return static_cast<int>(number);
  }
  expected(path, "an integer", value);
}

bool read_bool(const json& value, const std::string& path) {
  if (!value.is_boolean()) expected(path, "a boolean (true or false)", value);
  return value.get<bool>();
}

std::string read_string(const json& value, const std::string& path) {
  if (!value.is_string()) expected(path, "a string", value);
  return value.get<std::string>();
}

std::size_t read_name_index(const json& value, const std::string& path, std::string_view what,
                            std::span<const std::string_view> names) {
  const std::string name = read_string(value, path);
  const auto found = std::find(names.begin(), names.end(), name);
  if (found == names.end()) fail("{}: {}", shown(path), unknown_name_message(name, what, names));
  return static_cast<std::size_t>(found - names.begin());
}

std::string read_name(const json& value, const std::string& path, std::string_view what,
                      std::span<const std::string_view> names) {
  return std::string(names[read_name_index(value, path, what, names)]);
}

const json::array_t& read_array(const json& value, const std::string& path) {
  if (!value.is_array()) expected(path, "an array", value);
  return value.get_ref<const json::array_t&>();
}

std::vector<int> read_int_list(const json& value, const std::string& path) {
  std::vector<int> result;
  const json::array_t& items = read_array(value, path);
  for (std::size_t i = 0; i < items.size(); ++i) {
    result.push_back(read_int(items[i], element_path(path, i)));
  }
  return result;
}

std::vector<std::string> read_string_list(const json& value, const std::string& path) {
  std::vector<std::string> result;
  const json::array_t& items = read_array(value, path);
  for (std::size_t i = 0; i < items.size(); ++i) {
    result.push_back(read_string(items[i], element_path(path, i)));
  }
  return result;
}

ObjectReader::ObjectReader(const json& value, std::string path)
    : object_(read_object(value, path)), path_(std::move(path)) {}

bool ObjectReader::has(std::string_view key) const {
  return object_.find(std::string(key)) != object_.end();
}

const json* ObjectReader::field(std::string_view key) {
  known_keys_.emplace_back(key);
  const auto it = object_.find(std::string(key));
  return it == object_.end() ? nullptr : &it->second;
}

void ObjectReader::read(std::string_view key, int& out) {
  if (const json* value = field(key)) out = read_int(*value, path_of(key));
}

void ObjectReader::read(std::string_view key, bool& out) {
  if (const json* value = field(key)) out = read_bool(*value, path_of(key));
}

void ObjectReader::read(std::string_view key, std::string& out) {
  if (const json* value = field(key)) out = read_string(*value, path_of(key));
}

void ObjectReader::read(std::string_view key, std::vector<int>& out) {
  if (const json* value = field(key)) out = read_int_list(*value, path_of(key));
}

void ObjectReader::read(std::string_view key, std::vector<std::string>& out) {
  if (const json* value = field(key)) out = read_string_list(*value, path_of(key));
}

void ObjectReader::read(std::string_view key, std::optional<int>& out) {
  const json* value = field(key);
  if (value == nullptr) return;
  if (value->is_null()) {
    out.reset();
    return;
  }
  if (!value->is_number_integer()) expected(path_of(key), "an integer or null", *value);
  out = read_int(*value, path_of(key));
}

void ObjectReader::reject_unknown_keys() const {
  const std::vector<std::string_view> valid(known_keys_.begin(), known_keys_.end());
  for (const auto& [key, value] : object_) {
    if (contains_name(valid, key)) continue;
    const std::string shown_key = path_of(printable(key, 64));
    const std::string_view nearest = nearest_name(key, valid);
    if (!nearest.empty()) fail("{}: unknown key; did you mean \"{}\"?", shown_key, nearest);
    fail("{}: unknown key; valid keys here are {}", shown_key, join_names(valid));
  }
}

}  // namespace attnrt::detail
