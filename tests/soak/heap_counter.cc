#include "soak/heap_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

// The one global of a soak binary: replaced allocation functions cannot carry state otherwise.
std::atomic<std::int64_t> g_live_bytes{0};

void* counted_alloc(std::size_t size) {
  void* pointer = std::malloc(size == 0 ? 1 : size);
  if (pointer == nullptr) throw std::bad_alloc();
  g_live_bytes += static_cast<std::int64_t>(malloc_usable_size(pointer));
  return pointer;
}

void counted_free(void* pointer) noexcept {
  if (pointer == nullptr) return;
  g_live_bytes -= static_cast<std::int64_t>(malloc_usable_size(pointer));
  std::free(pointer);
}

}  // namespace

std::int64_t attnrt::soak::live_heap_bytes() {
  return g_live_bytes.load();
}

void* operator new(std::size_t size) {
  return counted_alloc(size);
}
void* operator new[](std::size_t size) {
  return counted_alloc(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void operator delete(void* pointer) noexcept {
  counted_free(pointer);
}
void operator delete[](void* pointer) noexcept {
  counted_free(pointer);
}
void operator delete(void* pointer, std::size_t) noexcept {
  counted_free(pointer);
}
void operator delete[](void* pointer, std::size_t) noexcept {
  counted_free(pointer);
}
