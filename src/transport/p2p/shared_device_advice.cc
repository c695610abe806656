#include "transport/p2p/shared_device_advice.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "base/logging.h"

namespace xccl {

namespace {

// Ranks of one process sharing a GPU share its context. Under CUDA's lazy module loading (the
// default since CUDA 12.2) a kernel's first launch may load its module and wait for the whole
// context; if another library's kernel (a GEMM, say) is first launched between xccl calls, that
// wait stalls behind a peer's xccl kernel that waits for this rank's next launch, until the
// device-side deadline. xccl loads its own kernels at init; the rest need
// CUDA_MODULE_LOADING=EAGER (or their kernels loaded up front). Said once per process.
void WarnAboutLazyLoading(bool shared_in_process) {
#if !defined(XCCL_PLATFORM_HIP)
  static std::atomic<bool> warned{false};
  const char* mode = getenv("CUDA_MODULE_LOADING");
  if (!shared_in_process || (mode != nullptr && strcmp(mode, "EAGER") == 0) ||
      warned.exchange(true))
    return;
  XCCL_WARN(kLogInit,
            "ranks of this process share a GPU under lazy module loading: another library's "
            "kernel first launched between xccl calls can stall them until the timeout; set "
            "CUDA_MODULE_LOADING=EAGER");
#else
  (void)shared_in_process;
#endif
}

// Where ranks of one process share a GPU, their streams share the runtime's hardware queues
// (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless set before the first CUDA call): a rank's kernel that
// waits for a peer can then hold up the peer's kernel queued behind it. The variable is the
// user's to set (xccl sets no other library's variables): a warning, once per process.
void WarnAboutHardwareQueues(bool shared_in_process) {
#if !defined(XCCL_PLATFORM_HIP)
  static std::atomic<bool> warned{false};
  const char* value = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (!shared_in_process || (value != nullptr && atoi(value) >= 32) || warned.exchange(true))
    return;
  XCCL_WARN(kLogInit,
            "ranks of this process share a GPU with CUDA_DEVICE_MAX_CONNECTIONS=%s: their "
            "streams share hardware queues, where a waiting kernel can stall a peer's; set "
            "CUDA_DEVICE_MAX_CONNECTIONS=32 before the first CUDA call",
            value != nullptr ? value : "8 (unset)");
#else
  (void)shared_in_process;
#endif
}

}  // namespace

void AdviseOnSharedDevice(bool shared_in_process) {
  WarnAboutLazyLoading(shared_in_process);
  WarnAboutHardwareQueues(shared_in_process);
}

}  // namespace xccl
