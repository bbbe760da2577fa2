// The operands of a GEMM item (flash_gemm_walk-inl.h) for a bf16 cache multiplied in bf16. The
// walk keeps its layout, rows of an item along the columns:
//   Sᵀ[keys][rows]    = K[keys][dims] · Qᵀ, Qᵀ as pairs (q[m][2p], q[m][2p + 1]) per column m;
//   Oᵀ[values][rows] += V'[values][key pairs] · Pᵀ, V' holding (v[2j][i], v[2j + 1][i]) and Pᵀ
//                       the softmax weights (p[2j][m], p[2j + 1][m]), both rounded to bf16.
// Keys are padded to whole blocks of 16 with zeros. Products says who multiplies: AMX tiles
// (AmxTileProducts, amx/bf16_tiles-inl.h) or vdpbf16ps (DotPairProducts, bf16_pair_gemm-inl.h);
// both read the same layouts (bf16_pairs-inl.h). x86 AVX-512 targets only; empty elsewhere.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_OPERANDS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_OPERANDS_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_OPERANDS_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_OPERANDS_INL_H_
#endif

#include <cstdint>

#include "backends/cpu_flash/avx512/bf16_pairs-inl.h"
#include "backends/cpu_flash/flash_rows.h"
#include "backends/cpu_flash/flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// Qᵀ, K and V' pairs take the f32 regions of the scratch (each fits in half).
template <class Products>
class Bf16PairOperands {
 public:
  // The max rises lazily (RaiseMax with a slack): weights stay below 2^8, so their bf16 rounding
  // keeps its relative error, and RescaleColumns skips most tiles.
  static constexpr float kMaxSlack = 8.f;

  Bf16PairOperands(const ForwardTask& task, float* scratch) : task_(task), scratch_(scratch) {
    Products::Begin();
  }
  ~Bf16PairOperands() { Products::End(); }
  Bf16PairOperands(const Bf16PairOperands&) = delete;
  Bf16PairOperands& operator=(const Bf16PairOperands&) = delete;

  void PackQuery(const Item& item, const RowSet& rows) const {
    PackQueryPairs(task_, item, rows, region(task_.scratch_layout.q));
  }
  void PackTile(const Request& request, int kv_head, int first, int count) const {
    PackKeysAndValuePairs(task_.cache, request, kv_head, first, count,
                          region(task_.scratch_layout.k), region(task_.scratch_layout.v));
  }
  void Scores(const RowSet& rows, int count, float* scores) const {
    const int key_size = task_.cache.key_size;
    Products::template Multiply<false>(
        (count + 15) / 16, rows.padded / 16, key_size / 32, region(task_.scratch_layout.k),
        key_size * 2, region(task_.scratch_layout.q), rows.padded * 4, scores, rows.padded * 4);
  }
  void AddValues(const RowSet& rows, int count, float* weights, float* ot) const {
    const int pairs = PackWeightPairs(count, rows.padded, weights);
    RescaleColumns(rows, task_.cache.value_size, ot);
    Products::template Multiply<true>(task_.cache.value_size / 16, rows.padded / 16, pairs / 16,
                                      region(task_.scratch_layout.v), kKeyTile / 2 * 4, weights,
                                      rows.padded * 4, ot, rows.padded * 4);
  }

 private:
  std::uint32_t* region(std::int64_t offset) const {
    return reinterpret_cast<std::uint32_t*>(scratch_ + offset);
  }

  const ForwardTask& task_;
  float* scratch_;
};
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_OPERANDS_INL_H_
