// Host implementation of DeviceBuffers: ranks are CPU threads, so "device" memory is plain
// page-aligned host memory.
#include <unistd.h>

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
  int Device() const override { return device_; }
  std::string Describe() const override { return "[0x00] host"; }

 private:
  int device_;  // nominal: host ranks share the CPUs, but the number keeps nccl-tests' layout
};

}  // namespace

std::unique_ptr<DeviceBuffers> DeviceBuffers::Create(int device) {
  return std::make_unique<HostBuffers>(device);
}

}  // namespace xccl_perf
