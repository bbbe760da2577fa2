#include "attnrt/core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

using Dims = std::vector<std::int64_t>;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A contiguous f32 [2, 3, 4] tensor holding 0, 1, ..., 23.
Tensor iota_234() {
  Tensor tensor = Tensor::zeros(DType::f32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) tensor.data_as<float>()[i] = static_cast<float>(i);
  return tensor;
}

TEST(TensorTest, ZerosIsContiguousAndZeroFilled) {
  const Tensor tensor = Tensor::zeros(DType::f32, {2, 3, 4});
  EXPECT_TRUE(tensor.defined());
  EXPECT_EQ(tensor.dtype(), DType::f32);
  EXPECT_EQ(tensor.device(), Device::cpu());
  EXPECT_EQ(tensor.shape(), (Dims{2, 3, 4}));
  EXPECT_EQ(tensor.strides(), (Dims{12, 4, 1}));
  EXPECT_EQ(tensor.dim(), 3);
  EXPECT_EQ(tensor.numel(), 24);
  EXPECT_EQ(tensor.byte_offset(), 0);
  EXPECT_EQ(tensor.buffer()->size(), 96u);
  EXPECT_EQ(tensor.data(), tensor.buffer()->data());
  EXPECT_TRUE(tensor.is_contiguous());
  EXPECT_EQ(tensor.first_byte(), 0);
  EXPECT_EQ(tensor.end_byte(), 96);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(tensor.data_as<float>()[i], 0.0f);
  EXPECT_EQ(tensor.describe(), "float32[2, 3, 4] strides [12, 4, 1] offset 0");
}

TEST(TensorTest, ZerosWithEmptyAxisOrNoAxes) {
  const Tensor empty = Tensor::zeros(DType::bf16, {0, 3});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.strides(), (Dims{3, 1}));
  EXPECT_EQ(empty.buffer()->size(), 0u);
  EXPECT_EQ(empty.first_byte(), empty.end_byte());
  EXPECT_TRUE(empty.is_contiguous());

  const Tensor scalar = Tensor::zeros(DType::int64, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.buffer()->size(), 8u);
  scalar.set({}, 9.0f);
  EXPECT_EQ(scalar.at<std::int64_t>({}), 9);
  EXPECT_EQ(scalar.end_byte(), 8);

  EXPECT_TRUE(contains(error_of([] {
                         Tensor::zeros(DType::f32, {2, -1});
                       }),
                       "axis 1 has negative size -1"));
  EXPECT_TRUE(contains(error_of([] { Tensor::zeros(DType::f32, {4}, Device::cuda(0)); }),
                       "not available in this build"));
}

TEST(TensorTest, DefaultTensorIsUndefined) {
  const Tensor tensor;
  EXPECT_FALSE(tensor.defined());
  EXPECT_EQ(tensor.data(), nullptr);
  EXPECT_EQ(tensor.describe(), "undefined tensor");
  EXPECT_TRUE(contains(error_of([&] { tensor.view({1}); }), "undefined"));
  EXPECT_TRUE(contains(error_of([&] { tensor.get({}); }), "undefined"));
  EXPECT_TRUE(contains(error_of([&] { tensor.to_dlpack(); }), "undefined"));
}

TEST(TensorTest, ConstructorAcceptsViewsInsideTheBuffer) {
  const auto buffer = Buffer::allocate(96);
  EXPECT_NO_THROW(Tensor(buffer, DType::f32, {2, 3, 4}, {12, 4, 1}));
  const Tensor tail(buffer, DType::f32, {4}, {1}, 80);  // ends exactly at byte 96
  EXPECT_EQ(tail.first_byte(), 80);
  EXPECT_EQ(tail.end_byte(), 96);
  const Tensor broadcast(buffer, DType::f32, {1000, 2}, {0, 1});  // stride 0 repeats elements
  EXPECT_EQ(broadcast.end_byte(), 8);
  const Tensor empty(buffer, DType::f32, {0, 5}, {5, 1}, 96);  // empty view at the very end
  EXPECT_EQ(empty.first_byte(), 96);
  EXPECT_EQ(empty.end_byte(), 96);
  EXPECT_EQ(buffer.use_count(), 4);  // every view shares ownership
}

