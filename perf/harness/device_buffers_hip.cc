// HIP implementation of DeviceBuffers: a port of device_buffers_cuda.cc (keep the two in step;
// only the runtime names differ, and the version guards below). Device memory from hipMalloc,
// one non-blocking stream per rank, hipEvents around the timed loop and HIP graphs for -G.
// Every HIP runtime call of the benchmarks is in this file. It is plain C++ against the HIP host
// API (the including target gets __HIP_PLATFORM_AMD__ from hip::host).
#include <errno.h>
#include <hip/hip_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "harness/device_buffers.h"

namespace xccl_perf {
namespace {

// Reports a failed runtime call with the device it was made for; true on success.
bool HipOk(hipError_t error, const char* call, int device) {
  if (error == hipSuccess) return true;
  fprintf(stderr, "%s: pid %d device %d: %s failed: %s (%s)\n", program_invocation_short_name,
          static_cast<int>(getpid()), device, call, hipGetErrorName(error),
          hipGetErrorString(error));
  return false;
}

#define HIP_OK(call) HipOk((call), #call, device_)

class HipBuffers final : public DeviceBuffers {
 public:
  explicit HipBuffers(int device) : device_(device) {}

  ~HipBuffers() override {
    AbortCapture();
    DropCaptured();
    if (start_ != nullptr) (void)hipEventDestroy(start_);
    if (stop_ != nullptr) (void)hipEventDestroy(stop_);
    if (stream_ != nullptr) (void)hipStreamDestroy(stream_);
    if (bounce_ != nullptr) (void)hipHostFree(bounce_);
  }

  bool Init() {
    if (!HIP_OK(hipSetDevice(device_))) return false;
    hipDeviceProp_t prop{};
    if (!HIP_OK(hipGetDeviceProperties(&prop, device_))) return false;
    name_ = prop.name;
    char bus[32];
    snprintf(bus, sizeof(bus), "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    bus_id_ = bus;
    // Non-blocking: the legacy default stream, which other code in the process may use, must not
    // serialise with the collectives being timed.
    return HIP_OK(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking)) &&
           HIP_OK(hipEventCreate(&start_)) && HIP_OK(hipEventCreate(&stop_));
  }

  void* Allocate(size_t bytes) override {
    void* buffer = nullptr;
    // hipMalloc of 0 bytes returns NULL, which the callers read as failure.
    if (!HIP_OK(hipMalloc(&buffer, bytes > 0 ? bytes : 1))) return nullptr;
    // The bounce buffer for host copies grows here, before the ranks start collectives:
    // hipFreeHost may wait for the whole device.
    if (bytes > bounce_bytes_) {
      if (bounce_ != nullptr) (void)hipHostFree(bounce_);
      bounce_ = nullptr;
      bounce_bytes_ = 0;
      // hipHostMalloc with default flags: the pinned allocation cudaMallocHost makes
      // (hipMallocHost is deprecated).
      if (!HIP_OK(hipHostMalloc(&bounce_, bytes, 0))) return nullptr;
      bounce_bytes_ = bytes;
    }
    // Writing it once maps the pages now rather than inside the first timed call.
    if (!HIP_OK(hipMemsetAsync(buffer, 0, bytes, stream_)) || !Synchronize()) {
      (void)hipFree(buffer);
      return nullptr;
    }
    return buffer;
  }

  void Release(void* buffer) override { HIP_OK(hipFree(buffer)); }

  bool HostAccessible() const override { return false; }

  bool BounceTooSmall(size_t bytes) {
    fprintf(stderr, "device_buffers_hip: a host copy of %zu bytes exceeds the largest buffer\n",
            bytes);
    return false;
  }

