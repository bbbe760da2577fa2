// Tensor::to_dlpack: the exported DLManagedTensor describes the view and keeps its memory alive.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attnrt/core/tensor.h"

namespace attnrt {
namespace {

using Dims = std::vector<std::int64_t>;

// A contiguous f32 [2, 3, 4] tensor holding 0, 1, ..., 23.
Tensor iota_234() {
  Tensor tensor = Tensor::zeros(DType::f32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) tensor.data_as<float>()[i] = static_cast<float>(i);
  return tensor;
}

TEST(DLPackTest, ExportsAViewThatOutlivesTheTensor) {
  std::weak_ptr<Buffer> weak;
  const std::byte* base = nullptr;
  DLManagedTensor* managed = nullptr;
  {
    const Tensor tensor = iota_234();
    weak = tensor.buffer();
    base = tensor.buffer()->data();
    const Tensor view = tensor.permute({2, 0, 1}).slice(2, 1, 2);  // [4, 2, 1], offset 1 row
    managed = view.to_dlpack();
  }
  ASSERT_NE(managed, nullptr);
  EXPECT_FALSE(weak.expired());  // the export holds the buffer
  const DLTensor& dl = managed->dl_tensor;
  EXPECT_EQ(dl.data, base);
  EXPECT_EQ(dl.byte_offset, 16u);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  ASSERT_EQ(dl.ndim, 3);
  EXPECT_EQ(Dims(dl.shape, dl.shape + 3), (Dims{4, 2, 1}));
  EXPECT_EQ(Dims(dl.strides, dl.strides + 3), (Dims{1, 12, 4}));
  // Element [k, i, 0] is original [i, 1, k] = 12 i + 4 + k.
  const auto* floats =
      reinterpret_cast<const float*>(static_cast<const std::byte*>(dl.data) + dl.byte_offset);
  for (std::int64_t k = 0; k < 4; ++k) {
    for (std::int64_t i = 0; i < 2; ++i) {
      EXPECT_EQ(floats[k * dl.strides[0] + i * dl.strides[1]], static_cast<float>(12 * i + 4 + k));
    }
  }
  managed->deleter(managed);
  EXPECT_TRUE(weak.expired());
}

TEST(DLPackTest, MapsEveryDType) {
  struct Expected {
    DType dtype;
    std::uint8_t code;
    std::uint8_t bits;
  };
  // fp8 has no DLPack 0.6 code: its bytes travel as uint8.
  for (const Expected& expected :
       {Expected{DType::f32, kDLFloat, 32}, Expected{DType::f16, kDLFloat, 16},
        Expected{DType::bf16, kDLBfloat, 16}, Expected{DType::fp8_e4m3, kDLUInt, 8},
        Expected{DType::int8, kDLInt, 8}, Expected{DType::int32, kDLInt, 32},
        Expected{DType::int64, kDLInt, 64}}) {
    DLManagedTensor* managed = Tensor::zeros(expected.dtype, {3}).to_dlpack();
    EXPECT_EQ(managed->dl_tensor.dtype.code, expected.code) << dtype_name(expected.dtype);
    EXPECT_EQ(managed->dl_tensor.dtype.bits, expected.bits) << dtype_name(expected.dtype);
    EXPECT_EQ(managed->dl_tensor.dtype.lanes, 1) << dtype_name(expected.dtype);
    managed->deleter(managed);
  }
}

TEST(DLPackTest, ExportsZeroDimensionalViews) {
  const Tensor scalar = iota_234().select(0, 1).select(0, 2).select(0, 3);
  DLManagedTensor* managed = scalar.to_dlpack();
  EXPECT_EQ(managed->dl_tensor.ndim, 0);
  EXPECT_EQ(managed->dl_tensor.byte_offset, 92u);
  float value = 0;
  std::memcpy(&value, static_cast<const std::byte*>(managed->dl_tensor.data) + 92, sizeof value);
  EXPECT_EQ(value, 23.0f);
  managed->deleter(managed);
}

}  // namespace
}  // namespace attnrt