TEST(TensorTest, ConstructorRejectsViewsOutsideTheBuffer) {
  const auto buffer = Buffer::allocate(96);
  const std::string past_end = error_of([&] {
    Tensor(buffer, DType::f32, {2, 3, 4}, {12, 4, 1}, 4);
  });
  EXPECT_TRUE(contains(past_end, "addresses bytes up to 100")) << past_end;
  EXPECT_TRUE(contains(past_end, "96 bytes")) << past_end;
  EXPECT_THROW(Tensor(buffer, DType::f32, {4}, {1}, 84), Error);
  EXPECT_THROW(Tensor(buffer, DType::f32, {2, 3, 4}, {12, 4, 2}), Error);
  EXPECT_THROW(Tensor(buffer, DType::f32, {0, 5}, {5, 1}, 100), Error);
  EXPECT_THROW(Tensor(buffer, DType::f32, {2, 2}, {INT64_MAX / 2, 1}), Error);  // overflow

  EXPECT_TRUE(
      contains(error_of([&] { Tensor(buffer, DType::f32, {4}, {-1}, 12); }), "negative stride -1"));
  EXPECT_TRUE(
      contains(error_of([&] { Tensor(buffer, DType::f32, {-2}, {1}); }), "negative size -2"));
  EXPECT_TRUE(contains(error_of([&] {
                         Tensor(buffer, DType::f32, {2, 2}, {1});
                       }),
                       "has 2 axes but strides [1] have 1"));
  EXPECT_TRUE(contains(error_of([&] { Tensor(buffer, DType::f32, {2}, {1}, -4); }),
                       "byte offset -4 is negative"));
  EXPECT_TRUE(
      contains(error_of([&] { Tensor(buffer, DType::f32, {2}, {1}, 2); }), "not a multiple"));
  EXPECT_TRUE(contains(error_of([] { Tensor(nullptr, DType::f32, {1}, {1}); }), "null"));
}

TEST(TensorTest, SizeAndStrideAcceptNegativeAxes) {
  const Tensor tensor = Tensor::zeros(DType::f32, {2, 3, 4});
  EXPECT_EQ(tensor.size(0), 2);
  EXPECT_EQ(tensor.size(-1), 4);
  EXPECT_EQ(tensor.stride(1), 4);
  EXPECT_EQ(tensor.stride(-3), 12);
  EXPECT_TRUE(contains(error_of([&] { tensor.size(3); }), "axis 3 is out of range"));
  EXPECT_THROW(tensor.stride(-4), Error);
}

TEST(TensorTest, ViewReshapesContiguousTensorsWithoutCopying) {
  const Tensor tensor = iota_234();
  const Tensor matrix = tensor.view({6, 4});
  EXPECT_EQ(matrix.shape(), (Dims{6, 4}));
  EXPECT_EQ(matrix.strides(), (Dims{4, 1}));
  EXPECT_EQ(matrix.buffer(), tensor.buffer());
  EXPECT_EQ(matrix.get({5, 3}), 23.0f);
  matrix.set({1, 0}, -1.0f);
  EXPECT_EQ(tensor.get({0, 1, 0}), -1.0f);
  EXPECT_EQ(tensor.view({-1, 2}).shape(), (Dims{12, 2}));
  EXPECT_EQ(tensor.view({24}).strides(), (Dims{1}));
  // A slice along the outermost axis is still contiguous; the view keeps its offset.
  const Tensor second = tensor.slice(0, 1, 2).view({12});
  EXPECT_EQ(second.byte_offset(), 48);
  EXPECT_EQ(second.get({0}), 12.0f);
}

