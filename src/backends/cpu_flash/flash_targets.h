#pragma once
// The SIMD targets CPU_FLASH compiles (include before any Highway header): AVX-512 and AVX2 on
// x86, NEON on Arm, plus the portable fallback. SSSE3/SSE4 add nothing the fallback lacks for
// these kernels; scalable vectors (SVE, RVV) would need sizeless-type code.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SSSE3 | HWY_SSE4 | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV)
#endif
