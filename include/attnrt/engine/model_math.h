#pragma once
// The dense math of the built-in transformer (TinyTransformer): weight matrices held in f32 or
// bf16 with f32 arithmetic, RMSNorm, rotary embeddings, SwiGLU and greedy sampling. Every routine
// computes each row on its own, in a fixed order, so a row's result does not depend on which
// other rows share the call: a request computed alone (the dense reference) sees the same
// numbers as inside a batched, padded step.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

// A [rows, cols] row-major matrix of f32 or bf16 values (bf16 kept as its 16 bits and widened
// on use). A projection y = x·W keeps W as [input features, output features], so the inner loop
// of a matmul runs over contiguous output entries.
class ATTNRT_API WeightMatrix {
 public:
  WeightMatrix() = default;
  // Zero-filled. Throws Error unless `dtype` is f32 or bf16.
  WeightMatrix(DType dtype, int rows, int cols);

  DType dtype() const { return dtype_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  std::size_t bytes() const { return f32_.size() * 4 + bf16_.size() * 2; }

  // Stores `value` rounded to the matrix dtype (round to nearest even for bf16).
  void set(int row, int col, float value);
  float get(int row, int col) const;
  // Row `row` widened to f32 into out[0, cols).
  void copy_row(int row, float* out) const;

  const float* f32_row(int row) const { return f32_.data() + offset(row); }
  const std::uint16_t* bf16_row(int row) const { return bf16_.data() + offset(row); }

 private:
  std::size_t offset(int row) const {
    return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols_);
  }

  DType dtype_ = DType::f32;
  int rows_ = 0;
  int cols_ = 0;
  std::vector<float> f32_;
  std::vector<std::uint16_t> bf16_;
};

// Rows of f32 activations: row r starts at data + r * stride.
struct RowsView {
  float* data = nullptr;
  int num_rows = 0;
  std::int64_t stride = 0;

  float* row(int r) const { return data + r * stride; }
};

// out[r, c] = x[r, :] · w[:, c] (or += when `accumulate`) for every row of `x`; x rows hold
// w.rows() entries, out rows w.cols(). Each entry sums over the input features in ascending
// order, so results do not depend on the SIMD width, the tiling or `num_threads` (OpenMP
// threads for large products; each entry is computed by one thread).
ATTNRT_API void matmul(RowsView x, const WeightMatrix& w, RowsView out, bool accumulate = false,
                       int num_threads = 1);

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * gain, rows of gain.size() entries; out may
// be x.
ATTNRT_API void rms_norm(RowsView x, std::span<const float> gain, float eps, RowsView out);

// Rotary position embedding (NeoX "rotate half") on entries [first, first + dim) of every head
// of every row: pair (i, i + dim/2) of row r turns by positions[r] · theta^(-2i/dim). An odd dim
// leaves its last entry alone.
ATTNRT_API void apply_rotary(const ActivationView& rows, std::span<const std::int64_t> positions,
                             int first, int dim, double theta);

// out[r, i] = silu(gate_up[r, i]) * gate_up[r, intermediate + i].
ATTNRT_API void swiglu(RowsView gate_up, int intermediate, RowsView out);

// The index of the largest logit; the lowest index on ties.
ATTNRT_API int greedy_token(std::span<const float> logits);

}  // namespace attnrt
