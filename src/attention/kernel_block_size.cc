#include "attnrt/attention/kernel_block_size.h"

#include <fmt/format.h>

namespace attnrt {

bool kernel_block_size_supported(std::span<const KernelBlockSize> sizes, int block_size) {
  for (const KernelBlockSize& size : sizes) {
    if (const int* exact = std::get_if<int>(&size); exact && *exact == block_size) return true;
    if (const MultipleOf* multiple = std::get_if<MultipleOf>(&size);
        multiple && multiple->base > 0 && block_size % multiple->base == 0) {
      return true;
    }
  }
  return false;
}

std::string describe_kernel_block_sizes(std::span<const KernelBlockSize> sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) out += ", ";
    if (const int* exact = std::get_if<int>(&sizes[i])) {
      out += std::to_string(*exact);
    } else {
      out += fmt::format("MultipleOf({})", std::get<MultipleOf>(sizes[i]).base);
    }
  }
  return out + "]";
}

}  // namespace attnrt
