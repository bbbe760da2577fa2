// CPU_FLASH's forward kernel for fp8_e4m3 caches, one translation unit of four (see
// flash_forward_dtype.h).

#define ATTNRT_FLASH_CACHE_T Fp8E4M3
#define ATTNRT_FLASH_KERNEL RunForwardFp8
#define ATTNRT_FLASH_DISPATCH run_forward_fp8
#include "flash_forward_dtype.h"  // IWYU pragma: keep