  // Through a pinned bounce buffer of this rank, on the rank's stream, and waited for. Never
  // from pageable memory: the runtime stages pageable copies through buffers shared by the
  // whole process, so with several ranks on one GPU a rank's copy can wait behind a peer's copy
  // that is queued after a collective waiting for this very rank (a deadlock seen at 4 ranks on
  // one H200).
  bool CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes > bounce_bytes_) return BounceTooSmall(bytes);
    memcpy(bounce_, src, bytes);
    return HIP_OK(hipMemcpyAsync(dst, bounce_, bytes, hipMemcpyHostToDevice, stream_)) &&
           Synchronize();
  }
  bool CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes > bounce_bytes_) return BounceTooSmall(bytes);
    if (!HIP_OK(hipMemcpyAsync(bounce_, src, bytes, hipMemcpyDeviceToHost, stream_)) ||
        !Synchronize())
      return false;
    memcpy(dst, bounce_, bytes);
    return true;
  }

  xcclStream_t Stream() override { return static_cast<xcclStream_t>(stream_); }
  bool Synchronize() override { return HIP_OK(hipStreamSynchronize(stream_)); }

  bool StartTimer() override { return HIP_OK(hipEventRecord(start_, stream_)); }
  bool StopTimer(double* seconds) override {
    float ms = 0;
    if (!HIP_OK(hipEventRecord(stop_, stream_)) || !HIP_OK(hipEventSynchronize(stop_)) ||
        !HIP_OK(hipEventElapsedTime(&ms, start_, stop_))) {
      return false;
    }
    *seconds = ms * 1.0e-3;
    return true;
  }

  bool BeginCapture() override {
    // Thread-local: other ranks of this process capture or launch on their own streams from
    // their own threads at the same time, and must not be affected by this capture.
    if (!HIP_OK(hipStreamBeginCapture(stream_, hipStreamCaptureModeThreadLocal))) return false;
    capturing_ = true;
    return true;
  }

  bool EndCapture() override {
    capturing_ = false;
    DropCaptured();
    if (!HIP_OK(hipStreamEndCapture(stream_, &graph_))) return false;
    // WithFlags rather than hipGraphInstantiate: its signature is the same in CUDA and HIP.
    if (!HIP_OK(hipGraphInstantiateWithFlags(&exec_, graph_, 0))) return false;
#if HIP_VERSION >= 60000000
    // Uploading now keeps the one-time upload out of the first timed launch. Older ROCm (5.2)
    // has no hipGraphUpload; the upload then lands in the first launch, a warm-up one.
    return HIP_OK(hipGraphUpload(exec_, stream_));
#else
    return true;
#endif
  }

  void AbortCapture() override {
    if (!capturing_) return;
    capturing_ = false;
    hipGraph_t partial = nullptr;
    // The capture is invalid after a failed call; ending it is what returns the stream to
    // normal use, and its error is the one already reported.
    if (hipStreamEndCapture(stream_, &partial) == hipSuccess && partial != nullptr) {
      (void)hipGraphDestroy(partial);
    }
    (void)hipGetLastError();
  }

  bool LaunchCaptured() override { return HIP_OK(hipGraphLaunch(exec_, stream_)); }

  void DropCaptured() override {
    if (exec_ != nullptr) (void)hipGraphExecDestroy(exec_);
    if (graph_ != nullptr) (void)hipGraphDestroy(graph_);
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
  hipStream_t stream_ = nullptr;
  void* bounce_ = nullptr;  // pinned, for CopyToDevice / CopyToHost
  size_t bounce_bytes_ = 0;
  hipEvent_t start_ = nullptr;
  hipEvent_t stop_ = nullptr;
  hipGraph_t graph_ = nullptr;
  hipGraphExec_t exec_ = nullptr;
  bool capturing_ = false;
};

}  // namespace

std::unique_ptr<DeviceBuffers> DeviceBuffers::Create(int device) {
  int count = 0;
  // No device is chosen yet; -1 says so in the message.
  if (!HipOk(hipGetDeviceCount(&count), "hipGetDeviceCount(&count)", -1)) return nullptr;
  if (count <= 0) {
    fprintf(stderr, "%s: no HIP device is visible\n", program_invocation_short_name);
    return nullptr;
  }
  auto buffers = std::make_unique<HipBuffers>(device % count);
  if (!buffers->Init()) return nullptr;
  return buffers;
}

const char* DeviceBuffers::Platform() { return "hip"; }

bool DeviceBuffers::SupportsGraphs() { return true; }

}  // namespace xccl_perf
