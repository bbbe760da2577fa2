// The built-in transformer's weight matrices and row-wise kernels (matmul: model_math_matmul.cc).
// Plain loops, each row on its own, so results do not depend on the batch.

#include "attnrt/engine/model_math.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/fail.h"

namespace attnrt {
namespace {

float widen_bf16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace

WeightMatrix::WeightMatrix(DType dtype, int rows, int cols)
    : dtype_(dtype), rows_(rows), cols_(cols) {
  if (dtype != DType::f32 && dtype != DType::bf16) {
    fail("model weights must be float32 or bfloat16, got {}", dtype_name(dtype));
  }
  if (rows < 0 || cols < 0) fail("a weight matrix cannot be {} x {}", rows, cols);
  const std::size_t size = offset(rows);
  if (dtype == DType::f32) {
    f32_.assign(size, 0.f);
  } else {
    bf16_.assign(size, 0);
  }
}

void WeightMatrix::set(int row, int col, float value) {
  const std::size_t index = offset(row) + static_cast<std::size_t>(col);
  if (dtype_ == DType::f32) {
    f32_[index] = value;
  } else {
    bf16_[index] = float_to_bf16_bits(value);
  }
}

float WeightMatrix::get(int row, int col) const {
  const std::size_t index = offset(row) + static_cast<std::size_t>(col);
  return dtype_ == DType::f32 ? f32_[index] : widen_bf16(bf16_[index]);
}

void WeightMatrix::copy_row(int row, float* out) const {
  if (dtype_ == DType::f32) {
    std::copy_n(f32_row(row), cols_, out);
  } else {
    const std::uint16_t* bits = bf16_row(row);
    for (int c = 0; c < cols_; ++c) out[c] = widen_bf16(bits[c]);
  }
}

void rms_norm(RowsView x, std::span<const float> gain, float eps, RowsView out) {
  const int size = static_cast<int>(gain.size());
  for (int r = 0; r < x.num_rows; ++r) {
    const float* in = x.row(r);
    double sum_of_squares = 0.0;
    for (int i = 0; i < size; ++i) sum_of_squares += static_cast<double>(in[i]) * in[i];
    const auto inverse_rms = static_cast<float>(1.0 / std::sqrt(sum_of_squares / size + eps));
    float* result = out.row(r);
    for (int i = 0; i < size; ++i) result[i] = in[i] * inverse_rms * gain[i];
  }
}

void apply_rotary(const ActivationView& rows, std::span<const std::int64_t> positions, int first,
                  int dim, double theta) {
  const int half = dim / 2;
  for (int t = 0; t < rows.num_tokens; ++t) {
    const auto position = static_cast<double>(positions[t]);
    for (int i = 0; i < half; ++i) {
      const double angle = position * std::pow(theta, -2.0 * i / dim);
      const auto cos = static_cast<float>(std::cos(angle));
      const auto sin = static_cast<float>(std::sin(angle));
      for (int h = 0; h < rows.num_heads; ++h) {
        float* head = rows.row(t, h) + first;
        const float x0 = head[i];
        const float x1 = head[i + half];
        head[i] = x0 * cos - x1 * sin;
        head[i + half] = x1 * cos + x0 * sin;
      }
    }
  }
}

void swiglu(RowsView gate_up, int intermediate, RowsView out) {
  for (int r = 0; r < gate_up.num_rows; ++r) {
    const float* gate = gate_up.row(r);
    const float* up = gate + intermediate;
    float* result = out.row(r);
    for (int i = 0; i < intermediate; ++i) {
      result[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
    }
  }
}

int greedy_token(std::span<const float> logits) {
  if (logits.empty()) fail("greedy_token: no logits to choose from");
  return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace attnrt
