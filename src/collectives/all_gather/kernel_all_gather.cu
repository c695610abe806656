#include <algorithm>
#include <climits>
#include <cstddef>

#include "base/error.h"
#include "collectives/all_gather/kernel_all_gather.h"
#include "collectives/all_gather/ll_all_gather.h"
#include "collectives/all_gather/pipelined_all_gather.h"

namespace xccl {

namespace {

// Calls of at most this many bytes per rank run on one lane: a block per peer pushes the few
// KiB in well under a microsecond, and the launch has 2 (n-1) + 1 blocks instead of lanes times
// as many (launch and block scheduling are the whole cost there).
constexpr size_t kSmallCallBytes = 16 * 1024;

constexpr SlotName kRings{"all_gather.kernel.rings", SlotReach::kDeviceOnly};
constexpr SlotName kLlCounters{"all_gather.kernel.ll_counters", SlotReach::kDeviceOnly};
constexpr SlotName kOffers{"all_gather.kernel.offers", SlotReach::kDeviceOnly};

}  // namespace

xcclResult_t ReserveKernelAllGatherSlots(SlotMap* slots) {
  XCCL_TRY(kRings.Reserve(PipelineSlots::kCount, slots));
  XCCL_TRY(kLlCounters.Reserve(LlLayout::kCounters, slots));
  return kOffers.Reserve(DirectSlots::kCount, slots);
}

xcclResult_t FindKernelAllGatherSlots(const SlotMap& slots, KernelAllGatherSlots* out) {
  SlotRange rings, ll_counters, offers;
  XCCL_TRY(kRings.Find(slots, &rings));
  XCCL_TRY(kLlCounters.Find(slots, &ll_counters));
  XCCL_TRY(kOffers.Find(slots, &offers));
  out->rings = rings.first;
  out->ll_counters = ll_counters.first;
  out->offers = offers.first;
  return xcclSuccess;
}

xcclResult_t TuneKernelAllGather(const Params& params, int nranks, int ranks_per_device,
                                 size_t inbox_bytes, KernelAllGatherTuning* out) {
  KernelAllGatherTuning t;
  // XCCL_ALLGATHER_LANES overrides the automatic count (for measuring the lanes stage).
  t.lanes =
      params.allgather_lanes > 0
          ? static_cast<int>(std::min<int64_t>(params.allgather_lanes, PipelineSlots::kMaxLanes))
          : PipelineLanes(nranks, ranks_per_device);
  // The default slot, 512 KiB, makes a chunk's push (about 20 us over NVLink) long against its
  // flag traffic (1-2 us). Halved chunks stay multiples of 256 bytes (16-byte stores, aligned
  // slots) for any multiple of 256 the parameter takes.
  t.chunk_max = static_cast<size_t>(params.allgather_chunk_bytes);
  t.ll_bytes = static_cast<size_t>(std::min<int64_t>(params.ll_bytes, LlLayout::kMaxBytes));
  if (inbox_bytes == 0) {  // no ring: one rank (no kernel runs), or every block written in place
    t.slots_per_lane = 0;
    *out = t;
    return xcclSuccess;
  }
  // The rings take at most kRingWindowBytes of each rank's inboxes: all_gather ran as fast with
  // a 32 MiB window as with 512 MiB (docs/PERF.md, the window's size), and the inboxes grow to
  // what calls use (docs/ARCHITECTURE.md, "The GPU platform", the window).
  constexpr size_t kRingWindowBytes = size_t{32} << 20;
  const size_t ring_bytes =
      std::min(inbox_bytes, std::max<size_t>(kRingWindowBytes / nranks / 256 * 256, 256));
  while (t.chunk_max > 256 && ring_bytes / (t.lanes * t.chunk_max) < 2)
    t.chunk_max = std::max<size_t>(256, t.chunk_max / 2 / 256 * 256);
  const size_t slots = ring_bytes / (t.lanes * t.chunk_max);
  if (slots == 0)
    return Fail(xcclInvalidUsage,
                "XCCL_WINDOW_BYTES=%lld is too small for %d ranks (each inbox needs %zu bytes)",
                static_cast<long long>(params.window_bytes), nranks, t.lanes * t.chunk_max);
  while (t.slots_per_lane * 2 <= slots) t.slots_per_lane *= 2;
  *out = t;
  return xcclSuccess;
}

namespace {

// The offer carries the tail's place in 16-byte units of 32 bits.
bool TailOfferable(const void* recv, const GatherTail& tail) {
  if (tail.bytes == 0) return true;
  const ptrdiff_t distance = static_cast<const char*>(tail.recv) - static_cast<const char*>(recv);
  return distance % 16 == 0 && distance / 16 <= INT32_MAX && distance / 16 >= INT32_MIN;
}

}  // namespace

bool KernelAllGatherNeedsRings(const KernelAllGatherTuning& tuning, const DeviceView& view,
                               const void* recv, size_t bytes, const GatherTail& tail,
                               char* const* direct_at) {
  if (tail.bytes == 0 && bytes <= tuning.ll_bytes) return false;  // the LL path
  if (!TailOfferable(recv, tail)) return true;
  for (int src = 0; src < view.nranks; ++src)
    if (src != view.rank && direct_at[src] == nullptr) return true;
  return false;
}

gpuError_t LaunchKernelAllGather(const KernelAllGatherTuning& tuning,
                                 const KernelAllGatherSlots& slots, const DeviceView& view,
                                 const void* send, void* recv, size_t bytes, const GatherTail& tail,
                                 char* const* direct_at, gpuStream_t stream) {
  if (tail.bytes == 0 && bytes <= tuning.ll_bytes) {
    LlAllGatherArgs ll;
    ll.send = static_cast<const char*>(send);
    ll.recv = static_cast<char*>(recv);
    ll.bytes = bytes;
    ll.rank = view.rank;
    ll.nranks = view.nranks;
    ll.region_at_peer = view.staging_at_peer;
    ll.own_region = view.own_staging;
    ll.counters = view.own_slots + slots.ll_counters;
    ll.timeout_ns = view.timeout_ns;
    ll.record = view.record;
    return LaunchLlAllGather(ll, stream);
  }
  PipelinedAllGatherArgs args;
  args.send = static_cast<const char*>(send);
  args.recv = static_cast<char*>(recv);
  args.head = bytes;
  args.bytes = bytes + tail.bytes;
  args.tail_send = tail.bytes > 0 ? static_cast<const char*>(tail.send) : args.send;
  args.tail_recv = tail.bytes > 0 ? static_cast<char*>(tail.recv) : args.recv;
  const bool tail_offerable = TailOfferable(recv, tail);
  // Every rank picks the same lanes for the same call, so the per-lane counters stay in step.
  const int lanes = args.bytes <= kSmallCallBytes ? 1 : tuning.lanes;
  args.chunk = PipelineChunk(args.bytes, lanes, tuning.chunk_max);
  args.slot_stride = tuning.chunk_max;
  args.slots_per_lane = static_cast<uint32_t>(tuning.slots_per_lane);
  args.lanes = lanes;
  args.rank = view.rank;
  args.nranks = view.nranks;
  args.inbox_at_peer = view.inbox_at_peer;
  args.peer_slots = view.peer_slots;
  args.own_inbox = view.own_inbox;
  args.inbox_bytes = view.inbox_bytes;
  args.own_slots = view.own_slots;
  args.ring_first = slots.rings;
  args.offer_first = slots.offers;
  args.timeout_ns = view.timeout_ns;
  args.record = view.record;
  for (int src = 0; src < PipelineSlots::kMaxRanks; ++src)
    args.direct_at[src] =
        src < view.nranks && src != view.rank && tail_offerable ? direct_at[src] : nullptr;
  return LaunchPipelinedAllGather(args, stream);
}

}  // namespace xccl
