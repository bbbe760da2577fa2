#pragma once
// Element types of tensors and KV caches, with exact conversions for the reduced-precision ones.
// f16, bf16 and fp8-e4m3 round to nearest, ties to even; fp8-e4m3 (the "fn" variant: no
// infinities, max 448) saturates out-of-range finite values to ±448 as vLLM's fp8 caches do.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

enum class DType : std::uint8_t { f32, f16, bf16, fp8_e4m3, int8, int32, int64 };

// Bytes per element.
ATTNRT_API std::size_t dtype_size(DType dtype);
// Canonical name: "float32", "float16", "bfloat16", "fp8_e4m3", "int8", "int32", "int64".
ATTNRT_API std::string_view dtype_name(DType dtype);
// Accepts the canonical names and common aliases ("f32", "fp32", "f16", "half", "bf16", "fp8",
// "fp8_e4m3"). Throws Error naming the bad string and the accepted names.
ATTNRT_API DType parse_dtype(std::string_view name);
ATTNRT_API bool is_floating(DType dtype);

ATTNRT_API std::uint16_t float_to_f16_bits(float value);
ATTNRT_API float f16_bits_to_float(std::uint16_t bits);
ATTNRT_API std::uint16_t float_to_bf16_bits(float value);
ATTNRT_API float bf16_bits_to_float(std::uint16_t bits);
ATTNRT_API std::uint8_t float_to_fp8_e4m3_bits(float value);
ATTNRT_API float fp8_e4m3_bits_to_float(std::uint8_t bits);

// Reads/writes one element of `dtype` at `address` as float (integers convert by value).
ATTNRT_API float load_as_float(DType dtype, const std::byte* address);
ATTNRT_API void store_from_float(DType dtype, std::byte* address, float value);

}  // namespace attnrt