TEST(TensorTest, ViewRejectsWrongCountsAndNonContiguousTensors) {
  const Tensor tensor = iota_234();
  const std::string wrong = error_of([&] { tensor.view({5, 5}); });
  EXPECT_TRUE(contains(wrong, "view([5, 5]) has 25 elements")) << wrong;
  EXPECT_TRUE(contains(wrong, "has 24")) << wrong;
  EXPECT_THROW(tensor.view({-1, 5}), Error);
  EXPECT_THROW(tensor.view({-1, -1}), Error);
  EXPECT_THROW(tensor.view({-2, 12}), Error);
  const std::string permuted = error_of([&] { tensor.permute({1, 0, 2}).view({24}); });
  EXPECT_TRUE(contains(permuted, "contiguous")) << permuted;
}

TEST(TensorTest, PermuteReordersAxes) {
  const Tensor tensor = iota_234();
  const Tensor permuted = tensor.permute({2, 0, 1});
  EXPECT_EQ(permuted.shape(), (Dims{4, 2, 3}));
  EXPECT_EQ(permuted.strides(), (Dims{1, 12, 4}));
  EXPECT_FALSE(permuted.is_contiguous());
  EXPECT_EQ(permuted.get({3, 1, 2}), tensor.get({1, 2, 3}));
  EXPECT_EQ(permuted.get({3, 1, 2}), 23.0f);
  EXPECT_EQ(permuted.end_byte(), 96);
  EXPECT_EQ(tensor.permute({-1, 0, 1}).shape(), (Dims{4, 2, 3}));
  const std::vector<int> identity = {0, 1, 2};
  EXPECT_TRUE(tensor.permute(identity).is_contiguous());

  EXPECT_TRUE(contains(error_of([&] { tensor.permute({0, 0, 1}); }), "appears twice"));
  EXPECT_TRUE(contains(error_of([&] { tensor.permute({0, 1}); }), "2 axes"));
  EXPECT_TRUE(contains(error_of([&] { tensor.permute({0, 1, 3}); }), "axis 3"));
}

TEST(TensorTest, SelectDropsAnAxis) {
  const Tensor tensor = iota_234();
  const Tensor row = tensor.select(1, 2);
  EXPECT_EQ(row.shape(), (Dims{2, 4}));
  EXPECT_EQ(row.strides(), (Dims{12, 1}));
  EXPECT_EQ(row.byte_offset(), 32);
  EXPECT_EQ(row.get({1, 3}), 23.0f);
  const Tensor column = tensor.select(-1, 3);
  EXPECT_EQ(column.shape(), (Dims{2, 3}));
  EXPECT_EQ(column.strides(), (Dims{12, 4}));
  EXPECT_EQ(column.byte_offset(), 12);
  EXPECT_EQ(column.get({1, 0}), 15.0f);
  const Tensor scalar = tensor.select(0, 1).select(0, 1).select(0, 1);
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.get({}), 17.0f);

  const std::string message = error_of([&] { tensor.select(1, 3); });
  EXPECT_TRUE(contains(message, "index 3 is out of range for axis 1 of size 3")) << message;
  EXPECT_THROW(tensor.select(1, -1), Error);
  EXPECT_THROW(tensor.select(3, 0), Error);
}

TEST(TensorTest, SliceRestrictsAnAxis) {
  const Tensor tensor = iota_234();
  const Tensor middle = tensor.slice(2, 1, 3);
  EXPECT_EQ(middle.shape(), (Dims{2, 3, 2}));
  EXPECT_EQ(middle.strides(), (Dims{12, 4, 1}));
  EXPECT_EQ(middle.byte_offset(), 4);
  EXPECT_FALSE(middle.is_contiguous());
  EXPECT_EQ(middle.get({1, 2, 1}), 22.0f);
  // Last element: (1*12 + 2*4 + 1) floats past element 1, so bytes [4, 4 + 22*4).
  EXPECT_EQ(middle.first_byte(), 4);
  EXPECT_EQ(middle.end_byte(), 92);
  EXPECT_EQ(middle.describe(), "float32[2, 3, 2] strides [12, 4, 1] offset 4");

  const Tensor empty = tensor.slice(0, 1, 1);
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.is_contiguous());
  EXPECT_EQ(empty.first_byte(), 48);
  EXPECT_EQ(empty.end_byte(), 48);
  EXPECT_EQ(tensor.slice(-2, 0, 3).shape(), (Dims{2, 3, 4}));

  const std::string message = error_of([&] { tensor.slice(1, 2, 4); });
  EXPECT_TRUE(contains(message, "[2, 4) is not within axis 1 of size 3")) << message;
  EXPECT_THROW(tensor.slice(1, 2, 1), Error);
  EXPECT_THROW(tensor.slice(1, -1, 2), Error);
}

