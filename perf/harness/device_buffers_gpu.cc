// GPU implementation of DeviceBuffers, for CUDA and HIP alike through the name mapping of
// src/platform/gpu.h: device memory from gpuMalloc, one non-blocking stream per rank, events
// around the timed loop and graphs for -G. Every runtime call of the benchmarks is in this file.
#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "harness/device_buffers.h"
#include "platform/gpu.h"

namespace xccl_perf {
namespace {

// Reports a failed runtime call with the device it was made for; true on success.
bool GpuOk(gpuError_t error, const char* call, int device) {
  if (error == gpuSuccess) return true;
  fprintf(stderr, "%s: pid %d device %d: %s failed: %s (%s)\n", program_invocation_short_name,
          static_cast<int>(getpid()), device, call, gpuGetErrorName(error),
          gpuGetErrorString(error));
  return false;
}

#define GPU_OK(call) GpuOk((call), #call, device_)

class GpuBuffers final : public DeviceBuffers {
 public:
  explicit GpuBuffers(int device) : device_(device) {}

  ~GpuBuffers() override {
    AbortCapture();
    DropCaptured();
    if (start_ != nullptr) (void)gpuEventDestroy(start_);
    if (stop_ != nullptr) (void)gpuEventDestroy(stop_);
    if (fork_ != nullptr) (void)gpuEventDestroy(fork_);
    if (join_ != nullptr) (void)gpuEventDestroy(join_);
    if (side_ != nullptr) (void)gpuStreamDestroy(side_);
    if (stream_ != nullptr) (void)gpuStreamDestroy(stream_);
    if (bounce_ != nullptr) (void)gpuFreeHost(bounce_);
  }

  bool Init() {
    if (!GPU_OK(gpuSetDevice(device_))) return false;
    gpuDeviceProp_t prop{};
    if (!GPU_OK(gpuGetDeviceProperties(&prop, device_))) return false;
    name_ = prop.name;
    char bus[32];
    snprintf(bus, sizeof(bus), "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    bus_id_ = bus;
    // Non-blocking: the legacy default stream, which other code in the process may use, must not
    // serialise with the collectives being timed.
    // The side stream here too: creating a stream may wait for the device, never in a timed loop.
    int least = 0, greatest = 0;
    return GPU_OK(gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking)) &&
           GPU_OK(gpuEventCreate(&start_)) && GPU_OK(gpuEventCreate(&stop_)) &&
           GPU_OK(gpuDeviceGetStreamPriorityRange(&least, &greatest)) &&
           GPU_OK(gpuStreamCreateWithPriority(&side_, gpuStreamNonBlocking, greatest)) &&
           GPU_OK(gpuEventCreateWithFlags(&fork_, gpuEventDisableTiming)) &&
           GPU_OK(gpuEventCreateWithFlags(&join_, gpuEventDisableTiming));
  }

  void* Allocate(size_t bytes) override {
    void* buffer = nullptr;
    // gpuMalloc of 0 bytes returns NULL, which the callers read as failure.
    if (!GPU_OK(gpuMalloc(&buffer, bytes > 0 ? bytes : 1))) return nullptr;
    if (!ReserveHostCopies(bytes)) {
      (void)gpuFree(buffer);
      return nullptr;
    }
    // Writing it once maps the pages now rather than inside the first timed call.
    if (!GPU_OK(gpuMemsetAsync(buffer, 0, bytes, stream_)) || !Synchronize()) {
      (void)gpuFree(buffer);
      return nullptr;
    }
    return buffer;
  }

  void Release(void* buffer) override { GPU_OK(gpuFree(buffer)); }

  // The bounce buffer for host copies grows here, before the ranks start collectives:
  // gpuFreeHost may wait for the whole device.
  bool ReserveHostCopies(size_t bytes) override {
    if (bytes <= bounce_bytes_) return true;
    if (bounce_ != nullptr) (void)gpuFreeHost(bounce_);
    bounce_ = nullptr;
    bounce_bytes_ = 0;
    if (!GPU_OK(gpuMallocHost(&bounce_, bytes))) return false;
    bounce_bytes_ = bytes;
    return true;
  }

  bool HostAccessible() const override { return false; }

  bool BounceTooSmall(size_t bytes) {
    fprintf(stderr, "device_buffers_cuda: a host copy of %zu bytes exceeds the largest buffer\n",
            bytes);
    return false;
  }

