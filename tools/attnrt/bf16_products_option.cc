#include "bf16_products_option.h"

#include <array>
#include <string_view>

#include "cli_checks.h"

namespace attnrt::cli {

void add_bf16_products_option(CLI::App& command, std::string& value) {
  static constexpr std::array<std::string_view, 3> kNames = {"auto", "dot", "f32"};
  command
      .add_option("--bf16-products", value,
                  "How CPU_FLASH multiplies bf16 caches: auto (by the CPU's features, the "
                  "default), dot (AVX512-BF16 dot products / AMX tiles where the CPU has them) "
                  "or f32")
      ->check(one_of(kNames, "auto, dot or f32"));
}

std::optional<Bf16Products> parse_bf16_products_option(const std::string& value) {
  if (value.empty()) return std::nullopt;
  return bf16_products_from_name(value);  // checked by the option's validator
}

CpuFlashOptions cpu_flash_options_with(const std::string& value) {
  CpuFlashOptions options;
  if (const std::optional<Bf16Products> products = parse_bf16_products_option(value)) {
    options.bf16_products = *products;
  }
  return options;
}

}  // namespace attnrt::cli
