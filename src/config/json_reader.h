#pragma once
// Typed reads of JSON config values. Every error starts with the JSON path of the value and says
// what was expected, e.g. `cache.block_size: expected an integer, got a string ("16")`.

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

  void reject_unknown_keys() const;

 private:
  const json::object_t& object_;
  std::string path_;
  std::vector<std::string> known_keys_;
};

}  // namespace attnrt::detail
