#pragma once
// ATTNRT_HIDDEN keeps a class nested in an exported (ATTNRT_API) one out of libattnrt.so's
// exports, which it would otherwise join: the `Impl` that holds a public class's private state
// (src/*/*_impl.h) and CpuFlashBackend's LazyBf16Choice are defined in src/ with it.

#if defined(__GNUC__) || defined(__clang__)
#define ATTNRT_HIDDEN __attribute__((visibility("hidden")))
#else
#define ATTNRT_HIDDEN
#endif
