#pragma once
// ATTNRT_API marks what libattnrt.so exports: the public classes (their members, vtables and
// typeinfo, so that dynamic_cast and catch work across the library's boundary) and the public
// free functions. The library compiles with hidden visibility (CMakeLists.txt), so everything
// else — src/, attnrt::detail, CPU_FLASH's kernels and the third-party templates instantiated
// inside — stays private to it and may change without breaking a program linked against it.
// For the static library the mark changes nothing.

#if defined(__GNUC__) || defined(__clang__)
#define ATTNRT_API __attribute__((visibility("default")))
#else
#define ATTNRT_API
#endif
