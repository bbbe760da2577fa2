// The products of a bf16 GEMM item (avx512/bf16_pair_operands-inl.h) on AMX: tdpbf16ps
// multiplies a 16 × 32 bf16 tile by a 32 × 16 one (stored as 16 rows of 16 bf16 pairs) into a
// 16 × 16 f32 tile, 8 192 MACs per instruction. The CPU must have AMX-BF16 and the OS must have
// granted the tile state (amx_bf16_available). x86 AVX-512 targets only (every AMX CPU has
// AVX-512); empty elsewhere.

#if defined(ATTNRT_CPU_FLASH_AMX_BF16_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AMX_BF16_TILES_INL_H_
#undef ATTNRT_CPU_FLASH_AMX_BF16_TILES_INL_H_
#else
#define ATTNRT_CPU_FLASH_AMX_BF16_TILES_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "backends/cpu_flash/flash_targets.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
#define ATTNRT_AMX __attribute__((target("amx-tile,amx-bf16")))

// Palette 1, tiles 0-7 all 16 rows of 64 bytes: C tiles 0-3, A tiles 4-5, B tiles 6-7.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

ATTNRT_AMX inline HWY_NOINLINE void ConfigureTiles() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}

ATTNRT_AMX inline HWY_NOINLINE void ReleaseTiles() {
  _tile_release();
}

// C blocks (i, j) of MB × NB 16 × 16 f32 tiles (+)= Σ_s A(i, s) · B(s, j): A(i, s) is 16 rows
// of 64 bytes at a + i·16·lda + s·64, B(s, j) at b + s·16·ldb + j·64, C(i, j) at
// c + i·16·ldc + j·64 (strides in bytes).
template <int MB, int NB, bool kAccumulate>
ATTNRT_AMX HWY_INLINE void TileBlock(const std::byte* a, std::int64_t lda, const std::byte* b,
                                     std::int64_t ldb, int steps, std::byte* c, std::int64_t ldc) {
  const auto c_at = [&](int i, int j) { return c + i * 16 * ldc + j * 64; };
  if constexpr (kAccumulate) {
    _tile_loadd(0, c_at(0, 0), ldc);
    if constexpr (NB > 1) _tile_loadd(1, c_at(0, 1), ldc);
    if constexpr (MB > 1) _tile_loadd(2, c_at(1, 0), ldc);
    if constexpr (MB > 1 && NB > 1) _tile_loadd(3, c_at(1, 1), ldc);
  } else {
    _tile_zero(0);
    if constexpr (NB > 1) _tile_zero(1);
    if constexpr (MB > 1) _tile_zero(2);
    if constexpr (MB > 1 && NB > 1) _tile_zero(3);
  }
  for (int s = 0; s < steps; ++s) {
    _tile_loadd(4, a + s * 64, lda);
    _tile_loadd(6, b + s * 16 * ldb, ldb);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NB > 1) {
      _tile_loadd(7, b + s * 16 * ldb + 64, ldb);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (MB > 1) {
      _tile_loadd(5, a + 16 * lda + s * 64, lda);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (NB > 1) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c_at(0, 0), ldc);
  if constexpr (NB > 1) _tile_stored(1, c_at(0, 1), ldc);
  if constexpr (MB > 1) _tile_stored(2, c_at(1, 0), ldc);
  if constexpr (MB > 1 && NB > 1) _tile_stored(3, c_at(1, 1), ldc);
}

// The whole product of m_blocks × n_blocks C tiles, two by two (C rows of 16 f32 tiles).
template <bool kAccumulate>
ATTNRT_AMX inline HWY_NOINLINE void TileProduct(int m_blocks, int n_blocks, int steps,
                                                const void* a, std::int64_t lda, const void* b,
                                                std::int64_t ldb, float* c, std::int64_t ldc) {
  const auto* a_bytes = static_cast<const std::byte*>(a);
  const auto* b_bytes = static_cast<const std::byte*>(b);
  auto* c_bytes = reinterpret_cast<std::byte*>(c);
  for (int i = 0; i < m_blocks; i += 2) {
    const std::byte* ai = a_bytes + i * 16 * lda;
    for (int j = 0; j < n_blocks; j += 2) {
      const std::byte* bj = b_bytes + j * 64;
      std::byte* cij = c_bytes + i * 16 * ldc + j * 64;
      const bool two_m = i + 1 < m_blocks;
      const bool two_n = j + 1 < n_blocks;
      if (two_m && two_n) {
        TileBlock<2, 2, kAccumulate>(ai, lda, bj, ldb, steps, cij, ldc);
      } else if (two_m) {
        TileBlock<2, 1, kAccumulate>(ai, lda, bj, ldb, steps, cij, ldc);
      } else if (two_n) {
        TileBlock<1, 2, kAccumulate>(ai, lda, bj, ldb, steps, cij, ldc);
      } else {
        TileBlock<1, 1, kAccumulate>(ai, lda, bj, ldb, steps, cij, ldc);
      }
    }
  }
}

// Bf16PairOperands' products on AMX tiles: configured for an item's lifetime.
struct AmxTileProducts {
  static void Begin() { ConfigureTiles(); }
  static void End() { ReleaseTiles(); }
  template <bool kAccumulate>
  static void Multiply(int m_blocks, int n_blocks, int steps, const void* a, std::int64_t lda,
                       const void* b, std::int64_t ldb, float* c, std::int64_t ldc) {
    TileProduct<kAccumulate>(m_blocks, n_blocks, steps, a, lda, b, ldb, c, ldc);
  }
};

#undef ATTNRT_AMX
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AMX_BF16_TILES_INL_H_
