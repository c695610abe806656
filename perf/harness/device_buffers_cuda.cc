// CUDA implementation of DeviceBuffers: device memory from cudaMalloc, one non-blocking stream
// per rank, cudaEvents around the timed loop and CUDA graphs for -G. Every CUDA runtime call of
// the benchmarks is in this file; a HIP build is this file with cuda renamed to hip (and
// cudaDeviceProp to hipDeviceProp_t).
#include <cuda_runtime_api.h>
#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "harness/device_buffers.h"

namespace xccl_perf {
namespace {

// Reports a failed runtime call with the device it was made for; true on success.
bool CudaOk(cudaError_t error, const char* call, int device) {
  if (error == cudaSuccess) return true;
  fprintf(stderr, "%s: pid %d device %d: %s failed: %s (%s)\n", program_invocation_short_name,
          static_cast<int>(getpid()), device, call, cudaGetErrorName(error),
          cudaGetErrorString(error));
  return false;
}

#define CUDA_OK(call) CudaOk((call), #call, device_)

class CudaBuffers final : public DeviceBuffers {
 public:
  explicit CudaBuffers(int device) : device_(device) {}

  ~CudaBuffers() override {
    AbortCapture();
    DropCaptured();
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (bounce_ != nullptr) cudaFreeHost(bounce_);
  }

  bool Init() {
    if (!CUDA_OK(cudaSetDevice(device_))) return false;
    cudaDeviceProp prop{};
    if (!CUDA_OK(cudaGetDeviceProperties(&prop, device_))) return false;
    name_ = prop.name;
    char bus[32];
    snprintf(bus, sizeof(bus), "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    bus_id_ = bus;
    // Non-blocking: the legacy default stream, which other code in the process may use, must not
    // serialise with the collectives being timed.
    return CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) &&
           CUDA_OK(cudaEventCreate(&start_)) && CUDA_OK(cudaEventCreate(&stop_));
  }

  void* Allocate(size_t bytes) override {
    void* buffer = nullptr;
    // cudaMalloc of 0 bytes returns NULL, which the callers read as failure.
    if (!CUDA_OK(cudaMalloc(&buffer, bytes > 0 ? bytes : 1))) return nullptr;
    // The bounce buffer for host copies grows here, before the ranks start collectives:
    // cudaFreeHost may wait for the whole device.
    if (bytes > bounce_bytes_) {
      if (bounce_ != nullptr) cudaFreeHost(bounce_);
      bounce_ = nullptr;
      bounce_bytes_ = 0;
      if (!CUDA_OK(cudaMallocHost(&bounce_, bytes))) return nullptr;
      bounce_bytes_ = bytes;
    }
    // Writing it once maps the pages now rather than inside the first timed call.
    if (!CUDA_OK(cudaMemsetAsync(buffer, 0, bytes, stream_)) || !Synchronize()) {
      cudaFree(buffer);
      return nullptr;
    }
    return buffer;
  }

  void Release(void* buffer) override { CUDA_OK(cudaFree(buffer)); }

  bool HostAccessible() const override { return false; }

  bool BounceTooSmall(size_t bytes) {
    fprintf(stderr, "device_buffers_cuda: a host copy of %zu bytes exceeds the largest buffer\n",
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
    return CUDA_OK(cudaMemcpyAsync(dst, bounce_, bytes, cudaMemcpyHostToDevice, stream_)) &&
           Synchronize();
  }
  bool CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes > bounce_bytes_) return BounceTooSmall(bytes);
    if (!CUDA_OK(cudaMemcpyAsync(bounce_, src, bytes, cudaMemcpyDeviceToHost, stream_)) ||
        !Synchronize())
      return false;
    memcpy(dst, bounce_, bytes);
    return true;
  }

  xcclStream_t Stream() override { return static_cast<xcclStream_t>(stream_); }
  bool Synchronize() override { return CUDA_OK(cudaStreamSynchronize(stream_)); }

  bool StartTimer() override { return CUDA_OK(cudaEventRecord(start_, stream_)); }
  bool StopTimer(double* seconds) override {
    float ms = 0;
    if (!CUDA_OK(cudaEventRecord(stop_, stream_)) || !CUDA_OK(cudaEventSynchronize(stop_)) ||
        !CUDA_OK(cudaEventElapsedTime(&ms, start_, stop_))) {
      return false;
    }
    *seconds = ms * 1.0e-3;
    return true;
  }

  bool BeginCapture() override {
    // Thread-local: other ranks of this process capture or launch on their own streams from
    // their own threads at the same time, and must not be affected by this capture.
    if (!CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal))) return false;
    capturing_ = true;
    return true;
  }

  bool EndCapture() override {
    capturing_ = false;
    DropCaptured();
    if (!CUDA_OK(cudaStreamEndCapture(stream_, &graph_))) return false;
    // WithFlags rather than cudaGraphInstantiate: its signature is the same in CUDA and HIP.
    // Uploading now keeps the one-time upload out of the first timed launch.
    return CUDA_OK(cudaGraphInstantiateWithFlags(&exec_, graph_, 0)) &&
           CUDA_OK(cudaGraphUpload(exec_, stream_));
  }

  void AbortCapture() override {
    if (!capturing_) return;
    capturing_ = false;
    cudaGraph_t partial = nullptr;
    // The capture is invalid after a failed call; ending it is what returns the stream to
    // normal use, and its error is the one already reported.
    if (cudaStreamEndCapture(stream_, &partial) == cudaSuccess && partial != nullptr) {
      cudaGraphDestroy(partial);
    }
    cudaGetLastError();
  }

  bool LaunchCaptured() override { return CUDA_OK(cudaGraphLaunch(exec_, stream_)); }

  void DropCaptured() override {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
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
  cudaStream_t stream_ = nullptr;
  void* bounce_ = nullptr;  // pinned, for CopyToDevice / CopyToHost
  size_t bounce_bytes_ = 0;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  bool capturing_ = false;
};

}  // namespace

std::unique_ptr<DeviceBuffers> DeviceBuffers::Create(int device) {
  int count = 0;
  // No device is chosen yet; -1 says so in the message.
  if (!CudaOk(cudaGetDeviceCount(&count), "cudaGetDeviceCount(&count)", -1)) return nullptr;
  if (count <= 0) {
    fprintf(stderr, "%s: no CUDA device is visible\n", program_invocation_short_name);
    return nullptr;
  }
  auto buffers = std::make_unique<CudaBuffers>(device % count);
  if (!buffers->Init()) return nullptr;
  return buffers;
}

const char* DeviceBuffers::Platform() { return "cuda"; }

bool DeviceBuffers::SupportsGraphs() { return true; }

}  // namespace xccl_perf
