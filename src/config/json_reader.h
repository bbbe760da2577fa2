#pragma once
// Typed reads of JSON config values. Every error starts with the JSON path of the value and says
// what was expected, e.g. `cache.block_size: expected an integer, got a string ("16")`.

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt::detail {

using nlohmann::json;

// "a string (\"16\")", "an array", ... : what a value is, for error messages.
std::string describe_json(const json& value);
// `parent.key`, or `key` at the top level.
std::string child_path(std::string_view parent, std::string_view key);
// `parent[index]`.
std::string element_path(std::string_view parent, std::size_t index);

int read_int(const json& value, const std::string& path);
bool read_bool(const json& value, const std::string& path);
std::string read_string(const json& value, const std::string& path);
// One of `names` (exact spelling); errors list the names and suggest the nearest.
std::string read_name(const json& value, const std::string& path, std::string_view what,
                      std::span<const std::string_view> names);
// The index in `names` of the name `value` holds; errors as read_name.
std::size_t read_name_index(const json& value, const std::string& path, std::string_view what,
                            std::span<const std::string_view> names);
std::vector<int> read_int_list(const json& value, const std::string& path);
std::vector<std::string> read_string_list(const json& value, const std::string& path);
// An array's elements; throws unless `value` is an array.
const json::array_t& read_array(const json& value, const std::string& path);

// Reads the fields of one JSON object. Every key asked for, present or not, is a valid key;
// reject_unknown_keys() then throws for any other key, suggesting the nearest valid one.
class ObjectReader {
 public:
  ObjectReader(const json& value, std::string path);

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const { return child_path(path_, key); }
  bool has(std::string_view key) const;

  // The value of `key`, or nullptr when absent.
  const json* field(std::string_view key);

  // Each read leaves `out` unchanged when the key is absent.
  void read(std::string_view key, int& out);
  void read(std::string_view key, bool& out);
  void read(std::string_view key, std::string& out);
  void read(std::string_view key, std::vector<int>& out);
  void read(std::string_view key, std::vector<std::string>& out);
  // null clears `out`.
  void read(std::string_view key, std::optional<int>& out);
  // An enum value spelled by one of `names` (names[i] spells values[i]); errors name the path,
  // list the names and suggest the nearest. Config values are parsed once, here.
  template <typename E, std::size_t N>
  void read_choice(std::string_view key, E& out, std::string_view what,
                   const std::array<std::string_view, N>& names, const std::array<E, N>& values) {
    if (const json* value = field(key)) {
      out = values[read_name_index(*value, path_of(key), what, names)];
    }
  }
  // A list of such values.
  template <typename E, std::size_t N>
  void read_choices(std::string_view key, std::vector<E>& out, std::string_view what,
                    const std::array<std::string_view, N>& names, const std::array<E, N>& values) {
    const json* value = field(key);
    if (value == nullptr) return;
    const std::string path = path_of(key);
    const json::array_t& items = read_array(*value, path);
    out.clear();
    for (std::size_t i = 0; i < items.size(); ++i) {
      out.push_back(values[read_name_index(items[i], element_path(path, i), what, names)]);
    }
  }

  void reject_unknown_keys() const;

 private:
  const json::object_t& object_;
  std::string path_;
  std::vector<std::string> known_keys_;
};

}  // namespace attnrt::detail
