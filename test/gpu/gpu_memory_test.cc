// Device memory a communicator holds (docs/ARCHITECTURE.md, "The GPU platform", the window): a
// communicator of one rank has no peer to hear from, and one whose ranks are threads of one
// process reaches every peer's buffers in place, so neither carves inboxes, whatever
// XCCL_WINDOW_BYTES says; where calls go through the inboxes, they grow with the calls. Measured as
// the drop in the device's free memory, after a warm-up init has paid the runtime's own one-time
// costs (kernel modules, pools). Skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "gpu/gpu_runtime.h"
#include "mp/test_params.h"
#include "xccl.h"

namespace xccl_test {
namespace {

// The goal for any communicator after init; the default window is 512 MiB.
constexpr size_t kMostBytesAfterInit = size_t{64} << 20;

TEST(GpuMemory, AOneRankCommunicatorHoldsNoInboxes) {
  int gpus = 0;
  if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
    GTEST_SKIP() << "no GPU visible: device memory needs one";
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  const int device = 0;
  xcclComm_t warm = nullptr;
  ASSERT_EQ(xcclCommInitAll(&warm, 1, &device), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_EQ(xcclCommDestroy(warm), xcclSuccess);

  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(gpu::MemGetInfo(&free_before, &total), gpu::kSuccess);
  xcclComm_t comm = nullptr;
  ASSERT_EQ(xcclCommInitAll(&comm, 1, &device), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_EQ(gpu::MemGetInfo(&free_after, &total), gpu::kSuccess);
  const size_t held = free_before > free_after ? free_before - free_after : 0;
  EXPECT_LE(held, kMostBytesAfterInit)
      << "a one-rank communicator holds " << (held >> 20) << " MiB of device memory after init";
  ASSERT_EQ(xcclCommDestroy(comm), xcclSuccess);
}

size_t HeldPerRank(size_t before, size_t after, int ranks) {
  return before > after ? (before - after) / static_cast<size_t>(ranks) : 0;
}

struct HeldBytes {
  size_t after_init = 0;  // per rank
  size_t after_call = 0;
};

// Thread ranks sharing device 0: what each holds after init and after an all_gather of fresh
// random blocks, which every rank checks byte for byte (no inbox is missed on the way).
void MeasureThreadRanks(int world, HeldBytes* held) {
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  const std::vector<int> devices(world, 0);
  std::vector<xcclComm_t> comms(world, nullptr);
  ASSERT_EQ(xcclCommInitAll(comms.data(), world, devices.data()), xcclSuccess)
      << xcclGetLastError(nullptr);
  for (xcclComm_t c : comms) ASSERT_EQ(xcclCommDestroy(c), xcclSuccess);

  const size_t block = (size_t{8} << 20) + 4096 + 16;  // the pipelined kernel, several chunks
  std::mt19937_64 random(std::random_device{}());
  std::vector<std::vector<uint8_t>> sent(world, std::vector<uint8_t>(block));
  std::vector<void*> send(world, nullptr), recv(world, nullptr);
  std::vector<gpu::StreamHandle> streams(world, nullptr);
  for (int r = 0; r < world; ++r) {
    for (uint8_t& b : sent[r]) b = static_cast<uint8_t>(random());
    ASSERT_EQ(gpu::Malloc(&send[r], block), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&recv[r], block * world), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamCreateNonBlocking(&streams[r]), gpu::kSuccess);
    ASSERT_EQ(gpu::CopyPageableToDevice(send[r], sent[r].data(), block), gpu::kSuccess);
    ASSERT_EQ(gpu::MemsetAsync(recv[r], 0xee, block * world, streams[r]), gpu::kSuccess);
  }
  ASSERT_EQ(gpu::DeviceSynchronize(), gpu::kSuccess);

  size_t free_before = 0, free_after_init = 0, free_after_call = 0, total = 0;
  ASSERT_EQ(gpu::MemGetInfo(&free_before, &total), gpu::kSuccess);
  ASSERT_EQ(xcclCommInitAll(comms.data(), world, devices.data()), xcclSuccess)
      << xcclGetLastError(nullptr);
  ASSERT_EQ(gpu::MemGetInfo(&free_after_init, &total), gpu::kSuccess);
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      if (gpu::SetDevice(0) != gpu::kSuccess)
        errors[r] = "cudaSetDevice failed";
      else if (xcclAllGather(send[r], recv[r], block, xcclUint8, comms[r], streams[r]) !=
               xcclSuccess)
        errors[r] = xcclGetLastError(comms[r]);
      else if (gpu::StreamSynchronize(streams[r]) != gpu::kSuccess)
        errors[r] = "stream synchronize failed";
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < world; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  ASSERT_EQ(gpu::MemGetInfo(&free_after_call, &total), gpu::kSuccess);

  std::vector<uint8_t> got(block * world);
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(gpu::DeviceSynchronize(), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(got.data(), recv[r], got.size(), streams[r]), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamSynchronize(streams[r]), gpu::kSuccess);
    for (int s = 0; s < world; ++s) {
      size_t wrong = 0;
      for (size_t i = 0; i < block; ++i) wrong += got[s * block + i] != sent[s][i];
      EXPECT_EQ(wrong, 0u) << "rank " << r << ": bytes from rank " << s;
    }
  }
  held->after_init = HeldPerRank(free_before, free_after_init, world);
  held->after_call = HeldPerRank(free_before, free_after_call, world);
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(xcclCommDestroy(comms[r]), xcclSuccess);
    EXPECT_EQ(gpu::Free(send[r]), gpu::kSuccess);
    EXPECT_EQ(gpu::Free(recv[r]), gpu::kSuccess);
    EXPECT_EQ(gpu::StreamDestroy(streams[r]), gpu::kSuccess);
  }
}

bool HaveGpu() {
  int gpus = 0;
  return gpu::GetDeviceCount(&gpus) == gpu::kSuccess && gpus > 0;
}

// Every call in place: no inboxes, neither after init nor after a call.
void CheckNoInboxes(int world) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU visible: device memory needs one";
  HeldBytes held;
  ASSERT_NO_FATAL_FAILURE(MeasureThreadRanks(world, &held));
  EXPECT_LE(held.after_init, kMostBytesAfterInit)
      << world << " thread ranks hold " << (held.after_init >> 20) << " MiB each after init";
  EXPECT_LE(held.after_call, kMostBytesAfterInit)
      << world << " thread ranks hold " << (held.after_call >> 20)
      << " MiB each after an all_gather";
}

