#pragma once
// The recurrent state of a state layer (SEMANTICS §4.4): a Mamba or linear-attention layer keeps a
// fixed-size state per request instead of a per-token KV cache. The config holds the whole-model
// dimensions of its mixer; kv/state_shapes.h turns them into per-rank state tensors.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

// Mamba-1 (Jamba): conv (K - 1, I / tp), SSM (I / tp, state_size).
struct Mamba1Dims {
  std::int64_t intermediate_size = 0;
  int state_size = 0;
  int conv_kernel = 0;
  friend bool operator==(const Mamba1Dims&, const Mamba1Dims&) = default;
};

// Mamba-2 (Nemotron-H, Granite 4, Zamba 2): n_groups grows to tp when it does not divide by tp;
// conv (K - 1 + drafts, (I + 2 · n_groups · state_size) / tp), SSM (heads / tp, head_dim,
// state_size).
struct Mamba2Dims {
  std::int64_t intermediate_size = 0;
  int n_groups = 1;
  int num_heads = 0;
  int head_dim = 0;
  int state_size = 0;
  int conv_kernel = 0;
  friend bool operator==(const Mamba2Dims&, const Mamba2Dims&) = default;
};

// Gated DeltaNet (Qwen3-Next, Qwen3.5): conv (K - 1 + drafts, (2 · k_heads · k_dim + v_heads ·
// v_dim) / tp), recurrent (v_heads / tp, v_dim, k_dim).
struct GatedDeltaNetDims {
  int num_k_heads = 0;
  int num_v_heads = 0;
  int head_k_dim = 0;
  int head_v_dim = 0;
  int conv_kernel = 0;
  friend bool operator==(const GatedDeltaNetDims&, const GatedDeltaNetDims&) = default;
};

// Short convolution (LFM2): conv (K - 1, I / tp) only.
struct ShortConvDims {
  std::int64_t intermediate_size = 0;
  int conv_kernel = 0;
  friend bool operator==(const ShortConvDims&, const ShortConvDims&) = default;
};

// Dtypes of the conv state and of the SSM / recurrent state.
struct StateDtypes {
  DType conv = DType::bf16;
  DType ssm = DType::bf16;
  friend bool operator==(const StateDtypes&, const StateDtypes&) = default;
};

// The mixer of a state layer, in the order of StateLayerConfig::dims' alternatives.
enum class StateMixer { mamba1, mamba2, gated_delta_net, short_conv };
inline constexpr std::array<StateMixer, 4> kAllStateMixers = {
    StateMixer::mamba1, StateMixer::mamba2, StateMixer::gated_delta_net, StateMixer::short_conv};
// The JSON spellings (`state.mixer`), in kAllStateMixers order.
inline constexpr std::array<std::string_view, 4> kStateMixerNames = {
    "mamba1", "mamba2", "gated_delta_net", "short_conv"};

ATTNRT_API std::string_view state_mixer_name(StateMixer mixer);  // "gated_delta_net"

struct ATTNRT_API StateLayerConfig {
  std::variant<Mamba1Dims, Mamba2Dims, GatedDeltaNetDims, ShortConvDims> dims = Mamba2Dims{};
  StateDtypes dtypes;

  StateMixer mixer() const { return static_cast<StateMixer>(dims.index()); }
  // "mamba2: intermediate 16384, n_groups 8, 256 heads x 64, state 256, conv 4; conv bfloat16,
  // SSM float32" (whole-model dimensions).
  std::string describe() const;
  friend bool operator==(const StateLayerConfig&, const StateLayerConfig&) = default;
};

}  // namespace attnrt
