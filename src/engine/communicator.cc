// The collectives built on a Communicator's two primitives: lengths first, then the bytes.

#include "attnrt/engine/communicator.h"

#include "core/fail.h"

namespace attnrt {
namespace {

template <typename T>
std::span<std::byte> bytes_of(std::vector<T>& values) {
  return std::as_writable_bytes(std::span(values));
}

std::int64_t broadcast_length(Communicator& communicator, std::size_t length, int root) {
  std::int64_t value = static_cast<std::int64_t>(length);
  communicator.broadcast(std::as_writable_bytes(std::span(&value, 1)), root);
  if (value < 0) fail("tensor parallel: rank {} sent a length of {}", root, value);
  return value;
}

}  // namespace

void broadcast_values(Communicator& communicator, std::vector<std::int64_t>& values, int root) {
  values.resize(static_cast<std::size_t>(broadcast_length(communicator, values.size(), root)));
  communicator.broadcast(bytes_of(values), root);
}

void broadcast_string(Communicator& communicator, std::string& text, int root) {
  text.resize(static_cast<std::size_t>(broadcast_length(communicator, text.size(), root)));
  communicator.broadcast(std::as_writable_bytes(std::span(text.data(), text.size())), root);
}

std::vector<std::string> all_gather_strings(Communicator& communicator, const std::string& text) {
  std::vector<std::string> texts(static_cast<std::size_t>(communicator.world()));
  for (int r = 0; r < communicator.world(); ++r) {
    if (r == communicator.rank()) texts[r] = text;
    broadcast_string(communicator, texts[r], r);
  }
  return texts;
}

std::vector<double> all_gather_values(Communicator& communicator, double value) {
  std::vector<double> values(static_cast<std::size_t>(communicator.world()));
  for (int r = 0; r < communicator.world(); ++r) {
    if (r == communicator.rank()) values[r] = value;
    communicator.broadcast(std::as_writable_bytes(std::span(&values[r], 1)), r);
  }
  return values;
}

void check_every_rank(Communicator& communicator, const std::string& failure,
                      const std::string& stage) {
  if (communicator.world() == 1) {
    if (!failure.empty()) fail("{}", failure);
    return;
  }
  const std::vector<std::string> failures = all_gather_strings(communicator, failure);
  if (!failure.empty()) fail("{}", failure);
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (!failures[r].empty()) fail("tensor parallel: rank {} failed {}: {}", r, stage, failures[r]);
  }
}

}  // namespace attnrt
