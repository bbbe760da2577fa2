// The walk of a GEMM item of CPU_FLASH (prefill), per Highway target: an item's query rows
// (tokens × heads of one GQA group) lie along SIMD lanes, so the softmax is vertical and each
// packed K/V tile serves every row: Sᵀ = K·Qᵀ and Oᵀ = α·Oᵀ + Vᵀ·Pᵀ are both broadcast-multiply
// tiles. Operands pack and multiply: f32 FMAs here, bf16 pairs (AMX tiles or vdpbf16ps) in
// avx512/bf16_pair_operands-inl.h.

#if defined(ATTNRT_CPU_FLASH_GEMM_WALK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMM_WALK_INL_H_
#undef ATTNRT_CPU_FLASH_GEMM_WALK_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMM_WALK_INL_H_
#endif

#include <algorithm>
#include <limits>

#include "backends/cpu_flash/avx512/gemm_transposes-inl.h"
#include "flash_rows.h"
#include "flash_simd-inl.h"
#include "flash_softmax-inl.h"
#include "flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// Register blocking: kTileA broadcast operands × kTileV row vectors of accumulators.
#if ATTNRT_AVX512_TARGET || HWY_TARGET == HWY_NEON
inline constexpr int kTileA = 4;
#else
inline constexpr int kTileA = 2;
#endif
inline constexpr int kTileV = 4;

// C[i][v] = (scale[v] · C[i][v] or 0) + Σ_k A(i, k) · B[k][v] for i < NA, v < NV vectors:
// A is read as scalars at i·sa + k·sk and broadcast; B and C are aligned rows of vectors.
template <int NA, int NV, bool kScale>
HWY_INLINE void MicroTile(const float* HWY_RESTRICT a, std::int64_t sa, std::int64_t sk,
                          const float* HWY_RESTRICT b, std::int64_t sb, int depth,
                          float* HWY_RESTRICT c, std::int64_t sc, const float* HWY_RESTRICT scale) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  VF acc[NA][NV];
  HWY_UNROLL(4)
  for (int v = 0; v < NV; ++v) {
    const VF s = kScale ? hn::Load(df, scale + v * lanes) : hn::Zero(df);
    HWY_UNROLL(4)
    for (int i = 0; i < NA; ++i) {
      acc[i][v] = kScale ? hn::Mul(hn::Load(df, c + i * sc + v * lanes), s) : hn::Zero(df);
    }
  }
  for (int k = 0; k < depth; ++k) {
    VF row[NV];
    HWY_UNROLL(4)
    for (int v = 0; v < NV; ++v) row[v] = hn::Load(df, b + k * sb + v * lanes);
    HWY_UNROLL(4)
    for (int i = 0; i < NA; ++i) {
      const VF x = hn::Set(df, a[i * sa + k * sk]);
      HWY_UNROLL(4)
      for (int v = 0; v < NV; ++v) acc[i][v] = hn::MulAdd(x, row[v], acc[i][v]);
    }
  }
  HWY_UNROLL(4)
  for (int i = 0; i < NA; ++i) {
    HWY_UNROLL(4)
    for (int v = 0; v < NV; ++v) hn::Store(acc[i][v], df, c + i * sc + v * lanes);
  }
}

template <int NA, bool kScale>
HWY_INLINE void RowBlock(const float* a, std::int64_t sa, std::int64_t sk, const float* b,
                         std::int64_t sb, int num_vectors, int depth, float* c, std::int64_t sc,
                         const float* scale) {
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  int v = 0;
  for (; v + kTileV <= num_vectors; v += kTileV) {
    MicroTile<NA, kTileV, kScale>(a, sa, sk, b + v * lanes, sb, depth, c + v * lanes, sc,
                                  scale + v * lanes);
  }
  const float* bv = b + v * lanes;
  float* cv = c + v * lanes;
  const float* sv = scale + v * lanes;
  switch (num_vectors - v) {
    case 3:
      MicroTile<NA, 3, kScale>(a, sa, sk, bv, sb, depth, cv, sc, sv);
      break;
    case 2:
      MicroTile<NA, 2, kScale>(a, sa, sk, bv, sb, depth, cv, sc, sv);
      break;
    case 1:
      MicroTile<NA, 1, kScale>(a, sa, sk, bv, sb, depth, cv, sc, sv);
      break;
    default:
      break;
  }
}

