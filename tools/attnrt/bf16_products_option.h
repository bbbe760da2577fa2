#pragma once
// --bf16-products auto|dot|f32 on `plan`, `run` and `bench attention`: pins how CPU_FLASH
// multiplies bf16 caches (docs/cpu-flash.md §5), so that a user can hold the arithmetic (and the
// tokens) fixed across machines, or try the other choice.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

namespace attnrt::cli {

// Adds the option to `command`; `value` stays empty when it is not given.
void add_bf16_products_option(CLI::App& command, std::string& value);
// The option's value, nullopt when it was not given (the backend's default: auto).
std::optional<Bf16Products> parse_bf16_products_option(const std::string& value);
// CPU_FLASH's options with the option applied.
CpuFlashOptions cpu_flash_options_with(const std::string& value);

}  // namespace attnrt::cli
