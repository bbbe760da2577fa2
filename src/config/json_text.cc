#include "json_text.h"

#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include "attnrt/config/config_limits.h"
#include "attnrt/core/printable.h"
#include "core/fail.h"
#include "json_reader.h"

namespace attnrt::detail {
namespace {

using json = nlohmann::json;

// "line 3, column 18" of a byte offset, for syntax errors.
std::string text_position(std::string_view text, std::size_t offset) {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at ...: " prefix.
std::string parser_reason(const nlohmann::detail::exception& error) {
  std::string_view message = error.what();
  if (const std::size_t colon = message.find(": "); colon != std::string_view::npos) {
    if (message.substr(0, colon).find("parse error") != std::string_view::npos) {
      message.remove_prefix(colon + 2);
    }
  }
  if (message.starts_with("[json.exception.")) {
    message.remove_prefix(message.find(']') + 1);
    while (message.starts_with(' ')) message.remove_prefix(1);
  }
  return printable(message);
}

// Python's non-finite literals become numbers no one writes by hand, which the builder turns back
// into the doubles they stand for; nlohmann's lexer knows only the JSON literals.
struct PythonLiteral {
  std::string_view token;
  std::string_view stand_in;
  double value;
};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr PythonLiteral kPythonLiterals[] = {
    {"-Infinity", "-0.0E-0000001", -kInf},
    {"Infinity", "0.0E-0000001", kInf},
    {"NaN", "0.0E-0000002", std::numeric_limits<double>::quiet_NaN()},
};

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

// The text with each bare Python literal (outside strings, not part of a longer word) replaced.
std::string replace_python_literals(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const PythonLiteral* match = nullptr;
    if (i == 0 || !is_word_char(text[i - 1])) {
      for (const PythonLiteral& literal : kPythonLiterals) {
        const std::size_t end = i + literal.token.size();
        if (text.substr(i).starts_with(literal.token) &&
            (end == text.size() || !is_word_char(text[end]))) {
          match = &literal;
          break;
        }
      }
    }
    if (match == nullptr) {
      out += c;
      continue;
    }
    out += match->stand_in;
    i += match->token.size() - 1;
  }
  return out;
}

// Builds the document as nlohmann's DOM parser does, checking the config's rules on the way.
class StrictDomBuilder {
 public:
  StrictDomBuilder(std::string_view text, bool python_literals)
      : text_(text), python_literals_(python_literals) {}

  json take() { return std::move(root_); }

  bool null() { return place(nullptr); }
  bool boolean(bool value) { return place(value); }
  bool number_integer(json::number_integer_t value) { return place(value); }
  bool number_unsigned(json::number_unsigned_t value) { return place(value); }
  bool number_float(json::number_float_t value, const std::string& raw) {
    if (python_literals_) {
      for (const PythonLiteral& literal : kPythonLiterals) {
        if (raw == literal.stand_in) return place(literal.value);
      }
    }
    return place(value);
  }
  bool string(std::string& value) { return place(std::move(value)); }
  bool binary(json::binary_t&) { return place(nullptr); }  // not produced by JSON text

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& name) {
    json& object = *open_.back();
    const std::string path = child_path(open_paths_.back(), printable(name));
    if (object.contains(name)) {
      fail("{}: duplicate key; each key may appear once per object (JSON would keep only the last)",
           path);
    }
    pending_key_ = name;
    pending_path_ = path;
    key_pending_ = true;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& error) {
    if (error.id == 406) {  // out_of_range.406: a number beyond a double's range
      fail(
          "{}: the number {} is out of range (a JSON number here must fit a double, at most "
          "about 1.8e308)",
          shown(next_path()), printable(token));
    }
    const std::string path = next_path();
    const std::string where = path.empty() ? "" : fmt::format(", inside {}", printable(path, 80));
    fail("invalid JSON at {}{}: {}", text_position(text_, position), where, parser_reason(error));
  }

 private:
  static std::string shown(const std::string& path) { return path.empty() ? "(top level)" : path; }

  // The path the next value will have (inside an object between members: the object's).
  std::string next_path() const {
    if (open_.empty()) return "";
    if (open_.back()->is_object()) return key_pending_ ? pending_path_ : open_paths_.back();
    return element_path(open_paths_.back(), open_.back()->size());
  }

  // Puts a value where the parser is (the root, the pending key, or the array's end).
  json* insert(json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& container = *open_.back();
    if (container.is_object()) {
      key_pending_ = false;
      return &(container[pending_key_] = std::move(value));
    }
    container.push_back(std::move(value));
    return &container.back();
  }

  bool place(json value) {
    insert(std::move(value));
    return true;
  }

  bool open(json container) {
    if (static_cast<int>(open_.size()) >= limits::kMaxJsonDepth) {
      fail("{}: objects and arrays nest more than {} levels deep; a config never needs that many",
           printable(shown(next_path()), 80), limits::kMaxJsonDepth);
    }
    const std::string path = next_path();
    open_.push_back(insert(std::move(container)));
    open_paths_.push_back(path);
    return true;
  }

  bool close() {
    open_.pop_back();
    open_paths_.pop_back();
    return true;
  }

  std::string_view text_;
  bool python_literals_ = false;
  json root_;
  std::vector<json*> open_;  // the containers being filled, outermost first
  std::vector<std::string> open_paths_;
  std::string pending_key_;
  std::string pending_path_;
  bool key_pending_ = false;  // a key was read and its value not yet
};

}  // namespace

namespace {

json parse_with(std::string_view text, bool python_literals) {
  StrictDomBuilder builder(text, python_literals);
  // strict: nothing may follow the document; comments are not JSON.
  json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true,
                  /*ignore_comments=*/false);
  return builder.take();
}

}  // namespace

json parse_json_text(std::string_view text) {
  return parse_with(text, false);
}

json parse_python_json_text(std::string_view text) {
  const std::string replaced = replace_python_literals(text);
  return parse_with(replaced, true);
}

}  // namespace attnrt::detail
