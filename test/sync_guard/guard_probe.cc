// guard_probe: shows that libxccl-device-sync-guard.so catches what it is for. Two ranks share
// GPU 0 as threads; rank 0 enqueues a barrier (in flight until rank 1 joins it), then rank 1
// copies from pageable host memory before its own barrier. Without the guard it exits 0; under
// it the guard reports the copy and the exit status is the guard's (97).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "xccl.h"

namespace {

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  fprintf(stderr, "guard_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool Ok(xcclResult_t r, const char* what) {
  if (r == xcclSuccess) return true;
  fprintf(stderr, "guard_probe: %s: %s\n", what, xcclGetLastError(nullptr));
  return false;
}

}  // namespace

int main() {
  const int devices[2] = {0, 0};
  xcclComm_t comms[2] = {nullptr, nullptr};
  if (!Ok(cudaSetDevice(0), "cudaSetDevice") || !Ok(xcclCommInitAll(comms, 2, devices), "init"))
    return 1;
  void* device_word = nullptr;
  cudaStream_t streams[2] = {nullptr, nullptr};
  bool ok = Ok(cudaMalloc(&device_word, sizeof(int)), "cudaMalloc");
  for (cudaStream_t& s : streams)
    ok = ok && Ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  if (!ok) return 1;
  std::atomic<bool> enqueued{false};
  std::atomic<bool> rank_ok[2] = {{false}, {false}};
  std::thread rank0([&] {
    rank_ok[0] = Ok(cudaSetDevice(0), "cudaSetDevice") &&
                 Ok(xcclBarrier(comms[0], streams[0]), "rank 0 barrier");
    enqueued = true;
    rank_ok[0] = rank_ok[0] && Ok(cudaStreamSynchronize(streams[0]), "rank 0 sync");
  });
  std::thread rank1([&] {
    while (!enqueued.load()) std::this_thread::yield();
    static int pageable = 42;  // ordinary memory: the runtime stages it
    rank_ok[1] = Ok(cudaSetDevice(0), "cudaSetDevice") &&
                 Ok(cudaMemcpyAsync(device_word, &pageable, sizeof(pageable),
                                    cudaMemcpyHostToDevice, streams[1]),
                    "pageable copy") &&
                 Ok(xcclBarrier(comms[1], streams[1]), "rank 1 barrier") &&
                 Ok(cudaStreamSynchronize(streams[1]), "rank 1 sync");
  });
  rank0.join();
  rank1.join();
  for (xcclComm_t c : comms) xcclCommDestroy(c);
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  cudaFree(device_word);
  if (!rank_ok[0] || !rank_ok[1]) return 1;
  printf("guard_probe: both barriers completed\n");
  return 0;
}
