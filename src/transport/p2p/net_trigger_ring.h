// The trigger FIFO of a GPU rank across nodes (docs/ARCHITECTURE.md, "GPU ranks across nodes"): a
// kernel on the operation's stream claims a position, waits for room, writes the op (its epoch read
// on the device, so a replayed graph sends the replay's) into host-mapped memory and publishes it
// with a system-scope release of its sequence number; the proxy thread reads the entries in order
// and returns room through `consumed`. No runtime host function is involved: the runtime runs those
// for every stream of a process on one worker, which a rank ahead on the host can stall
// (docs/ARCHITECTURE.md).
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "transport/window.h"

namespace xccl {

struct NetTriggerEntry {
  uint32_t seq;   // position + 1 once the entry is complete (release)
  uint32_t kind;  // NetOp::Kind
  int32_t peer;
  int32_t slot;
  uint32_t epoch;
  uint32_t bytes;    // staged in the send staging for `peer`
  uint32_t counted;  // 1: launched outside a capture, so the host counted it (Expecting)
  uint32_t reserved;
};
static_assert(sizeof(NetTriggerEntry) == 32, "one entry per 32 bytes");

struct NetTriggerRing {
  static constexpr uint32_t kEntries = 256;
  NetTriggerEntry* entries = nullptr;  // host-mapped, as the device addresses it
  const uint32_t* consumed = nullptr;  // host-mapped: positions the proxy has taken
  uint32_t* claimed = nullptr;         // device memory: positions handed out to kernels
};

// Loads the trigger kernel into the current device's context (lazy loading, see
// PreloadSignalKernels).
gpuError_t PreloadNetTriggerKernel();

// One thread on `stream`: the op (kind, peer, slot, bytes, *epoch) into the ring. Waiting for
// room is bounded by `timeout_ns` and ends at the failure record's abort, as every device wait.
gpuError_t LaunchNetTrigger(const NetTriggerRing& ring, uint32_t kind, int peer, int slot,
                            uint32_t bytes, bool counted, const uint32_t* epoch,
                            uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream);

}  // namespace xccl
