// GPU set-up is done on the device when it returns (src/platform/gpu/device_bytes_now.h). With
// the legacy default stream held busy by a long kernel, memory zeroed by ZeroDeviceNow, filled by
// CopyToDeviceNow or allocated by AllocateOpBuffer reads back right at once on a non-blocking
// stream, and bytes a caller writes right after AllocateOpBuffer survive the legacy stream
// draining. With cudaMemset / cudaMemcpy there, the fill would run after the held kernel: the
// read would see the old bytes, or the zeroing would land on the caller's (docs/perf-history.md,
// fifth round).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_delay.h"
#include "gpu/gpu_harness.h"
#include "gpu/gpu_runtime.h"
#include "platform/gpu/device_bytes_now.h"
#include "platform/runtime.h"

namespace xccl_test {
namespace {

constexpr uint64_t kLegacyBusyNs = 200'000'000;  // far longer than any of the calls checked
constexpr size_t kBytes = size_t{1} << 20;

class GpuSetUp : public ::testing::Test {
 protected:
  void SetUp() override {
    int gpus = 0;
    if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
      GTEST_SKIP() << "no GPU visible: device set-up needs one";
    ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream_), gpu::kSuccess);
    // Loads the delay kernel before the legacy stream is held.
    ASSERT_EQ(gpu::LaunchDelay(stream_, 0), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);
    std::mt19937 rng(std::random_device{}());
    random_.resize(kBytes);
    for (unsigned char& byte : random_) byte = static_cast<unsigned char>(rng());
    read_.resize(kBytes);
  }
  void TearDown() override {
    if (stream_ == nullptr) return;
    EXPECT_EQ(gpu::StreamSynchronize(gpu::LegacyStream()), gpu::kSuccess);
    EXPECT_EQ(gpu::StreamDestroy(stream_), gpu::kSuccess);
  }

  void HoldLegacyStream() {
    ASSERT_EQ(gpu::LaunchDelay(gpu::LegacyStream(), kLegacyBusyNs), gpu::kSuccess);
  }
  // Writes `host` to `device` on the non-blocking stream and waits for it.
  void Write(void* device, const HostBytes& host) {
    ASSERT_EQ(gpu::MemcpyAsync(device, host.data(), kBytes, stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);
  }
  // "" if `device` holds `want` (zeros where want is null) when read now on the non-blocking
  // stream, else the first difference.
  std::string Differs(const void* device, const HostBytes* want) {
    if (gpu::MemcpyAsync(read_.data(), device, kBytes, stream_) != gpu::kSuccess ||
        gpu::StreamSynchronize(stream_) != gpu::kSuccess)
      return "the read back failed";
    for (size_t i = 0; i < kBytes; ++i) {
      const unsigned char expected = want == nullptr ? 0 : (*want)[i];
      if (read_[i] != expected)
        return "byte " + std::to_string(i) + " is " + std::to_string(read_[i]) + ", not " +
               std::to_string(expected);
    }
    return "";
  }

  gpu::StreamHandle stream_ = nullptr;
  HostBytes random_, read_;
};

TEST_F(GpuSetUp, ZeroDeviceNowIsDoneWhenItReturns) {
  void* device = nullptr;
  ASSERT_EQ(gpu::Malloc(&device, kBytes), gpu::kSuccess);
  Write(device, random_);
  HoldLegacyStream();
  ASSERT_EQ(xccl::ZeroDeviceNow(device, kBytes), xcclSuccess) << xcclGetLastError(nullptr);
  EXPECT_EQ(Differs(device, nullptr), "");
  EXPECT_EQ(gpu::Free(device), gpu::kSuccess);
}

TEST_F(GpuSetUp, CopyToDeviceNowIsDoneWhenItReturns) {
  void* device = nullptr;
  ASSERT_EQ(gpu::Malloc(&device, kBytes), gpu::kSuccess);
  ASSERT_EQ(gpu::MemsetAsync(device, 0, kBytes, stream_), gpu::kSuccess);
  ASSERT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);
  // From pageable memory, where cudaMemcpy may return before its DMA is done.
  const std::vector<unsigned char> pageable(random_.begin(), random_.end());
  HoldLegacyStream();
  ASSERT_EQ(xccl::CopyToDeviceNow(device, pageable.data(), kBytes), xcclSuccess)
      << xcclGetLastError(nullptr);
  EXPECT_EQ(Differs(device, &random_), "");
  EXPECT_EQ(gpu::Free(device), gpu::kSuccess);
}

TEST_F(GpuSetUp, AnOpBufferIsZeroedBeforeAllocateReturnsAndNotAfter) {
  HoldLegacyStream();
  void* device = nullptr;
  ASSERT_EQ(xccl::AllocateOpBuffer(0, kBytes, &device), xcclSuccess) << xcclGetLastError(nullptr);
  EXPECT_EQ(Differs(device, nullptr), "") << "not zero when AllocateOpBuffer returned";
  // The caller's bytes, written at once (as into ag_gemm's local rows), outlast the held
  // stream: nothing of the allocation is still queued behind it.
  Write(device, random_);
  ASSERT_EQ(gpu::StreamSynchronize(gpu::LegacyStream()), gpu::kSuccess);
  EXPECT_EQ(Differs(device, &random_), "") << "changed after the legacy stream drained";
  xccl::FreeOpBuffer(0, device);
}

}  // namespace
}  // namespace xccl_test
