// The GPU all_gather for small blocks ("LL", low latency): every 8-byte line a rank writes into
// a peer's window carries 4 bytes of data and a 4-byte flag, stored as one single-copy-atomic
// word, so the receiver knows a line has arrived by its flag alone. No fence, no separate signal
// and no credit: one trip over the link per call, where the pipelined all_gather needs a fence,
// a release store and a credit back per chunk (pipelined_all_gather.h).
//
// Why two buffers are enough: the flag of a call is a per-rank call counter + 1 (the same on
// every rank, since every rank makes the same calls), and a call writes the buffer of its
// counter's parity. A rank starting call c + 2 has finished call c + 1, which received every
// peer's block of c + 1, so every peer had finished call c (its calls on the communicator are
// stream-ordered) and read the buffer of c's parity out. The counters live in the control area
// (device memory, advanced by the kernel), so a captured call replays correctly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/all_gather/pipelined_all_gather.h"
#include "platform/gpu.h"
#include "transport/window.h"

namespace xccl {

struct LlLayout {
  // Largest block per rank the path can carry (the region is sized for it); the default
  // threshold (XCCL_ALLGATHER_LL_BYTES) is lower, 8 KiB, where it wins (docs/PERF.md).
  static constexpr size_t kMaxBytes = 32768;
  // 8-byte lines per (source, parity) buffer: 4 data bytes each.
  static constexpr size_t kLines = kMaxBytes / 4;
  static constexpr size_t kBufferBytes = kLines * 8;
  // Control slots holding each block's call counter (block b of the launch owns the b-th of
  // them, from KernelAllGatherSlots::ll_counters).
  static constexpr int kCounters = PipelineSlots::kMaxRanks;

  // Bytes of the region in one rank's window: two buffers per source rank.
  static size_t RegionBytes(int nranks) { return static_cast<size_t>(nranks) * 2 * kBufferBytes; }
  // Offset, within the region, of the buffer that receives `src`'s lines of parity `parity`.
  XCCL_HOST_DEVICE static size_t BufferOffset(int src, uint32_t parity) {
    return (static_cast<size_t>(src) * 2 + parity) * kBufferBytes;
  }
};

struct LlAllGatherArgs {
  const char* send;
  char* recv;
  size_t bytes;  // per rank, at most LlLayout::kMaxBytes
  int rank;
  int nranks;
  char* const* region_at_peer;  // [peer] -> that peer's LL region (device table)
  const char* own_region;       // this rank's LL region
  uint32_t* counters;           // this rank's LL call counters (LlLayout::kCounters slots)
  uint64_t timeout_ns;
  DeviceFailureRecord* record;
};

// Launches the call on `stream`: one block per peer (sends to it, receives from the peer as far
// the other way round), the first also copies the own block.
gpuError_t LaunchLlAllGather(const LlAllGatherArgs& args, gpuStream_t stream);

// Loads the kernel's module at init (transport/p2p/device_signals.h says why).
gpuError_t PreloadLlAllGather();

}  // namespace xccl
