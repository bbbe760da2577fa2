// CPU_FLASH's forward kernel for bfloat16 caches, one translation unit of four (see
// flash_forward_dtype.h).

#define ATTNRT_FLASH_CACHE_T hwy::bfloat16_t
#define ATTNRT_FLASH_KERNEL RunForwardBf16
#define ATTNRT_FLASH_DISPATCH run_forward_bf16
#include "flash_forward_dtype.h"  // IWYU pragma: keep