// C[rows_a][num_vectors] over all rows of A (see MicroTile), kTileV vectors of B at a time: that
// block of B (depth × kTileV vectors, 32 KiB at depth 128) stays in L1 while A streams past it.
template <bool kScale>
HWY_NOINLINE void TileGemm(const float* a, std::int64_t sa, std::int64_t sk, int rows_a,
                           const float* b, std::int64_t sb, int num_vectors, int depth, float* c,
                           std::int64_t sc, const float* scale) {
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  for (int v = 0; v < num_vectors; v += kTileV) {
    const int block = std::min(kTileV, num_vectors - v);
    const float* bv = b + v * lanes;
    float* cv = c + v * lanes;
    const float* sv = kScale ? scale + v * lanes : nullptr;
    int i = 0;
    for (; i + kTileA <= rows_a; i += kTileA) {
      RowBlock<kTileA, kScale>(a + i * sa, sa, sk, bv, sb, block, depth, cv + i * sc, sc, sv);
    }
    for (; i < rows_a; ++i) {
      RowBlock<1, kScale>(a + i * sa, sa, sk, bv, sb, block, depth, cv + i * sc, sc, sv);
    }
  }
}

// Packs keys [first, first + count) of one KV head as f32 rows (K: key_size wide, V: value_size
// wide unless V aliases K, as MLA's latent does). No software prefetch: the keys of a page are
// contiguous and the hardware prefetcher keeps up (docs/cpu-flash.md §6).
template <typename T>
HWY_INLINE void PackKeyTile(const ForwardTask& task, const Request& request, int kv_head, int first,
                            int count, float* k_tile, float* v_tile) {
  const CacheView& cache = task.cache;
  const bool pack_values = v_tile != nullptr;
  for (int n = 0; n < count; ++n) {
    const T* token = reinterpret_cast<const T*>(cache.token(request.block_row, first + n, kv_head));
    ConvertRow(token + cache.key_offset, cache.key_size, k_tile + n * cache.key_size);
    if (pack_values) {
      ConvertRow(token + cache.value_offset, cache.value_size, v_tile + n * cache.value_size);
    }
  }
}

