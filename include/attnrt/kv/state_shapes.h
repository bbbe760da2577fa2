#pragma once
// The per-request recurrent state of a state layer (SEMANTICS §4.4): the tensors one request keeps
// in a Mamba or linear-attention layer instead of a per-token KV cache, per tensor-parallel rank,
// as vLLM's MambaStateShapeCalculator sizes them. Conv states are [conv_kernel - 1 (+ drafts),
// channels]; the page of a state block is the sum of its tensors' bytes.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attnrt/config/state_layer.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct ATTNRT_API StateTensor {
  std::vector<std::int64_t> shape;
  DType dtype = DType::bf16;

  std::int64_t num_elements() const;
  std::int64_t bytes() const;
  std::string describe() const;  // "(3, 20480) bfloat16"
  friend bool operator==(const StateTensor&, const StateTensor&) = default;
};

// Bytes of one state block: Σ prod(shape) × dtype size, unpadded (vLLM's MambaSpec page).
ATTNRT_API std::int64_t state_page_bytes(std::span<const StateTensor> states);

// Each mixer's tensors (config/state_layer.h gives their shapes).
ATTNRT_API std::vector<StateTensor> mamba1_state(const Mamba1Dims& dims, int tp,
                                                 StateDtypes dtypes);

ATTNRT_API std::vector<StateTensor> mamba2_state(const Mamba2Dims& dims, int tp,
                                                 int num_speculative_tokens, StateDtypes dtypes);

ATTNRT_API std::vector<StateTensor> gated_delta_net_state(const GatedDeltaNetDims& dims, int tp,
                                                          int num_speculative_tokens,
                                                          StateDtypes dtypes);

ATTNRT_API std::vector<StateTensor> short_conv_state(std::int64_t intermediate_size,
                                                     int conv_kernel, int tp, DType dtype);

// The state tensors of one layer of `state` on one of `tp` ranks, with `num_speculative_tokens`
// draft rows in the conv states that keep them (Mamba-2, Gated DeltaNet). Throws Error naming the
// dimension that is not positive or does not divide among the ranks.
ATTNRT_API std::vector<StateTensor> state_tensors(const StateLayerConfig& state, int tp,
                                                  int num_speculative_tokens);

}  // namespace attnrt
