#pragma once
// Kernel block sizes a backend accepts (SEMANTICS §3.2): exact sizes and `MultipleOf(base)`.

#include <span>
#include <string>
#include <variant>
#include <vector>

#include "attnrt/core/export.h"

namespace attnrt {

struct MultipleOf {
  int base = 1;
  friend bool operator==(const MultipleOf&, const MultipleOf&) = default;
};

using KernelBlockSize = std::variant<int, MultipleOf>;

// True if some entry equals `block_size` or is a MultipleOf dividing it.
ATTNRT_API bool kernel_block_size_supported(std::span<const KernelBlockSize> sizes, int block_size);
// "[16, 32, MultipleOf(16)]"
ATTNRT_API std::string describe_kernel_block_sizes(std::span<const KernelBlockSize> sizes);

}  // namespace attnrt
