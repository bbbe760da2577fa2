// Tensor::from_dlpack and Buffer::external: a producer's tensor viewed without a copy, its deleter
// run exactly once (when the last view dies, or when the import refuses it).

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/core/tensor.h"
#include "error_of.h"

namespace attnrt {
namespace {

using Dims = std::vector<std::int64_t>;
using testing::error_of;

// A producer-owned DLManagedTensor over `values`, counting deleter calls.
struct Producer {
  std::vector<float> values = std::vector<float>(24);
  Dims shape{2, 3, 4};
  Dims strides{12, 4, 1};
  int deletions = 0;
  DLManagedTensor managed{};

  DLManagedTensor* export_tensor() {
    for (int i = 0; i < 24; ++i) values[i] = static_cast<float>(i);
    DLTensor& t = managed.dl_tensor;
    t.data = values.data();
    t.device = {kDLCPU, 0};
    t.ndim = 3;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape.data();
    t.strides = strides.data();
    t.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Producer*>(self->manager_ctx)->deletions;
    };
    return &managed;
  }
};

TEST(DLPackImportTest, ViewsTheProducersMemoryUntilTheLastViewDies) {
  Producer producer;
  DLManagedTensor* managed = producer.export_tensor();
  {
    const Tensor tensor = Tensor::from_dlpack(managed);
    EXPECT_EQ(tensor.dtype(), DType::f32);
    EXPECT_EQ(tensor.shape(), (Dims{2, 3, 4}));
    EXPECT_EQ(tensor.strides(), (Dims{12, 4, 1}));
    EXPECT_EQ(tensor.data(), reinterpret_cast<std::byte*>(producer.values.data()));
    EXPECT_FALSE(tensor.buffer()->owns_memory());
    const Tensor row = tensor.select(0, 1).select(0, 2);  // elements 20..23
    tensor.set({1, 2, 0}, 7.f);                           // writes reach the producer
    EXPECT_EQ(producer.values[20], 7.f);
    EXPECT_EQ(row.get({3}), 23.f);
    {
      const Tensor keep = row;
      (void)keep;
    }
    EXPECT_EQ(producer.deletions, 0);
  }
  EXPECT_EQ(producer.deletions, 1);
}

TEST(DLPackImportTest, MissingStridesMeanRowMajorAndByteOffsetIsApplied) {
  Producer producer;
  DLManagedTensor* managed = producer.export_tensor();
  managed->dl_tensor.strides = nullptr;
  managed->dl_tensor.byte_offset = 4 * sizeof(float);
  producer.shape = {5, 4};
  managed->dl_tensor.ndim = 2;
  const Tensor tensor = Tensor::from_dlpack(managed);
  EXPECT_EQ(tensor.strides(), (Dims{4, 1}));
  EXPECT_EQ(tensor.get({0, 0}), 4.f);
  EXPECT_EQ(tensor.get({4, 3}), 23.f);
  EXPECT_EQ(tensor.buffer()->size(), 20 * sizeof(float));
}

TEST(DLPackImportTest, RoundTripsAnExportedView) {
  const Tensor source = Tensor::zeros(DType::bf16, {4, 6});
  const Tensor view = source.slice(1, 2, 5);
  const Tensor back = Tensor::from_dlpack(view.to_dlpack());
  EXPECT_EQ(back.dtype(), DType::bf16);
  EXPECT_EQ(back.shape(), (Dims{4, 3}));
  EXPECT_EQ(back.strides(), (Dims{6, 1}));
  EXPECT_EQ(back.data(), view.data());
  const Tensor fp8 = Tensor::from_dlpack(Tensor::zeros(DType::fp8_e4m3, {3}).to_dlpack());
  EXPECT_EQ(fp8.dtype(), DType::fp8_e4m3);  // uint8 bytes import as fp8, as they were exported
}

TEST(DLPackImportTest, RefusesWhatItCannotViewAndStillReleasesTheTensor) {
  struct Case {
    const char* expected;
    void (*mutate)(DLTensor&);
  };
  const std::vector<Case> cases = {
      {"device type 2",
       [](DLTensor& t) {
         t.device = {kDLCUDA, 0};
       }},
      {"2 lanes", [](DLTensor& t) { t.dtype.lanes = 2; }},
      {"dtype complex64 (code 5)",
       [](DLTensor& t) {
         t.dtype = {kDLComplex, 64, 1};
       }},
      {"dtype int16 (code 0)",
       [](DLTensor& t) {
         t.dtype = {kDLInt, 16, 1};
       }},
      {"negative stride -4", [](DLTensor& t) { t.strides[1] = -4; }},
      {"negative size -3", [](DLTensor& t) { t.shape[0] = -3; }},
      {"without a shape", [](DLTensor& t) { t.shape = nullptr; }},
      {"no data", [](DLTensor& t) { t.data = nullptr; }},
      {"overflows int64", [](DLTensor& t) { t.strides[0] = std::int64_t{1} << 62; }},
  };
  for (const Case& c : cases) {
    Producer producer;
    DLManagedTensor* managed = producer.export_tensor();
    c.mutate(managed->dl_tensor);
    const std::string error = error_of([&] { (void)Tensor::from_dlpack(managed); });
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    EXPECT_NE(error.find("DLPack import"), std::string::npos) << error;
    EXPECT_EQ(producer.deletions, 1) << c.expected;
  }
  EXPECT_NE(error_of([] { (void)Tensor::from_dlpack(nullptr); }).find("null"), std::string::npos);
}

TEST(BufferTest, ExternalMemoryIsNeitherZeroedNorFreedButItsOwnerIsReleased) {
  auto storage = std::make_shared<std::vector<std::byte>>(64, std::byte{7});
  std::weak_ptr<std::vector<std::byte>> weak = storage;
  std::byte* data = storage->data();
  {
    const auto buffer = Buffer::external(data, 64, Device::cpu(), std::move(storage));
    EXPECT_EQ(buffer->data(), data);
    EXPECT_EQ(buffer->size(), 64u);
    EXPECT_EQ(buffer->data()[63], std::byte{7});
    EXPECT_FALSE(weak.expired());
  }
  EXPECT_TRUE(weak.expired());
  std::byte local[4] = {};
  EXPECT_FALSE(Buffer::external(local, 4, Device::cpu(), nullptr)->owns_memory());
  EXPECT_NE(error_of([] {
              (void)Buffer::external(nullptr, 8, Device::cpu(), nullptr);
            }).find("null pointer"),
            std::string::npos);
  EXPECT_TRUE(Buffer::allocate(8)->owns_memory());
}

}  // namespace
}  // namespace attnrt
