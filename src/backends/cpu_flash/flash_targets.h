#pragma once
// The SIMD targets CPU_FLASH compiles (include before any Highway header): AVX-512 and AVX2 on
// x86, NEON on Arm, plus the portable fallback. SSSE3/SSE4 add nothing the fallback lacks for
// these kernels; scalable vectors (SVE, RVV) would need sizeless-type code. AVX3_DL (Ice Lake,
// Zen 4) is compiled too, so that the AVX-512 paths are built and tested on a second AVX-512
// target, as newer Highway releases pick AVX3_ZEN4 or AVX3_SPR on those CPUs.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SSSE3 | HWY_SSE4 | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV)
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif

#include "hwy/detect_targets.h"

// Whether the target being compiled is an x86 AVX-512 one: the hand-written AVX-512 paths
// (32 vector registers, vscalefps, AVX512-BF16 dot products) serve every such target Highway has.
// Targets this Highway lacks compare as 0, which no HWY_TARGET equals.
#ifdef HWY_AVX3_ZEN4
#define ATTNRT_HWY_AVX3_ZEN4 HWY_AVX3_ZEN4
#else
#define ATTNRT_HWY_AVX3_ZEN4 0
#endif
#ifdef HWY_AVX3_SPR
#define ATTNRT_HWY_AVX3_SPR HWY_AVX3_SPR
#else
#define ATTNRT_HWY_AVX3_SPR 0
#endif
#define ATTNRT_AVX512_TARGET                                                                    \
  (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == ATTNRT_HWY_AVX3_ZEN4 || \
   HWY_TARGET == ATTNRT_HWY_AVX3_SPR)
