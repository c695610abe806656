// Signals in shared memory on the host platform: a store, and a wait that polls briefly, then
// sleeps in the kernel on the word itself (the futex key of a shared mapping is its file and
// offset, so it works across processes and across two mappings in one process). Sleeping
// matters: ranks and their queues far outnumber the cores of a CI box. A store makes the wake
// system call only when a waiter sleeps on some slot of the same window: each window has a
// count of sleepers, which a waiter raises before its last look at the slot and a store reads
// after writing it (both sequentially consistent, so either the waiter sees the value or the
// store sees the sleeper). Most signals find their waiter still polling and skip the call.
#pragma once

#include <cstdint>
#include <functional>

#include "base/deadline.h"
#include "base/failure.h"

namespace xccl {

// `sleepers`: the count of the window that holds `slot`.
void SignalStore(uint32_t* slot, uint32_t* sleepers, uint32_t value);
uint32_t SignalLoad(const uint32_t* slot);

// How a waiter spends its time before it sleeps in the kernel: `spins` polls, then `yields`
// polls each followed by sched_yield().
struct WaitPolicy {
  int64_t spins = 0;
  int64_t yields = 0;
};

// Waits until *slot reaches `target` (wrap-safe). Every few milliseconds, and before giving up,
// calls `check`, which returns non-success (and fills `failure`) to stop waiting. At the deadline
// returns xcclTimeout with a message naming `peer`.
xcclResult_t SignalWait(const uint32_t* slot, uint32_t* sleepers, uint32_t target,
                        const WaitPolicy& policy, int peer, const char* what,
                        const Deadline& deadline,
                        const std::function<xcclResult_t(PlatformFailure*)>& check,
                        PlatformFailure* failure);

}  // namespace xccl
