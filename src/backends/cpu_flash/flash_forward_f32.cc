// CPU_FLASH's forward kernel for float32 caches, one translation unit of four (see
// flash_forward_dtype.h).

#define ATTNRT_FLASH_CACHE_T float
#define ATTNRT_FLASH_KERNEL RunForwardF32
#define ATTNRT_FLASH_DISPATCH run_forward_f32
#include "flash_forward_dtype.h"  // IWYU pragma: keep