TEST(GpuMemory, TwoThreadRanksHoldNoInboxes) { CheckNoInboxes(2); }
TEST(GpuMemory, EightThreadRanksHoldNoInboxes) { CheckNoInboxes(8); }

// XCCL_ZERO_COPY=0 sends every block through the inboxes: none after init; the first call past
// the LL path makes them as big as the all_gather kernel's rings (at most a 32 MiB window), not
// the whole XCCL_WINDOW_BYTES (docs/ARCHITECTURE.md, "The GPU platform", the window).
TEST(GpuMemory, InboxesGrowWithTheCalls) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU visible: device memory needs one";
  WithZeroCopy(0)();
  HeldBytes held;
  MeasureThreadRanks(2, &held);
  const size_t window = static_cast<size_t>(xccl::GetParams().window_bytes);
  RestoreParams();
  EXPECT_LE(held.after_init, kMostBytesAfterInit)
      << "2 thread ranks hold " << (held.after_init >> 20) << " MiB each after init";
  EXPECT_GE(held.after_call, held.after_init + (size_t{8} << 20))
      << "2 thread ranks hold " << (held.after_call >> 20) << " MiB each after an all_gather "
      << "through the inboxes (" << (held.after_init >> 20) << " after init): no rings made";
  EXPECT_LE(held.after_call, kMostBytesAfterInit)
      << "2 thread ranks hold " << (held.after_call >> 20) << " MiB each after an 8 MiB "
      << "all_gather through the inboxes, of a " << (window >> 20) << " MiB window";
}

}  // namespace
}  // namespace xccl_test
