#pragma once
// Element types of tensors and KV caches, with exact conversions for the reduced-precision ones.
// f16, bf16 and fp8-e4m3 round to nearest, ties to even; fp8-e4m3 (the "fn" variant: no
// infinities, max 448) saturates out-of-range finite values to ±448 as vLLM's fp8 caches do.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attnrt {

enum class DType : std::uint8_t { f32, f16, bf16, fp8_e4m3, int8, int32, int64 };

// Bytes per element.
std::size_t dtype_size(DType dtype);
// Canonical name: "float32", "float16", "bfloat16", "fp8_e4m3", "int8", "int32", "int64".
std::string_view dtype_name(DType dtype);
// Accepts the canonical names and common aliases ("f32", "fp32", "f16", "half", "bf16", "fp8",
// "fp8_e4m3"). Throws Error naming the bad string and the accepted names.
DType parse_dtype(std::string_view name);
bool is_floating(DType dtype);

std::uint16_t float_to_f16_bits(float value);
float f16_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(std::uint16_t bits);
std::uint8_t float_to_fp8_e4m3_bits(float value);
float fp8_e4m3_bits_to_float(std::uint8_t bits);

// Reads/writes one element of `dtype` at `address` as float (integers convert by value).
float load_as_float(DType dtype, const std::byte* address);
void store_from_float(DType dtype, std::byte* address, float value);

}  // namespace attnrt
