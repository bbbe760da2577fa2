#pragma once
// Bytes live on the heap of this process, counted by the replaced operator new/delete of
// heap_counter.cc: what a soak's "memory did not grow" has to observe is the whole process.

#include <cstdint>

namespace attnrt::soak {

std::int64_t live_heap_bytes();

}  // namespace attnrt::soak
