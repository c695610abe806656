// What the test and perf binaries ask of the GPU runtime before its first call, as the library
// asks its users to (README, "Ranks sharing a GPU"); a value already in the environment wins.
// - CUDA_MODULE_LOADING=EAGER: these binaries run ranks as threads sharing one GPU and launch
//   other libraries' kernels (GEMM plugins, cuBLASLt) between xccl calls; under lazy loading a
//   first launch can wait for the whole device and stall behind a peer's xccl kernel.
// - CUDA_DEVICE_MAX_CONNECTIONS=32 (runtime default 8): with up to 8 ranks on one GPU, each with
//   its own stream and more, streams sharing a hardware queue serialise, and a kernel waiting for
//   a peer can hold up that peer's kernel queued behind it.
#pragma once

#include <cstdlib>

namespace xccl_test {

inline bool RequestGpuRuntimeSettings() {
  return setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0) == 0 &&
         setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0) == 0;
}

}  // namespace xccl_test
