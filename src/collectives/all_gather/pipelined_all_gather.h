// The GPU platform's default all_gather: one kernel per call, any size. Each rank's block is cut
// into chunks dealt round-robin over `lanes`; for every (peer, lane) one thread block pushes the
// chunks into a ring of slots in that peer's inbox for this rank, and for every (source, lane)
// one thread block copies arriving chunks out of this rank's inbox into the receive buffer.
// Flow control is by counters that are never reset: the sender's `ready` in the receiver's
// window counts chunks delivered, the receiver's `credit` in the sender's window counts chunks
// consumed, and each side keeps its own position (`sent`, `consumed`) in its own window. The
// kernel reads its position from device memory at start and writes it back at the end, so a
// call captured in a graph is correct on every replay; no epoch, no closing barrier, and a rank
// may run calls ahead of its peers as far as the ring lets it.
//
// Zero-copy: per call and per (source, lane) the receiver offers where the source may write its
// block straight (its receive buffer as the source addresses it) or nullptr (through the ring).
// The offer is published by the receiver's kernel, so the source writes only once the receiver's
// stream has reached the call; the source then reports its lane's delivery with one count. Both
// sides count the calls of each (pair, lane) alike, so offers need no epoch either.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/gpu.h"
#include "transport/window.h"

namespace xccl {

// The ring counters, relative to the first of the control slots the engine was given
// (KernelAllGatherSlots::rings, transport/slot_map.h).
struct PipelineSlots {
  // Room for XCCL_ALLGATHER_LANES up to this; the automatic count stays at 16 / (n - 1).
  static constexpr int kMaxLanes = 32;
  static constexpr int kMaxRanks = 32;
  static constexpr int kArray = kMaxRanks * kMaxLanes;
  // Written by `src`: chunks it delivered into this rank's inbox on `lane`.
  XCCL_HOST_DEVICE static constexpr int Ready(int src, int lane) { return src * kMaxLanes + lane; }
  // Written by `dst`: chunks of this rank it consumed on `lane`.
  XCCL_HOST_DEVICE static constexpr int Credit(int dst, int lane) {
    return kArray + dst * kMaxLanes + lane;
  }
  // This rank's own positions.
  XCCL_HOST_DEVICE static constexpr int Sent(int dst, int lane) {
    return 2 * kArray + dst * kMaxLanes + lane;
  }
  XCCL_HOST_DEVICE static constexpr int Consumed(int src, int lane) {
    return 3 * kArray + src * kMaxLanes + lane;
  }
  static constexpr int kCount = 4 * kArray;
};

// The zero-copy handshake's words, relative to the first of their control slots
// (KernelAllGatherSlots::offers).
struct DirectSlots {
  static constexpr int kArray = PipelineSlots::kArray;
  // Written by this rank for `src`: the calls offered on `lane` (the count, then the address's
  // low and high words and the tail's distance from it, published by the count).
  XCCL_HOST_DEVICE static constexpr int Offer(int src, int lane) {
    return 4 * (src * PipelineSlots::kMaxLanes + lane);
  }
  // Written by `src`: the last call of `lane` it delivered straight into this rank's buffer.
  XCCL_HOST_DEVICE static constexpr int Delivered(int src, int lane) {
    return 4 * kArray + src * PipelineSlots::kMaxLanes + lane;
  }
  // This rank's own position: the offers of `dst` it has read on `lane`.
  XCCL_HOST_DEVICE static constexpr int OffersRead(int dst, int lane) {
    return 5 * kArray + dst * PipelineSlots::kMaxLanes + lane;
  }
  static constexpr int kCount = 6 * kArray;
};

struct PipelinedAllGatherArgs {
  const char* send;
  char* recv;
  size_t bytes;  // per rank: the block's two parts together
  // The block's first `head` bytes come from `send` and land at recv + r * head; the rest (a
  // GatherTail) from `tail_send`, landing at `tail_recv` + r * (bytes - head).
  size_t head;
  const char* tail_send;
  char* tail_recv;
  size_t chunk;             // bytes per chunk of this call (a multiple of 16 unless bytes < 16)
  size_t slot_stride;       // bytes between ring slots
  uint32_t slots_per_lane;  // a power of two, so slot = counter % slots survives the wrap
  int lanes;
  int rank;
  int nranks;
  char* const* inbox_at_peer;   // [peer] -> this rank's inbox in that peer's window
  uint32_t* const* peer_slots;  // [peer] -> that peer's control slots
  const char* own_inbox;        // this rank's inboxes: source s at s * inbox_bytes
  size_t inbox_bytes;
  uint32_t* own_slots;
  int ring_first;   // the ring counters' first slot (PipelineSlots), in every rank's window
  int offer_first;  // the zero-copy words' first slot (DirectSlots)
  uint64_t timeout_ns;
  DeviceFailureRecord* record;
  // [src]: where src may write its block of this call (this rank's recv as src addresses it), or
  // nullptr (src goes through the ring in this rank's inbox). With a tail, the offer also gives
  // the tail's place, tail_recv - recv in 16-byte units (the caller checked that it fits).
  char* direct_at[PipelineSlots::kMaxRanks];
};

// Lanes per peer for a world: about 16 pushing blocks in all, as many copying out. Where ranks
// share a device (`ranks_per_device`, the most on one), every rank's blocks must be resident at
// once (the rings wait across kernels): at most half an H200's 528 blocks of 512 threads go to
// the device's all_gathers, and within that 32 / nranks lanes (docs/PERF.md, zero-copy).
int PipelineLanes(int nranks, int ranks_per_device);
// The chunk size of a call of `bytes` per rank with chunks of at most `chunk_max`.
size_t PipelineChunk(size_t bytes, int lanes, size_t chunk_max);

// Loads the kernel's module at init (transport/p2p/device_signals.h says why).
gpuError_t PreloadPipelinedAllGather();

// Launches the call on `stream` ((2 * (nranks - 1) + 1) * lanes blocks).
gpuError_t LaunchPipelinedAllGather(const PipelinedAllGatherArgs& args, gpuStream_t stream);

}  // namespace xccl
