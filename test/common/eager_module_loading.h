// Test and perf binaries run several ranks as threads sharing one GPU, and launch kernels of
// other libraries (GEMM plugins, cuBLASLt) between xccl calls. Under CUDA's lazy module loading a
// first launch may wait for the whole device and stall behind a peer's xccl kernel (see
// WarnAboutLazyLoading in src/platform/gpu/gpu_platform.cc), so these binaries load modules
// eagerly, as the library's warning asks users to. Must run before the first CUDA call; an
// explicit CUDA_MODULE_LOADING in the environment wins.
#pragma once

#include <cstdlib>

namespace xccl_test {

inline bool RequestEagerModuleLoading() {
  return setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0) == 0;
}

}  // namespace xccl_test
