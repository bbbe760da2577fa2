#pragma once
// ATTNRT_HIDDEN keeps a class nested in an exported (ATTNRT_API) one out of libattnrt.so's
// exports, which it would otherwise join: CpuFlashBackend's LazyBf16Choice is defined in src/
// with it.

#if defined(__GNUC__) || defined(__clang__)
#define ATTNRT_HIDDEN __attribute__((visibility("hidden")))
#else
#define ATTNRT_HIDDEN
#endif
