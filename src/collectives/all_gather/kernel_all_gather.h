// The GPU kernel engine of all_gather, above the launches: its tuning per communicator (lanes
// per peer, ring slot size and count, the LL threshold) and one call, which takes the LL path
// for small blocks and the pipelined kernel for the rest (ll_all_gather.h,
// pipelined_all_gather.h). The window it works in is the p2p transport's (DeviceView).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/params.h"
#include "collectives/all_gather/gather_tail.h"
#include "platform/gpu.h"
#include "transport/device_view.h"
#include "transport/slot_map.h"
#include "xccl.h"

namespace xccl {

struct KernelAllGatherTuning {
  int lanes = 1;         // pushing blocks per peer
  size_t chunk_max = 0;  // the ring slot size, the largest chunk
  // A power of two, so that slot = counter % slots survives the wrap; 0 where the communicator
  // has no inboxes (every block is written in place, collectives/in_place_reach.h).
  size_t slots_per_lane = 1;
  size_t ll_bytes = 0;  // blocks up to this take the LL path
};

// Where the engine's counters live in every rank's control slots (transport/slot_map.h).
struct KernelAllGatherSlots {
  int rings = 0;        // PipelineSlots' counters start here
  int ll_counters = 0;  // LlLayout's call counters
  int offers = 0;       // DirectSlots' zero-copy words
};

// At init, before the map is laid: the engine's device-only slots.
xcclResult_t ReserveKernelAllGatherSlots(SlotMap* slots);
// After it is laid: where they went.
xcclResult_t FindKernelAllGatherSlots(const SlotMap& slots, KernelAllGatherSlots* out);

// From the parameters every rank shares (comm/shared_settings.h) and the inbox each source gets:
// lanes (automatic unless XCCL_ALLGATHER_LANES), ring slots of at most XCCL_ALLGATHER_CHUNK_BYTES
// with at least two per lane where the inbox allows, no ring where there is no inbox.
// xcclInvalidUsage where one slot per lane does not fit the inbox.
xcclResult_t TuneKernelAllGather(const Params& params, int nranks, int ranks_per_device,
                                 size_t inbox_bytes, KernelAllGatherTuning* out);

// Launches the all_gather of `bytes` per rank (and of `tail`, in the same kernel) on `stream`.
// `view`: this rank's window and the device tables of every peer's (the LL buffers in the
// staging area, the rings in the inboxes). `direct_at` [nranks]: the receive buffer as each
// source addresses it, where that source may write straight, else nullptr (the LL path ignores
// it: its flags travel in the data; with a tail, the tail's receive area must lie in the same
// buffer, at a multiple of 16 bytes from `recv`, else every block takes the rings). A call with a
// tail takes the pipelined kernel whatever its size.
// Whether some block of this call would go through a ring: the pipelined kernel runs and a
// source has no place offered (or the tail's place cannot be offered).
bool KernelAllGatherNeedsRings(const KernelAllGatherTuning& tuning, const DeviceView& view,
                               const void* recv, size_t bytes, const GatherTail& tail,
                               char* const* direct_at);

gpuError_t LaunchKernelAllGather(const KernelAllGatherTuning& tuning,
                                 const KernelAllGatherSlots& slots, const DeviceView& view,
                                 const void* send, void* recv, size_t bytes, const GatherTail& tail,
                                 char* const* direct_at, gpuStream_t stream);

}  // namespace xccl
