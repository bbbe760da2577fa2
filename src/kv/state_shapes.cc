// vLLM's MambaStateShapeCalculator and its divisibility rules (SEMANTICS §4.4).

#include "attnrt/kv/state_shapes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// `value` / `tp`, which must divide evenly (vLLM's divide()).
std::int64_t per_rank(std::int64_t value, int tp, const char* what) {
  if (tp < 1) fail("state shape: tensor_parallel_size must be positive (got {})", tp);
  if (value <= 0) fail("state shape: {} must be positive (got {})", what, value);
  if (value % tp != 0) {
    fail("state shape: {} {} cannot be split evenly across tensor_parallel_size {}", what, value,
         tp);
  }
  return value / tp;
}

// Rows of a conv state: the last conv_kernel - 1 inputs, plus one per draft token.
std::int64_t conv_rows(int conv_kernel, int num_speculative_tokens) {
  if (conv_kernel < 2) fail("state shape: conv_kernel must be at least 2 (got {})", conv_kernel);
  if (num_speculative_tokens < 0) {
    fail("state shape: num_speculative_tokens must not be negative (got {})",
         num_speculative_tokens);
  }
  return std::int64_t{conv_kernel} - 1 + num_speculative_tokens;
}

std::int64_t positive(std::int64_t value, const char* what) {
  if (value <= 0) fail("state shape: {} must be positive (got {})", what, value);
  return value;
}

}  // namespace

std::int64_t StateTensor::num_elements() const {
  std::uint64_t elements = 1;
  for (std::int64_t extent : shape) {
    elements = checked_mul(elements, static_cast<std::uint64_t>(extent), "state elements");
  }
  return checked_cast<std::int64_t>(elements, "state elements");
}

std::int64_t StateTensor::bytes() const {
  return checked_cast<std::int64_t>(
      checked_mul(static_cast<std::uint64_t>(num_elements()), dtype_size(dtype), "state bytes"),
      "state bytes");
}

std::string StateTensor::describe() const {
  return fmt::format("({}) {}", fmt::join(shape, ", "), dtype_name(dtype));
}

std::int64_t state_page_bytes(std::span<const StateTensor> states) {
  std::uint64_t bytes = 0;
  for (const StateTensor& state : states) {
    bytes = checked_add(bytes, static_cast<std::uint64_t>(state.bytes()), "state page bytes");
  }
  return checked_cast<std::int64_t>(bytes, "state page bytes");
}

std::vector<StateTensor> mamba1_state(const Mamba1Dims& dims, int tp, StateDtypes dtypes) {
  const std::int64_t channels = per_rank(dims.intermediate_size, tp, "intermediate_size");
  return {{{conv_rows(dims.conv_kernel, 0), channels}, dtypes.conv},
          {{channels, positive(dims.state_size, "state_size")}, dtypes.ssm}};
}

std::vector<StateTensor> mamba2_state(const Mamba2Dims& dims, int tp, int num_speculative_tokens,
                                      StateDtypes dtypes) {
  positive(dims.n_groups, "n_groups");
  positive(tp, "tensor_parallel_size");
  // Groups that do not split evenly are replicated up to one per rank (vLLM's
  // extra_groups_for_head_shards).
  const std::int64_t groups = dims.n_groups % tp == 0 ? dims.n_groups : tp;
  const std::int64_t state = positive(dims.state_size, "state_size");
  const std::int64_t conv_dim =
      positive(dims.intermediate_size, "intermediate_size") + 2 * groups * state;
  return {{{conv_rows(dims.conv_kernel, num_speculative_tokens),
            per_rank(conv_dim, tp, "conv channels")},
           dtypes.conv},
          {{per_rank(dims.num_heads, tp, "num_heads"), positive(dims.head_dim, "head_dim"), state},
           dtypes.ssm}};
}

std::vector<StateTensor> gated_delta_net_state(const GatedDeltaNetDims& dims, int tp,
                                               int num_speculative_tokens, StateDtypes dtypes) {
  const std::int64_t key_dim =
      positive(dims.num_k_heads, "num_k_heads") * positive(dims.head_k_dim, "head_k_dim");
  const std::int64_t value_dim =
      positive(dims.num_v_heads, "num_v_heads") * positive(dims.head_v_dim, "head_v_dim");
  const std::int64_t conv_dim = 2 * key_dim + value_dim;
  return {{{conv_rows(dims.conv_kernel, num_speculative_tokens),
            per_rank(conv_dim, tp, "conv channels")},
           dtypes.conv},
          {{per_rank(dims.num_v_heads, tp, "num_v_heads"), dims.head_v_dim, dims.head_k_dim},
           dtypes.ssm}};
}

std::vector<StateTensor> short_conv_state(std::int64_t intermediate_size, int conv_kernel, int tp,
                                          DType dtype) {
  return {
      {{conv_rows(conv_kernel, 0), per_rank(intermediate_size, tp, "intermediate_size")}, dtype}};
}

std::vector<StateTensor> state_tensors(const StateLayerConfig& state, int tp,
                                       int num_speculative_tokens) {
  switch (state.mixer()) {
    case StateMixer::mamba1:
      return mamba1_state(std::get<Mamba1Dims>(state.dims), tp, state.dtypes);
    case StateMixer::mamba2:
      return mamba2_state(std::get<Mamba2Dims>(state.dims), tp, num_speculative_tokens,
                          state.dtypes);
    case StateMixer::gated_delta_net:
      return gated_delta_net_state(std::get<GatedDeltaNetDims>(state.dims), tp,
                                   num_speculative_tokens, state.dtypes);
    case StateMixer::short_conv: {
      const auto& dims = std::get<ShortConvDims>(state.dims);
      return short_conv_state(dims.intermediate_size, dims.conv_kernel, tp, state.dtypes.conv);
    }
  }
  return {};
}

}  // namespace attnrt