TEST(TensorTest, SizeOneAxesDoNotBreakContiguity) {
  const auto buffer = Buffer::allocate(64);
  EXPECT_TRUE(Tensor(buffer, DType::f32, {1, 4}, {100, 1}).is_contiguous());
  EXPECT_TRUE(Tensor(buffer, DType::f32, {4, 1}, {1, 7}).is_contiguous());
  EXPECT_FALSE(Tensor(buffer, DType::f32, {2, 4}, {5, 1}).is_contiguous());
  EXPECT_FALSE(Tensor(buffer, DType::f32, {4}, {2}).is_contiguous());
}

// The padded-page example from SEMANTICS.md: 3 blocks of 384 bytes, 1 head slot, 16 states of
// 16 content bytes (K+V of head size 2 in fp32).
TEST(TensorTest, ReinterpretBytesAsFloat) {
  const auto buffer = Buffer::allocate(3 * 384);
  const Tensor bytes(buffer, DType::int8, {3, 1, 16, 16}, {384, 256, 16, 1});
  const Tensor floats = bytes.reinterpret(DType::f32);
  EXPECT_EQ(floats.shape(), (Dims{3, 1, 16, 4}));
  EXPECT_EQ(floats.strides(), (Dims{96, 64, 4, 1}));
  EXPECT_EQ(floats.byte_offset(), 0);
  floats.at<float>({1, 0, 2, 3}) = 2.5f;
  float read = 0;
  std::memcpy(&read, buffer->data() + 384 + 2 * 16 + 3 * 4, sizeof(float));
  EXPECT_EQ(read, 2.5f);

  const Tensor layer = bytes.select(0, 2).reinterpret(DType::bf16);
  EXPECT_EQ(layer.shape(), (Dims{1, 16, 8}));
  EXPECT_EQ(layer.strides(), (Dims{128, 8, 1}));
  EXPECT_EQ(layer.byte_offset(), 768);
}

TEST(TensorTest, ReinterpretToSmallerAndSameSizeTypes) {
  const Tensor floats = Tensor::zeros(DType::f32, {2, 4});
  const Tensor bytes = floats.reinterpret(DType::int8);
  EXPECT_EQ(bytes.shape(), (Dims{2, 16}));
  EXPECT_EQ(bytes.strides(), (Dims{16, 1}));
  const Tensor halves = Tensor::zeros(DType::bf16, {2, 6});
  EXPECT_EQ(halves.reinterpret(DType::f32).shape(), (Dims{2, 3}));
  EXPECT_EQ(halves.reinterpret(DType::f32).strides(), (Dims{3, 1}));
  // Same element size: any strides, nothing rescaled.
  const Tensor transposed = halves.permute({1, 0}).reinterpret(DType::f16);
  EXPECT_EQ(transposed.dtype(), DType::f16);
  EXPECT_EQ(transposed.strides(), (Dims{1, 6}));
  // A size-1 last axis counts as contiguous.
  const Tensor column = floats.slice(1, 0, 1).reinterpret(DType::f16);
  EXPECT_EQ(column.shape(), (Dims{2, 2}));
  EXPECT_EQ(column.strides(), (Dims{8, 1}));
}

