// libxccl-device-sync-guard.so (test only, CUDA): LD_PRELOAD it to find device-synchronising
// calls made while another thread of the process has an xccl call in flight on the device.
//
// Where ranks share a GPU as threads, such a call (cudaFree, a pageable copy, ...) waits for the
// whole device, including a peer's xccl kernel that waits for this thread's next call: a stall
// until the deadline, and only when the timing is unlucky. The guard makes every such overlap
// visible, stall or not. It wraps the xccl calls that enqueue device work, recording an event
// after each, and the runtime calls that wait for the device (or share the process's pageable
// staging buffers); at each of the latter it asks whether an event of another thread is still
// pending. Each such call is a violation: the first kMaxReports are printed with their caller,
// and at exit the process's status becomes kViolationStatus if there was any.
// Calls made inside the library's and cuBLASLt's own code through their static runtime copies,
// and kernels first launched under lazy loading, are not seen (the interposition is on the
// shared libcudart's exported names).
// The C API only: cuda_runtime.h adds template overloads (cudaMalloc<T>) that decltype cannot
// pick from.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "xccl.h"

namespace {

constexpr int kViolationStatus = 97;
constexpr int kMaxReports = 10;

struct InFlight {
  cudaEvent_t done;
  std::thread::id thread;
  const char* call;
};

std::mutex& Mutex() {
  static auto* mu = new std::mutex;  // outlives exit: wrapped calls can come from other threads
  return *mu;
}
std::vector<InFlight>& Pending() {
  static auto* pending = new std::vector<InFlight>;
  return *pending;
}
std::atomic<int> violations{0};

// The next definition of `name` after this library (the real runtime or xccl function).
template <typename F>
F Real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    fprintf(stderr, "device-sync guard: %s not found after the guard: %s\n", name, dlerror());
    _exit(kViolationStatus);
  }
  return reinterpret_cast<F>(f);
}
#define REAL(name) static const auto real = Real<decltype(&name)>(#name)

// Drops completed calls; returns the first still-pending call of another thread, if any.
bool OtherThreadInFlight(InFlight* found) {
  static const auto query = Real<decltype(&cudaEventQuery)>("cudaEventQuery");
  static const auto destroy = Real<decltype(&cudaEventDestroy)>("cudaEventDestroy");
  std::lock_guard<std::mutex> lock(Mutex());
  std::vector<InFlight>& pending = Pending();
  bool any = false;
  for (size_t i = 0; i < pending.size();) {
    const cudaError_t state = query(pending[i].done);
    if (state == cudaErrorNotReady) {
      if (!any && pending[i].thread != std::this_thread::get_id()) {
        *found = pending[i];
        any = true;
      }
      ++i;
      continue;
    }
    if (state != cudaSuccess) (void)cudaGetLastError();
    destroy(pending[i].done);
    pending[i] = pending.back();
    pending.pop_back();
  }
  return any;
}

// Called at the start of every wrapped device-synchronising call; `caller` is its return address.
void Check(const char* call, const void* caller) {
  InFlight other{};
  if (!OtherThreadInFlight(&other)) return;
  const int n = violations.fetch_add(1) + 1;
  if (n > kMaxReports) return;
  Dl_info info{};
  const bool named = dladdr(caller, &info) != 0 && info.dli_fname != nullptr;
  const char* library = named ? info.dli_fname : "?";
  const char* symbol = named && info.dli_sname != nullptr ? info.dli_sname : "?";
  const long offset =
      named ? static_cast<const char*>(caller) - static_cast<char*>(info.dli_fbase) : 0;
  fprintf(stderr,
          "device-sync guard: %s called from %s+0x%lx (%s) while another thread's %s is in "
          "flight (violation %d)\n",
          call, library, offset, symbol, other.call, n);
}

#define GUARD(name) Check(#name, __builtin_return_address(0))

// Records that `call` enqueued work on `stream` (nothing while the stream is being captured: a
// graph's work runs at its launch, which is recorded then).
void Enqueued(const char* call, cudaStream_t stream) {
  static const auto create = Real<decltype(&cudaEventCreateWithFlags)>("cudaEventCreateWithFlags");
  static const auto record = Real<decltype(&cudaEventRecord)>("cudaEventRecord");
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    return;
  }
  cudaEvent_t done = nullptr;
  if (create(&done, cudaEventDisableTiming) != cudaSuccess) return;
  if (record(done, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    cudaEventDestroy(done);
    return;
  }
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().push_back({done, std::this_thread::get_id(), call});
}