// Online softmax of NV row vectors (from row `offset`) of one score tile Sᵀ[count][rows], already
// in log2 units: masks, raises each row's max and sum, leaves the weights P in place and α per
// row. The NV vectors go side by side so that their max and sum chains overlap.
template <int NV>
HWY_INLINE void SoftmaxRowVectors(const RowSet& rows, int offset, int first, int count,
                                  bool fully_visible, float slack, float* HWY_RESTRICT scores,
                                  std::int64_t stride) {
  const DF df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  VF tile_max[NV];
  for (int v = 0; v < NV; ++v) tile_max[v] = neg_inf;
  if (fully_visible) {
    for (int n = 0; n < count; ++n) {
      const float* s = scores + n * stride + offset;
      for (int v = 0; v < NV; ++v) tile_max[v] = hn::Max(tile_max[v], hn::Load(df, s + v * lanes));
    }
  } else {
    for (int n = 0; n < count; ++n) {
      float* s = scores + n * stride + offset;
      const VF position = hn::Set(df, static_cast<float>(first + n));
      for (int v = 0; v < NV; ++v) {
        const int row = offset + v * lanes;
        const auto visible = hn::And(hn::Ge(position, hn::Load(df, rows.begin + row)),
                                     hn::Lt(position, hn::Load(df, rows.end + row)));
        const VF x = hn::IfThenElse(visible, hn::Load(df, s + v * lanes), neg_inf);
        hn::Store(x, df, s + v * lanes);
        tile_max[v] = hn::Max(tile_max[v], x);
      }
    }
  }
  VF base[NV];
  VF sum[NV];
  for (int v = 0; v < NV; ++v) {
    const int row = offset + v * lanes;
    const VF old_max = hn::Load(df, rows.max + row);
    const SoftmaxRaise raise = RaiseMax(df, old_max, tile_max[v], slack);
    base[v] = raise.base;
    sum[v] = hn::Zero(df);
    hn::Store(raise.max, df, rows.max + row);
    hn::Store(raise.alpha, df, rows.alpha + row);
  }
  for (int n = 0; n < count; ++n) {
    float* s = scores + n * stride + offset;
    for (int v = 0; v < NV; ++v) {
      const VF p = SoftmaxWeights(df, hn::Load(df, s + v * lanes), base[v]);
      hn::Store(p, df, s + v * lanes);
      sum[v] = hn::Add(sum[v], p);
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int row = offset + v * lanes;
    hn::Store(RescaledSum(hn::Load(df, rows.sum + row), hn::Load(df, rows.alpha + row), sum[v]), df,
              rows.sum + row);
  }
}

// `slack`: the Operands' kMaxSlack (RaiseMax).
HWY_INLINE void SoftmaxTile(const RowSet& rows, int first, int count, bool fully_visible,
                            float slack, float* HWY_RESTRICT scores, std::int64_t stride) {
  const int lanes = static_cast<int>(hn::Lanes(DF()));
  const int num_vectors = rows.padded / lanes;
  int v = 0;
  for (; v + 4 <= num_vectors; v += 4) {
    SoftmaxRowVectors<4>(rows, v * lanes, first, count, fully_visible, slack, scores, stride);
  }
  for (; v < num_vectors; ++v) {
    SoftmaxRowVectors<1>(rows, v * lanes, first, count, fully_visible, slack, scores, stride);
  }
}

// Qᵀ[key_size][padded rows], scaled into log2 units; padded rows are zero. Row by row: the
// fallback for query rows further apart than an int32 gather index reaches.
HWY_INLINE void PackQueryByRow(const ForwardTask& task, const Item& item, const RowSet& rows,
                               float* HWY_RESTRICT qt) {
  const int key_size = task.cache.key_size;
  for (int m = 0; m < rows.padded; ++m) {
    if (m >= rows.count) {
      for (int i = 0; i < key_size; ++i) qt[i * rows.padded + m] = 0.f;
      continue;
    }
    const float* q = query_row(task, item, m);
    for (int i = 0; i < key_size; ++i) qt[i * rows.padded + m] = q[i] * task.scale_log2;
  }
}

// The same a vector of rows at a time: entry i of `lanes` rows gathered by the rows' offsets from
// row 0, stored as one aligned vector (scalar stores a row apart missed L1: ~5 % of a prefill).
HWY_INLINE void PackQueryTransposed(const ForwardTask& task, const Item& item, const RowSet& rows,
                                    float* HWY_RESTRICT qt) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const float* row0 = query_row(task, item, 0);
  HWY_ALIGN std::int32_t offsets[kMaxRows];
  for (int m = 0; m < rows.padded; ++m) {
    const std::ptrdiff_t offset = m < rows.count ? query_row(task, item, m) - row0 : 0;
    if (offset != static_cast<std::int32_t>(offset)) {
      PackQueryByRow(task, item, rows, qt);
      return;
    }
    offsets[m] = static_cast<std::int32_t>(offset);
  }
  const VF scale = hn::Set(df, task.scale_log2);
  for (int m = 0; m < rows.padded; m += lanes) {
    const auto index = hn::Load(di, offsets + m);
    const auto real = hn::FirstN(df, static_cast<std::size_t>(std::max(0, rows.count - m)));
    for (int i = 0; i < task.cache.key_size; ++i) {
      const VF q = hn::Mul(hn::GatherIndex(df, row0 + i, index), scale);
      hn::Store(hn::IfThenElseZero(real, q), df, qt + i * rows.padded + m);
    }
  }
}

// The operands of the GEMM item for a cache of T in f32: Qᵀ and each K/V tile converted to f32,
// Sᵀ = K·Qᵀ and Oᵀ = α·Oᵀ + Vᵀ·Pᵀ by f32 FMAs. avx512/bf16_pair_operands-inl.h has the bf16 ones.
template <typename T>
struct F32Operands {
  static constexpr float kMaxSlack = 0.f;  // the FMA tiles rescale O for free (MicroTile)
  const ForwardTask& task;
  float* scratch;

