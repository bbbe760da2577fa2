#include "attnrt/core/nearest_name.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace attnrt {
namespace {

std::string lowercase(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// Levenshtein distance; names are short, so the quadratic table is fine.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string_view nearest_name(std::string_view name, std::span<const std::string_view> candidates) {
  // Names longer than any candidate by far are not typos of one; also bounds the table's cost.
  constexpr std::size_t kLongestCompared = 256;
  if (name.size() > kLongestCompared) return {};
  const std::size_t budget = 1 + name.size() / 4;
  const std::string lowered = lowercase(name);
  std::string_view best;
  std::size_t best_distance = budget + 1;
  for (std::string_view candidate : candidates) {
    const std::size_t distance = edit_distance(lowered, lowercase(candidate));
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace attnrt
