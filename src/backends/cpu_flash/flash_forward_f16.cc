// CPU_FLASH's forward kernel for float16 caches, one translation unit of four (see
// flash_forward_dtype.h).

#define ATTNRT_FLASH_CACHE_T hwy::float16_t
#define ATTNRT_FLASH_KERNEL RunForwardF16
#define ATTNRT_FLASH_DISPATCH run_forward_f16
#include "flash_forward_dtype.h"  // IWYU pragma: keep