// Whether `ptr` is host memory the runtime does not know (pageable): copies from or to it go
// through staging buffers shared by the whole process.
bool Pageable(const void* ptr) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return attributes.type == cudaMemoryTypeUnregistered;
}

bool Legacy(cudaStream_t stream) { return stream == nullptr || stream == cudaStreamLegacy; }

__attribute__((destructor)) void Report() {
  const int n = violations.load();
  if (n == 0) return;
  fprintf(stderr,
          "device-sync guard: %d device-synchronising call(s) while another thread had "
          "an xccl call in flight\n",
          n);
  _exit(kViolationStatus);
}

}  // namespace

extern "C" {

// ---- xccl calls that enqueue device work ----
xcclResult_t xcclAllGather(const void* send, void* recv, size_t count, xcclDataType_t type,
                           xcclComm_t comm, xcclStream_t stream) {
  REAL(xcclAllGather);
  const xcclResult_t r = real(send, recv, count, type, comm, stream);
  if (r == xcclSuccess) Enqueued("xcclAllGather", static_cast<cudaStream_t>(stream));
  return r;
}

xcclResult_t xcclBarrier(xcclComm_t comm, xcclStream_t stream) {
  REAL(xcclBarrier);
  const xcclResult_t r = real(comm, stream);
  if (r == xcclSuccess) Enqueued("xcclBarrier", static_cast<cudaStream_t>(stream));
  return r;
}

xcclResult_t xcclAgGemmRun(xcclAgGemm_t op, const void* a, const float* a_scale, const void* b,
                           const float* b_scale, int64_t m, void* out, void** result,
                           xcclStream_t stream) {
  REAL(xcclAgGemmRun);
  const xcclResult_t r = real(op, a, a_scale, b, b_scale, m, out, result, stream);
  if (r == xcclSuccess) Enqueued("xcclAgGemmRun", static_cast<cudaStream_t>(stream));
  return r;
}

xcclResult_t xcclAgGemmSelfTest(xcclAgGemm_t op, int64_t m, xcclStream_t stream) {
  REAL(xcclAgGemmSelfTest);
  const xcclResult_t r = real(op, m, stream);
  if (r == xcclSuccess) Enqueued("xcclAgGemmSelfTest", static_cast<cudaStream_t>(stream));
  return r;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t stream) {
  REAL(cudaGraphLaunch);
  const cudaError_t r = real(graph, stream);
  if (r == cudaSuccess) Enqueued("a graph launch", stream);
  return r;
}

// ---- runtime calls that can wait for the whole device ----
cudaError_t cudaFree(void* ptr) {
  GUARD(cudaFree);
  REAL(cudaFree);
  return real(ptr);
}

cudaError_t cudaFreeHost(void* ptr) {
  GUARD(cudaFreeHost);
  REAL(cudaFreeHost);
  return real(ptr);
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  GUARD(cudaMalloc);
  REAL(cudaMalloc);
  return real(ptr, bytes);
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  GUARD(cudaMallocHost);
  REAL(cudaMallocHost);
  return real(ptr, bytes);
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int flags) {
  GUARD(cudaHostAlloc);
  REAL(cudaHostAlloc);
  return real(ptr, bytes, flags);
}

cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int flags) {
  GUARD(cudaHostRegister);
  REAL(cudaHostRegister);
  return real(ptr, bytes, flags);
}

cudaError_t cudaHostUnregister(void* ptr) {
  GUARD(cudaHostUnregister);
  REAL(cudaHostUnregister);
  return real(ptr);
}

cudaError_t cudaDeviceSynchronize(void) {
  GUARD(cudaDeviceSynchronize);
  REAL(cudaDeviceSynchronize);
  return real();
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  GUARD(cudaMemcpy);
  REAL(cudaMemcpy);
  return real(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  GUARD(cudaMemset);
  REAL(cudaMemset);
  return real(dst, value, bytes);
}

// Stream-ordered, but a pageable side or the legacy stream makes it wait beyond its stream.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (Legacy(stream) || (bytes > 0 && (Pageable(dst) || Pageable(src))))
    Check("cudaMemcpyAsync (pageable memory or the legacy stream)", __builtin_return_address(0));
  REAL(cudaMemcpyAsync);
  return real(dst, src, bytes, kind, stream);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (Legacy(stream))
    Check("cudaStreamSynchronize (the legacy stream)", __builtin_return_address(0));
  REAL(cudaStreamSynchronize);
  return real(stream);
}

}  // extern "C"
