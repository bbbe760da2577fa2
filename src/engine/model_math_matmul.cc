// matmul of the built-in transformer: out = x·W, W [inner, cols] row-major in f32 or bf16.
// A register tile of 4 rows x 2 SIMD vectors of columns accumulates over the inner index in
// order (GCC vector types: SSE2 lanes anywhere, AVX2 lanes where the CPU has them, chosen at run
// time). A lane computes `sum += a * w` with one rounding per operation, exactly like the scalar
// column tail, so every entry is the same sum whichever path, tile or thread computed it — the
// property that makes a batched step and the dense reference agree bit for bit.

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "attnrt/engine/model_math.h"

namespace attnrt {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileVectors = 2;
// A task covers 64 rows x 256 columns: a column tile's weights (inner x 16 floats) stay in L1
// while every row block of the task uses them.
constexpr int kTaskRows = 64;
constexpr int kTaskCols = 256;
constexpr std::int64_t kParallelWork = 1 << 18;  // multiply-adds below which threads cost more

using Vec4 = float __attribute__((vector_size(16)));
using Vec8 = float __attribute__((vector_size(32)));

float widen(float value) {
  return value;
}
float widen(std::uint16_t bf16_bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bf16_bits) << 16);
}

template <typename Weight>
struct Operands {
  RowsView x;
  const Weight* weights;
  int inner;
  int cols;
  RowsView out;
  bool accumulate;

  const Weight* weight_row(int i) const { return weights + static_cast<std::int64_t>(i) * cols; }
};

// Vectors are passed by reference: by value, AVX vectors would change the calling convention.
template <typename V, typename Weight>
inline void load_widened(const Weight* source, V& vector) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  float lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = widen(source[l]);
  std::memcpy(&vector, lanes, sizeof(V));
}

inline void store_row(float* target, const float* sums, int width, bool accumulate) {
  for (int c = 0; c < width; ++c) target[c] = accumulate ? target[c] + sums[c] : sums[c];
}

// Rows [row, row + num_rows) x the kTileVectors vectors of columns from `col`. Missing rows
// repeat the last one and are not stored.
template <typename V, typename Weight>
inline void vector_tile(const Operands<Weight>& op, int row, int num_rows, int col) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  const float* inputs[kTileRows];
  for (int r = 0; r < kTileRows; ++r) inputs[r] = op.x.row(row + std::min(r, num_rows - 1));
  V sums[kTileRows][kTileVectors] = {};
  for (int i = 0; i < op.inner; ++i) {
    const Weight* weights = op.weight_row(i) + col;
    V w[kTileVectors];
    for (int v = 0; v < kTileVectors; ++v) load_widened(weights + v * kLanes, w[v]);
    for (int r = 0; r < kTileRows; ++r) {
      const float a = inputs[r][i];
      for (int v = 0; v < kTileVectors; ++v) sums[r][v] += a * w[v];
    }
  }
  for (int r = 0; r < num_rows; ++r) {
    float lanes[kTileVectors * kLanes];
    std::memcpy(lanes, sums[r], sizeof(lanes));
    store_row(op.out.row(row + r) + col, lanes, kTileVectors * kLanes, op.accumulate);
  }
}

// Columns past the last whole vector tile, one entry at a time.
template <typename Weight>
void scalar_tile(const Operands<Weight>& op, int row, int num_rows, int col, int width) {
  for (int r = row; r < row + num_rows; ++r) {
    const float* input = op.x.row(r);
    float* target = op.out.row(r);
    for (int c = col; c < col + width; ++c) {
      float sum = 0.f;
      for (int i = 0; i < op.inner; ++i) sum += input[i] * widen(op.weight_row(i)[c]);
      target[c] = op.accumulate ? target[c] + sum : sum;
    }
  }
}

template <typename V, typename Weight>
inline void run_task(const Operands<Weight>& op, int row, int num_rows, int col, int width) {
  constexpr int kTileCols = kTileVectors * static_cast<int>(sizeof(V) / sizeof(float));
  const int end_row = row + num_rows;
  int c = col;
  for (; c + kTileCols <= col + width; c += kTileCols) {
    for (int r = row; r < end_row; r += kTileRows) {
      vector_tile<V>(op, r, std::min(kTileRows, end_row - r), c);
    }
  }
  if (c < col + width) scalar_tile(op, row, num_rows, c, col + width - c);
}

template <typename Weight>
void run_task_sse(const Operands<Weight>& op, int row, int num_rows, int col, int width) {
  run_task<Vec4>(op, row, num_rows, col, width);
}

#if defined(__x86_64__) || defined(__i386__)
template <typename Weight>
__attribute__((target("avx2"), flatten)) void run_task_avx2(const Operands<Weight>& op, int row,
                                                            int num_rows, int col, int width) {
  run_task<Vec8>(op, row, num_rows, col, width);
}

bool cpu_has_avx2() {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  return has_avx2;
}
#endif

template <typename Weight>
void run_matmul(const Operands<Weight>& op, int num_threads) {
  const int row_tasks = (op.x.num_rows + kTaskRows - 1) / kTaskRows;
  const int col_tasks = (op.cols + kTaskCols - 1) / kTaskCols;
  const int num_tasks = row_tasks * col_tasks;
  const std::int64_t work = static_cast<std::int64_t>(op.x.num_rows) * op.inner * op.cols;
  auto task_runner = &run_task_sse<Weight>;
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has_avx2()) task_runner = &run_task_avx2<Weight>;
#endif
  const bool parallel = num_threads > 1 && work >= kParallelWork && num_tasks > 1;
#pragma omp parallel for schedule(static) num_threads(num_threads) if (parallel)
  for (int task = 0; task < num_tasks; ++task) {
    const int row = task / col_tasks * kTaskRows;
    const int col = task % col_tasks * kTaskCols;
    task_runner(op, row, std::min(kTaskRows, op.x.num_rows - row), col,
                std::min(kTaskCols, op.cols - col));
  }
}

}  // namespace

void matmul(RowsView x, const WeightMatrix& w, RowsView out, bool accumulate, int num_threads) {
  if (x.num_rows <= 0 || w.cols() <= 0) return;
  if (w.dtype() == DType::f32) {
    run_matmul(Operands<float>{x, w.f32_row(0), w.rows(), w.cols(), out, accumulate}, num_threads);
  } else {
    run_matmul(Operands<std::uint16_t>{x, w.bf16_row(0), w.rows(), w.cols(), out, accumulate},
               num_threads);
  }
}

}  // namespace attnrt
