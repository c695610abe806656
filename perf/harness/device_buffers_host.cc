// Host implementation of DeviceBuffers: ranks are CPU threads, so "device" memory is plain
// page-aligned host memory, a call is complete when it returns, and the timer is the CPU clock.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "harness/device_buffers.h"

namespace xccl_perf {
namespace {

class HostBuffers final : public DeviceBuffers {
 public:
  explicit HostBuffers(int device) : device_(device) {}

  void* Allocate(size_t bytes) override {
    // Page alignment matches what a GPU allocator gives and keeps wide copies aligned.
    size_t alignment = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded == 0) rounded = alignment;
    void* buffer = nullptr;
    if (posix_memalign(&buffer, alignment, rounded) != 0) {
      fprintf(stderr, "cannot allocate %zu bytes of host memory\n", rounded);
      return nullptr;
    }
    memset(buffer, 0, rounded);
    return buffer;
  }
  void Release(void* buffer) override { free(buffer); }
  bool ReserveHostCopies(size_t) override { return true; }
  bool HostAccessible() const override { return true; }
  bool CopyToDevice(void* dst, const void* src, size_t bytes) override {
    memcpy(dst, src, bytes);
    return true;
  }
  bool CopyToHost(void* dst, const void* src, size_t bytes) override {
    memcpy(dst, src, bytes);
    return true;
  }
  xcclStream_t Stream() override { return nullptr; }
  bool Synchronize() override { return true; }
  xcclStream_t SideStream() override { return nullptr; }
  bool ForkSide() override { return true; }
  bool JoinSide() override { return true; }
  bool StartTimer() override {
    start_ = std::chrono::steady_clock::now();
    return true;
  }
  bool StopTimer(double* seconds) override {
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return true;
  }
  // Never reached: option parsing refuses -G where SupportsGraphs() is false.
  bool BeginCapture() override { return NoGraphs(); }
  bool EndCapture() override { return NoGraphs(); }
  void AbortCapture() override {}
  bool LaunchCaptured() override { return NoGraphs(); }
  void DropCaptured() override {}
  int Device() const override { return device_; }
  std::string Describe() const override { return "[0x00] host"; }
  std::string Name() const override { return "host"; }
  std::string BusId() const override { return "host"; }

 private:
  static bool NoGraphs() {
    fprintf(stderr, "graph capture needs a GPU platform; this is a host build\n");
    return false;
  }

  int device_;  // nominal: host ranks share the CPUs, but the number keeps nccl-tests' layout
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::unique_ptr<DeviceBuffers> DeviceBuffers::Create(int device) {
  return std::make_unique<HostBuffers>(device);
}

const char* DeviceBuffers::Platform() { return "host"; }

bool DeviceBuffers::SupportsGraphs() { return false; }

}  // namespace xccl_perf
