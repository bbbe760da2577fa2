#include "attnrt/core/buffer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "attnrt/core/device.h"
#include "attnrt/core/error.h"
#include "error_of.h"

// The allocation-failure test asks for more memory than exists; under AddressSanitizer that must
// come back as nullptr (as it does from glibc) rather than abort the process.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}

namespace attnrt {
namespace {

using testing::error_of;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool all_zero(const Buffer& buffer) {
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    if (buffer.data()[i] != std::byte{0}) return false;
  }
  return true;
}

TEST(DeviceTest, ParsesCpuAndCuda) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:0"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3").index, 3);
  EXPECT_EQ(Device::parse("cuda:3").kind, Device::Kind::cuda);
  EXPECT_EQ(Device::parse("cuda:12"), Device::cuda(12));
  EXPECT_TRUE(Device::parse("cpu").is_cpu());
  EXPECT_FALSE(Device::parse("cuda").is_cpu());
}

TEST(DeviceTest, StrRoundTrips) {
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda(0).str(), "cuda:0");
  EXPECT_EQ(Device::cuda(7).str(), "cuda:7");
  EXPECT_EQ(Device::parse(Device::cuda(5).str()), Device::cuda(5));
}

TEST(DeviceTest, RejectsEverythingElseNamingTheText) {
  for (const char* bad : {"", "gpu", "CPU", "cpu:0", " cpu", "cuda:", "cuda:-1", "cuda:+1",
                          "cuda:1x", "cuda:x", "cuda:99999999999", "cuda0", "cuda: 1"}) {
    const std::string message = error_of([&] { Device::parse(bad); });
    // Built with fmt: GCC 12 at -O3 flags `"\"" + std::string(bad)` with a false -Wrestrict.
    EXPECT_TRUE(contains(message, fmt::format("\"{}\"", bad))) << bad << ": " << message;
    EXPECT_TRUE(contains(message, "cuda:N")) << message;
  }
}

TEST(BufferTest, AllocatesAlignedZeroedHostMemory) {
  const auto buffer = Buffer::allocate(100);
  ASSERT_NE(buffer->data(), nullptr);
  EXPECT_EQ(buffer->size(), 100u);
  EXPECT_EQ(buffer->device(), Device::cpu());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % Buffer::kAlignment, 0u);
  EXPECT_TRUE(all_zero(*buffer));
  buffer->data()[99] = std::byte{7};  // the whole requested size is writable
  EXPECT_EQ(buffer->data()[99], std::byte{7});
}

TEST(BufferTest, BuffersOfAHugePageOrMoreStartOnAHugePageBoundary) {
  for (const std::size_t size : {Buffer::kHugePageBytes, Buffer::kHugePageBytes * 3 + 5}) {
    const auto buffer = Buffer::allocate(size);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % Buffer::kHugePageBytes, 0u);
    EXPECT_EQ(buffer->size(), size);
    EXPECT_TRUE(all_zero(*buffer));
  }
}

TEST(BufferTest, LargeBufferIsZeroed) {
  const auto buffer = Buffer::allocate((8u << 20) + 3);
  EXPECT_EQ(buffer->size(), (8u << 20) + 3);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % 64, 0u);
  EXPECT_TRUE(all_zero(*buffer));
}

TEST(BufferTest, EmptyBufferHasAValidAlignedPointer) {
  const auto buffer = Buffer::allocate(0);
  EXPECT_EQ(buffer->size(), 0u);
  ASSERT_NE(buffer->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % Buffer::kAlignment, 0u);
}

TEST(BufferTest, MoveTransfersOwnership) {
  auto source = Buffer::allocate(64);
  std::byte* const data = source->data();
  data[5] = std::byte{42};

  Buffer moved(std::move(*source));
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(moved.size(), 64u);
  EXPECT_EQ(source->data(), nullptr);
  EXPECT_EQ(source->size(), 0u);

  auto target = Buffer::allocate(16);
  *target = std::move(moved);  // frees target's old memory (ASan would report a leak otherwise)
  EXPECT_EQ(target->data(), data);
  EXPECT_EQ(target->size(), 64u);
  EXPECT_EQ(target->data()[5], std::byte{42});
  EXPECT_EQ(moved.data(), nullptr);

  Buffer& alias = *target;
  *target = std::move(alias);  // self-move keeps the memory
  EXPECT_EQ(target->data(), data);
}

TEST(BufferTest, CudaIsNotAvailableInThisBuild) {
  const std::string message = error_of([] { Buffer::allocate(16, Device::cuda(1)); });
  EXPECT_TRUE(contains(message, "CUDA device cuda:1")) << message;
  EXPECT_TRUE(contains(message, "not available in this build")) << message;
}

TEST(BufferTest, FailedAllocationThrowsWithTheSize) {
  const std::string message = error_of([] { Buffer::allocate(std::size_t{1} << 50); });
  EXPECT_TRUE(contains(message, "out of host memory")) << message;
  EXPECT_TRUE(contains(message, "1048576.00 GiB")) << message;
  EXPECT_TRUE(contains(message, "1073741824.0 MiB")) << message;
}

TEST(BufferTest, SizesBeyondInt64AreRejectedUpFront) {
  const std::string message =
      error_of([] { Buffer::allocate(std::numeric_limits<std::size_t>::max()); });
  EXPECT_TRUE(contains(message, "18446744073709551615 bytes")) << message;
  EXPECT_TRUE(contains(message, "largest addressable")) << message;
}

}  // namespace
}  // namespace attnrt