  // Through a pinned bounce buffer of this rank, on the rank's stream, and waited for. Never
  // from pageable memory: the runtime stages pageable copies through buffers shared by the
  // whole process, so with several ranks on one GPU a rank's copy can wait behind a peer's copy
  // that is queued after a collective waiting for this very rank: a deadlock
  // (docs/perf-history.md, "GPU platform on one H200, ranks sharing it").
  bool CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes > bounce_bytes_) return BounceTooSmall(bytes);
    memcpy(bounce_, src, bytes);
    return GPU_OK(gpuMemcpyAsync(dst, bounce_, bytes, gpuMemcpyHostToDevice, stream_)) &&
           Synchronize();
  }
  bool CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes > bounce_bytes_) return BounceTooSmall(bytes);
    if (!GPU_OK(gpuMemcpyAsync(bounce_, src, bytes, gpuMemcpyDeviceToHost, stream_)) ||
        !Synchronize())
      return false;
    memcpy(dst, bounce_, bytes);
    return true;
  }

  xcclStream_t Stream() override { return static_cast<xcclStream_t>(stream_); }
  bool Synchronize() override {
    return GPU_OK(gpuStreamSynchronize(stream_)) && GPU_OK(gpuStreamSynchronize(side_));
  }
  xcclStream_t SideStream() override { return static_cast<xcclStream_t>(side_); }
  bool ForkSide() override {
    return GPU_OK(gpuEventRecord(fork_, stream_)) && GPU_OK(gpuStreamWaitEvent(side_, fork_, 0));
  }
  bool JoinSide() override {
    return GPU_OK(gpuEventRecord(join_, side_)) && GPU_OK(gpuStreamWaitEvent(stream_, join_, 0));
  }

  bool StartTimer() override { return GPU_OK(gpuEventRecord(start_, stream_)); }
  bool StopTimer(double* seconds) override {
    float ms = 0;
    if (!GPU_OK(gpuEventRecord(stop_, stream_)) || !GPU_OK(gpuEventSynchronize(stop_)) ||
        !GPU_OK(gpuEventElapsedTime(&ms, start_, stop_))) {
      return false;
    }
    *seconds = ms * 1.0e-3;
    return true;
  }

  bool BeginCapture() override {
    // Thread-local: other ranks of this process capture or launch on their own streams from
    // their own threads at the same time, and must not be affected by this capture.
    if (!GPU_OK(gpuStreamBeginCapture(stream_, gpuStreamCaptureModeThreadLocal))) return false;
    capturing_ = true;
    return true;
  }

  bool EndCapture() override {
    capturing_ = false;
    DropCaptured();
    if (!GPU_OK(gpuStreamEndCapture(stream_, &graph_))) return false;
    // WithFlags rather than gpuGraphInstantiate: its signature is the same in CUDA and HIP.
    // Uploading now keeps the one-time upload out of the first timed launch.
    return GPU_OK(gpuGraphInstantiateWithFlags(&exec_, graph_, 0)) &&
           GPU_OK(gpuGraphUpload(exec_, stream_));
  }

  void AbortCapture() override {
    if (!capturing_) return;
    capturing_ = false;
    gpuGraph_t partial = nullptr;
    // The capture is invalid after a failed call; ending it is what returns the stream to
    // normal use, and its error is the one already reported.
    if (gpuStreamEndCapture(stream_, &partial) == gpuSuccess && partial != nullptr) {
      (void)gpuGraphDestroy(partial);
    }
    (void)gpuGetLastError();
  }

  bool LaunchCaptured() override { return GPU_OK(gpuGraphLaunch(exec_, stream_)); }

  void DropCaptured() override {
    if (exec_ != nullptr) (void)gpuGraphExecDestroy(exec_);
    if (graph_ != nullptr) (void)gpuGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }

  int Device() const override { return device_; }
  std::string Describe() const override { return "[" + bus_id_ + "] " + name_; }
  std::string Name() const override { return name_; }
  std::string BusId() const override { return bus_id_; }

 private:
  int device_;
  std::string name_;
  std::string bus_id_;
  gpuStream_t stream_ = nullptr;
  gpuStream_t side_ = nullptr;  // SideStream(), with the fork and join events
  gpuEvent_t fork_ = nullptr;
  gpuEvent_t join_ = nullptr;
  void* bounce_ = nullptr;  // pinned, for CopyToDevice / CopyToHost
  size_t bounce_bytes_ = 0;
  gpuEvent_t start_ = nullptr;
  gpuEvent_t stop_ = nullptr;
  gpuGraph_t graph_ = nullptr;
  gpuGraphExec_t exec_ = nullptr;
  bool capturing_ = false;
};

}  // namespace

std::unique_ptr<DeviceBuffers> DeviceBuffers::Create(int device) {
  int count = 0;
  // No device is chosen yet; -1 says so in the message.
  if (!GpuOk(gpuGetDeviceCount(&count), "gpuGetDeviceCount(&count)", -1)) return nullptr;
  if (count <= 0) {
    fprintf(stderr, "%s: no CUDA device is visible\n", program_invocation_short_name);
    return nullptr;
  }
  auto buffers = std::make_unique<GpuBuffers>(device % count);
  if (!buffers->Init()) return nullptr;
  return buffers;
}

const char* DeviceBuffers::Platform() { return "cuda"; }

bool DeviceBuffers::SupportsGraphs() { return true; }

}  // namespace xccl_perf
