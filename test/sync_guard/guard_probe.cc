// guard_probe: shows that libxccl-device-sync-guard.so catches what it is for. Two ranks share
// GPU 0 as threads and enqueue a barrier each (the launch gate lets neither return before both
// have reached it); rank 0's stream first holds a 500 ms host function, so its barrier stays in
// flight while rank 1, once rank 0's call has returned, copies from pageable host memory. Without
// the guard it exits 0; under it the guard reports the copy and the exit status is the guard's
// (97).
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
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
    rank_ok[0] =
        Ok(cudaSetDevice(0), "cudaSetDevice") &&
        Ok(cudaLaunchHostFunc(
               streams[0],
               [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }, nullptr),
           "host function") &&
        Ok(xcclBarrier(comms[0], streams[0]), "rank 0 barrier");
    enqueued = true;  // after the guard recorded the call's event
    rank_ok[0] = rank_ok[0] && Ok(cudaStreamSynchronize(streams[0]), "rank 0 sync");
  });
  std::thread rank1([&] {
    rank_ok[1] = Ok(cudaSetDevice(0), "cudaSetDevice") &&
                 Ok(xcclBarrier(comms[1], streams[1]), "rank 1 barrier");
    while (!enqueued.load()) std::this_thread::yield();
    static int pageable = 42;  // ordinary memory: the runtime stages it
    rank_ok[1] = rank_ok[1] &&
                 Ok(cudaMemcpyAsync(device_word, &pageable, sizeof(pageable),
                                    cudaMemcpyHostToDevice, streams[1]),
                    "pageable copy") &&
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