  void PackQuery(const Item& item, const RowSet& rows) const {
    float* qt = scratch + task.scratch_layout.q;
#if ATTNRT_AVX512_TARGET
    if (task.cache.key_size % kTransposeBlock == 0) return PackQueryByBlocks(task, item, rows, qt);
#endif
    PackQueryTransposed(task, item, rows, qt);
  }
  void PackTile(const Request& request, int kv_head, int first, int count) const {
    const ScratchLayout& layout = task.scratch_layout;
    PackKeyTile<T>(task, request, kv_head, first, count, scratch + layout.k,
                   values_alias_keys() ? nullptr : scratch + layout.v);
  }
  void Scores(const RowSet& rows, int count, float* scores) const {
    const int key_size = task.cache.key_size;
    TileGemm<false>(scratch + task.scratch_layout.k, key_size, 1, count,
                    scratch + task.scratch_layout.q, rows.padded, vectors(rows), key_size, scores,
                    rows.padded, nullptr);
  }
  // After the softmax left the weights Pᵀ in `scores`.
  void AddValues(const RowSet& rows, int count, const float* weights, float* ot) const {
    const ScratchLayout& layout = task.scratch_layout;
    // MLA: the value is the first value_size entries of the packed latent.
    const bool alias = values_alias_keys();
    const float* v_tile = scratch + (alias ? layout.k : layout.v);
    const std::int64_t v_stride = alias ? task.cache.key_size : task.cache.value_size;
    TileGemm<true>(v_tile, 1, v_stride, task.cache.value_size, weights, rows.padded, vectors(rows),
                   count, ot, rows.padded, rows.alpha);
  }

  bool values_alias_keys() const {
    return task.cache.value_offset == task.cache.key_offset;
  }
  static int vectors(const RowSet& rows) {
    return rows.padded / static_cast<int>(hn::Lanes(DF()));
  }
};

// One GEMM item: tile by tile, scores, the online softmax over them, then the values; the
// Operands (F32Operands, Bf16PairOperands) pack and multiply.
template <class Operands>
HWY_INLINE void GemmWalk(const ForwardTask& task, const Item& item, float* scratch,
                         const Operands& operands) {
  const ScratchLayout& layout = task.scratch_layout;
  const int value_size = task.cache.value_size;
  const Request& request = task.requests[item.request];
  const RowSet rows = prepare_rows(task, item, static_cast<int>(hn::Lanes(DF())), scratch);
  float* ot = scratch + layout.o;
  float* scores = scratch + layout.s;
  operands.PackQuery(item, rows);
  std::fill(ot, ot + static_cast<std::int64_t>(value_size) * rows.padded, 0.f);
  for (int first = rows.keys.begin; first < rows.keys.end; first += kKeyTile) {
    const int count = std::min(kKeyTile, rows.keys.end - first);
    operands.PackTile(request, item.kv_head, first, count);
    operands.Scores(rows, count, scores);
    const bool fully_visible = first >= rows.max_begin && first + count <= rows.min_end;
    SoftmaxTile(rows, first, count, fully_visible, Operands::kMaxSlack, scores, rows.padded);
    operands.AddValues(rows, count, scores, ot);
  }
#if ATTNRT_AVX512_TARGET
  // Qᵀ is done with: its region stages the rows.
  if (value_size % kTransposeBlock == 0 &&
      kTransposeBlock * value_size <= task.cache.key_size * kMaxRows) {
    return FinishRowsFromColumns(task, item, rows, ot, scratch + layout.q);
  }
#endif
  // Row m of O is column m of Oᵀ (index j · padded ≤ kMaxHeadSize · kMaxRows fits an int32).
  FinishRows(task, item, rows, [&](int m, float scale, float* HWY_RESTRICT dst) {
    ScaleColumn(ot + m, rows.padded, value_size, scale, dst);
  });
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMM_WALK_INL_H_
