#pragma once
// The per-request recurrent state of a state layer (SEMANTICS §4.4): the tensors one request keeps
// in a Mamba or linear-attention layer instead of a per-token KV cache, per tensor-parallel rank,
// as vLLM's MambaStateShapeCalculator sizes them. Conv states are [conv_kernel - 1 (+ drafts),
// channels]; the page of a state block is the sum of its tensors' bytes.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attnrt/core/dtype.h"

namespace attnrt {

struct StateTensor {
  std::vector<std::int64_t> shape;
  DType dtype = DType::bf16;

  std::int64_t num_elements() const;
  std::int64_t bytes() const;
  std::string describe() const;  // "(3, 20480) bfloat16"
  friend bool operator==(const StateTensor&, const StateTensor&) = default;
};

// Bytes of one state block: Σ prod(shape) × dtype size, unpadded (vLLM's MambaSpec page).
std::int64_t state_page_bytes(std::span<const StateTensor> states);

// Dtypes of the conv state and of the SSM / recurrent state.
struct StateDtypes {
  DType conv = DType::bf16;
  DType ssm = DType::bf16;
};

// Mamba-1 (Jamba): conv (K - 1, I / tp), SSM (I / tp, state_size).
struct Mamba1Dims {
  std::int64_t intermediate_size = 0;
  int state_size = 0;
  int conv_kernel = 0;
};
std::vector<StateTensor> mamba1_state(const Mamba1Dims& dims, int tp, StateDtypes dtypes);

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
};
std::vector<StateTensor> mamba2_state(const Mamba2Dims& dims, int tp, int num_speculative_tokens,
                                      StateDtypes dtypes);

// Gated DeltaNet (Qwen3-Next, Qwen3.5): conv (K - 1 + drafts, (2 · k_heads · k_dim + v_heads ·
// v_dim) / tp), recurrent (v_heads / tp, v_dim, k_dim).
struct GatedDeltaNetDims {
  int num_k_heads = 0;
  int num_v_heads = 0;
  int head_k_dim = 0;
  int head_v_dim = 0;
  int conv_kernel = 0;
};
std::vector<StateTensor> gated_delta_net_state(const GatedDeltaNetDims& dims, int tp,
                                               int num_speculative_tokens, StateDtypes dtypes);

// Short convolution (LFM2): conv (K - 1, I / tp) only.
std::vector<StateTensor> short_conv_state(std::int64_t intermediate_size, int conv_kernel, int tp,
                                          DType dtype);

}  // namespace attnrt