TEST(TensorTest, ReinterpretRejectsBytesThatDoNotDivide) {
  const auto buffer = Buffer::allocate(64);
  const Tensor six(buffer, DType::int8, {2, 6}, {6, 1});
  EXPECT_TRUE(contains(error_of([&] { six.reinterpret(DType::f32); }),
                       "last axis has 6 bytes, not a multiple of 4"));
  const Tensor strided(buffer, DType::int8, {2, 4}, {6, 1});
  EXPECT_TRUE(contains(error_of([&] { strided.reinterpret(DType::f32); }),
                       "axis 0 stride of 6 bytes is not a multiple of 4"));
  const Tensor shifted(buffer, DType::int8, {2, 4}, {8, 1}, 2);
  EXPECT_TRUE(contains(error_of([&] { shifted.reinterpret(DType::f32); }),
                       "byte offset 2 is not a multiple of 4"));
  const Tensor transposed = Tensor::zeros(DType::f32, {2, 4}).permute({1, 0});
  EXPECT_TRUE(contains(error_of([&] { transposed.reinterpret(DType::int8); }),
                       "last axis is not contiguous"));
  const Tensor scalar(buffer, DType::int32, {}, {});
  EXPECT_THROW(scalar.reinterpret(DType::int8), Error);
  EXPECT_EQ(scalar.reinterpret(DType::f32).dtype(), DType::f32);
}

TEST(TensorTest, ElementAccessConvertsThroughTheDType) {
  const Tensor floats = Tensor::zeros(DType::f32, {2, 3});
  floats.set({1, 2}, 5.5f);
  EXPECT_EQ(floats.at<float>({1, 2}), 5.5f);
  EXPECT_EQ(floats.data_as<float>()[5], 5.5f);
  floats.at<float>({0, 1}) = -2.0f;
  EXPECT_EQ(floats.get({0, 1}), -2.0f);

  const Tensor halves = Tensor::zeros(DType::f16, {2});
  halves.set({1}, 1.0f);
  EXPECT_EQ(halves.at<std::uint16_t>({1}), 0x3C00);
  const Tensor fp8 = Tensor::zeros(DType::fp8_e4m3, {1});
  fp8.set({0}, 1000.0f);
  EXPECT_EQ(fp8.at<std::uint8_t>({0}), 0x7E);
  EXPECT_EQ(fp8.get({0}), 448.0f);
  const Tensor ints = Tensor::zeros(DType::int8, {1});
  ints.set({0}, 3.6f);
  EXPECT_EQ(ints.at<std::int8_t>({0}), 4);
}

TEST(TensorTest, ElementAccessIsBoundsChecked) {
  const Tensor tensor = Tensor::zeros(DType::f32, {2, 3});
  const std::string out_of_range = error_of([&] { tensor.get({2, 0}); });
  EXPECT_TRUE(contains(out_of_range, "index 2 is out of range for axis 0 of size 2"))
      << out_of_range;
  EXPECT_TRUE(contains(error_of([&] {
                         tensor.set({0, 3}, 1.0f);
                       }),
                       "index 3 is out of range for axis 1 of size 3"));
  EXPECT_TRUE(contains(error_of([&] {
                         tensor.get({0, -1});
                       }),
                       "index -1 is out of range for axis 1"));
  EXPECT_TRUE(contains(error_of([&] { tensor.get({1}); }), "has 1 coordinates"));
  const std::string wrong_type = error_of([&] { tensor.at<double>({0, 0}); });
  EXPECT_TRUE(contains(wrong_type, "8-byte T")) << wrong_type;
  EXPECT_TRUE(contains(wrong_type, "4-byte elements")) << wrong_type;
  EXPECT_THROW(tensor.at<std::int16_t>({0, 0}), Error);
}

TEST(TensorTest, ViewsKeepTheBufferAlive) {
  Tensor view;
  std::weak_ptr<Buffer> weak;
  {
    const Tensor tensor = iota_234();
    weak = tensor.buffer();
    view = tensor.select(0, 1);
  }
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(view.get({2, 3}), 23.0f);
  view = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(TensorTest, DescribeNamesDTypeShapeStridesAndOffset) {
  const Tensor tensor = Tensor::zeros(DType::bf16, {4, 2, 16, 64});
  EXPECT_EQ(tensor.describe(), "bfloat16[4, 2, 16, 64] strides [2048, 1024, 64, 1] offset 0");
  EXPECT_EQ(tensor.select(0, 1).permute({2, 0, 1}).describe(),
            "bfloat16[64, 2, 16] strides [1, 1024, 64] offset 4096");
}

}  // namespace
}  // namespace attnrt
