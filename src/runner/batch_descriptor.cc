#include "attnrt/runner/batch_descriptor.h"

#include <fmt/format.h>

#include <ostream>
#include <string>

namespace attnrt {
namespace {

std::string optional_text(const std::optional<int>& value) {
  return value ? std::to_string(*value) : "None";
}

}  // namespace

BatchExecutionDescriptor BatchExecutionDescriptor::eager(int num_reqs, int num_tokens,
                                                         int num_active_loras, int num_ubatches) {
  BatchExecutionDescriptor descriptor;
  descriptor.cg_mode = CUDAGraphMode::NONE;
  descriptor.num_tokens = num_tokens;
  descriptor.num_reqs = num_reqs;
  descriptor.num_active_loras = num_active_loras;
  descriptor.num_ubatches = num_ubatches;
  return descriptor;
}

std::string BatchExecutionDescriptor::describe() const {
  return fmt::format(
      "BatchExecutionDescriptor(cg_mode={}, num_tokens={}, num_reqs={}, uniform_token_count={}, "
      "max_query_len={}, num_active_loras={}, exact_num_tokens={}, num_ubatches={})",
      cg_mode.name(), num_tokens, optional_text(num_reqs), optional_text(uniform_token_count),
      optional_text(max_query_len), num_active_loras, exact_num_tokens ? "True" : "False",
      num_ubatches);
}

std::ostream& operator<<(std::ostream& out, const BatchExecutionDescriptor& descriptor) {
  return out << descriptor.describe();
}

bool is_compatible(const BatchExecutionDescriptor& captured, const RuntimeBatch& batch) {
  if (captured.exact_num_tokens && captured.num_tokens != batch.num_tokens) return false;
  if (captured.uniform_token_count && captured.uniform_token_count != batch.uniform_token_count) {
    return false;
  }
  // A caller that does not track max_query_len never matches a bounded graph.
  if (captured.max_query_len &&
      (!batch.max_query_len || *captured.max_query_len < *batch.max_query_len)) {
    return false;
  }
  if (captured.num_reqs && *captured.num_reqs < batch.num_reqs) return false;
  return captured.num_tokens >= batch.num_tokens &&
         captured.num_active_loras == batch.num_active_loras &&
         captured.num_ubatches == batch.num_ubatches;
}

bool is_uniform_query_len(int num_reqs, int num_tokens, int max_query_len) {
  return num_reqs > 0 && num_tokens == max_query_len * num_reqs;
}

std::optional<int> get_uniform_decode_token_count(int num_reqs, int num_tokens, int max_query_len,
                                                  bool has_prefill) {
  if (has_prefill || !is_uniform_query_len(num_reqs, num_tokens, max_query_len)) {
    return std::nullopt;
  }
  return max_query_len;
}

}  // namespace attnrt

std::size_t std::hash<attnrt::BatchExecutionDescriptor>::operator()(
    const attnrt::BatchExecutionDescriptor& descriptor) const noexcept {
  // -1 stands for None; counts are never negative.
  const auto optional_value = [](const std::optional<int>& value) { return value.value_or(-1); };
  std::size_t seed = std::hash<attnrt::CUDAGraphMode>{}(descriptor.cg_mode);
  for (const int field : {descriptor.num_tokens, optional_value(descriptor.num_reqs),
                          optional_value(descriptor.uniform_token_count),
                          optional_value(descriptor.max_query_len), descriptor.num_active_loras,
                          descriptor.exact_num_tokens ? 1 : 0, descriptor.num_ubatches}) {
    seed ^= std::hash<int>{}(field) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  }
  return seed;
}
