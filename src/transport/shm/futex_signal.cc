#include "transport/shm/futex_signal.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "base/epoch.h"
#include "base/failure.h"

namespace xccl {

namespace {

constexpr int64_t kCheckIntervalNs = 5 * 1000 * 1000;

void FutexWake(uint32_t* slot) {
  syscall(SYS_futex, slot, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void FutexWait(const uint32_t* slot, uint32_t seen, int64_t ns) {
  timespec timeout{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, slot, FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void SignalStore(uint32_t* slot, uint32_t* sleepers, uint32_t value) {
  __atomic_store_n(slot, value, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0) FutexWake(slot);
}

uint32_t SignalLoad(const uint32_t* slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }

xcclResult_t SignalWait(const uint32_t* slot, uint32_t* sleepers, uint32_t target,
                        const WaitPolicy& policy, int peer, const char* what,
                        const Deadline& deadline,
                        const std::function<xcclResult_t(PlatformFailure*)>& check,
                        PlatformFailure* failure) {
  for (int64_t i = 0; i < policy.spins; ++i) {
    if (EpochReached(SignalLoad(slot), target)) return xcclSuccess;
    CpuRelax();
  }
  // Then yield for a while: on a machine with more runnable threads than cores, the thread
  // that will set this slot is usually waiting for exactly this core, and a yield hands it
  // over without the wake-up latency of a futex sleep.
  for (int64_t i = 0; i < policy.yields; ++i) {
    if (EpochReached(SignalLoad(slot), target)) return xcclSuccess;
    sched_yield();
  }
  while (true) {
    uint32_t seen = SignalLoad(slot);
    if (EpochReached(seen, target)) return xcclSuccess;
    xcclResult_t checked = check(failure);
    // A signal that landed before the failure was seen counts (a peer may signal, then leave).
    if (checked != xcclSuccess)
      return EpochReached(SignalLoad(slot), target) ? xcclSuccess : checked;
    if (deadline.Expired()) {
      return SetFailure(failure, xcclTimeout, peer,
                        "timed out after %lld ms waiting for rank %d (%s: have %u, want %u)",
                        static_cast<long long>(deadline.timeout_ms()), peer, what, seen, target);
    }
    // Counted as a sleeper before the last look: a store that this look misses sees the count
    // and wakes the futex (which also refuses to sleep once the slot has changed).
    __atomic_fetch_add(sleepers, 1, __ATOMIC_SEQ_CST);
    if (!EpochReached(__atomic_load_n(slot, __ATOMIC_SEQ_CST), target))
      FutexWait(slot, seen, kCheckIntervalNs);
    __atomic_fetch_sub(sleepers, 1, __ATOMIC_SEQ_CST);
  }
}

}  // namespace xccl
