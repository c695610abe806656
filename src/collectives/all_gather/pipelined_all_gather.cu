#include <algorithm>

#include "collectives/all_gather/pipelined_all_gather.h"
#include "transport/p2p/device_copy.cuh"

namespace xccl {

namespace {

constexpr int kThreads = 512;

// Chunks of a call that fall on `lane` (chunk k goes to lane k % lanes).
__device__ inline uint32_t LaneChunks(size_t chunks, int lane, int lanes) {
  return chunks > static_cast<size_t>(lane) ? static_cast<uint32_t>((chunks - 1 - lane) / lanes + 1)
                                            : 0u;
}

// `lanes` blocks copy `bytes` together, striding through them side by side rather than each
// taking its own chunks: the stores of all lanes stay close (DRAM pages, TLB reach).
__device__ inline void LanesTogetherCopy(char* dst, const char* src, size_t bytes, int lane,
                                         int lanes) {
  CopyBytes<false>(dst, src, bytes, static_cast<size_t>(lane) * blockDim.x + threadIdx.x,
                   static_cast<size_t>(lanes) * blockDim.x);
}

// The part of [offset, offset + n) of a block that lies in its head (the rest is in the tail).
// `kTail`: the call has a tail; without one the kernel is compiled as if parts did not exist, so
// that a plain all_gather's copy loops stay as tight as they were.
template <bool kTail>
__device__ inline size_t HeadPart(const PipelinedAllGatherArgs& a, size_t offset, size_t n) {
  if (!kTail) return n;
  return offset >= a.head ? 0 : (a.head - offset < n ? a.head - offset : n);
}

// dst <- [offset, offset + n) of this rank's block, dst contiguous (a ring slot).
template <bool kTail>
__device__ inline void CopyFromBlock(char* dst, const PipelinedAllGatherArgs& a, size_t offset,
                                     size_t n) {
  const size_t first = HeadPart<kTail>(a, offset, n);
  if (first > 0) CopyBytes<false>(dst, a.send + offset, first, threadIdx.x, blockDim.x);
  if (n > first)
    CopyBytes<false>(dst + first, a.tail_send + (offset + first - a.head), n - first, threadIdx.x,
                     blockDim.x);
}

// [offset, offset + n) of a block whose head lands at `head_at` and tail at `tail_at` <- src.
template <bool kTail, bool kFreshSource>
__device__ inline void CopyIntoBlock(char* head_at, char* tail_at, const PipelinedAllGatherArgs& a,
                                     size_t offset, const char* src, size_t n) {
  const size_t first = HeadPart<kTail>(a, offset, n);
  if (first > 0) CopyBytes<kFreshSource>(head_at + offset, src, first, threadIdx.x, blockDim.x);
  if (n > first)
    CopyBytes<kFreshSource>(tail_at + (offset + first - a.head), src + first, n - first,
                            threadIdx.x, blockDim.x);
}

// Thread 0 waits; every thread of the block learns whether the wait succeeded.
__device__ inline bool BlockWait(const uint32_t* slot, uint32_t target, int peer,
                                 const PipelinedAllGatherArgs& a) {
  __shared__ int ok;
  if (threadIdx.x == 0) ok = WaitSlot(slot, target, peer, a.timeout_ns, a.record) ? 1 : 0;
  __syncthreads();
  const bool result = ok != 0;
  __syncthreads();  // `ok` is reused by the next wait
  return result;
}

// Reads peer's offer for this rank's next call on `lane` (every thread gets it, and the tail's
// distance from it in `tail_units` of 16 bytes); nullptr and *ok false when the wait gave up.
__device__ inline char* ReadOffer(const PipelinedAllGatherArgs& a, int peer, int lane, bool* ok,
                                  int64_t* tail_units) {
  __shared__ char* offered;
  __shared__ int32_t tail;
  uint32_t* own_read = a.own_slots + a.offer_first + DirectSlots::OffersRead(peer, lane);
  const uint32_t* offer = a.peer_slots[peer] + a.offer_first + DirectSlots::Offer(a.rank, lane);
  const uint32_t call = *own_read + 1;  // only this block writes it, at the end of its calls
  *ok = BlockWait(offer, call, peer, a);
  if (!*ok) return nullptr;
  if (threadIdx.x == 0) {
    const volatile uint32_t* words = offer;
    offered = reinterpret_cast<char*>((static_cast<uintptr_t>(words[2]) << 32) | words[1]);
    tail = static_cast<int32_t>(words[3]);
    *own_read = call;
  }
  __syncthreads();
  char* result = offered;
  *tail_units = tail;
  __syncthreads();  // `offered` is reused by the next read
  return result;
}

// Writes this rank's share of the block straight into peer's receive buffer at `at`, in pieces
// of kStraightPiece dealt round-robin to the lanes, then the call's delivery count. Pieces of
// 128 KiB beat both the ring's 512 KiB chunks and lanes striding side by side (2 ranks sharing
// an H200 at 1 GiB, docs/perf-history.md).
constexpr size_t kStraightPiece = size_t{128} << 10;
template <bool kTail>
__device__ void PushStraight(const PipelinedAllGatherArgs& a, int peer, int lane, char* at,
                             int64_t tail_units) {
  const uint32_t call = a.own_slots[a.offer_first + DirectSlots::OffersRead(peer, lane)];
  char* head_at = at + static_cast<size_t>(a.rank) * a.head;
  char* tail_at = at + tail_units * 16 + static_cast<size_t>(a.rank) * (a.bytes - a.head);
  for (size_t offset = static_cast<size_t>(lane) * kStraightPiece; offset < a.bytes;
       offset += static_cast<size_t>(a.lanes) * kStraightPiece) {
    const size_t n = a.bytes - offset < kStraightPiece ? a.bytes - offset : kStraightPiece;
    const size_t first = HeadPart<kTail>(a, offset, n);
    if (first > 0)
      CopyBytes<false>(head_at + offset, a.send + offset, first, threadIdx.x, blockDim.x);
    if (n > first)
      CopyBytes<false>(tail_at + (offset + first - a.head), a.tail_send + (offset + first - a.head),
                       n - first, threadIdx.x, blockDim.x);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();  // the whole block's stores before the count
    GpuStoreReleaseSystem(a.peer_slots[peer] + a.offer_first + DirectSlots::Delivered(a.rank, lane),
                          call);
  }
}

// Pushes this rank's chunks of `lane` into peer's ring, each followed by its `ready` count.
template <bool kTail>
__device__ void PushThroughRing(const PipelinedAllGatherArgs& a, int peer, int lane,
                                size_t chunks) {
  uint32_t* own_sent = a.own_slots + a.ring_first + PipelineSlots::Sent(peer, lane);
  const uint32_t* credit = a.own_slots + a.ring_first + PipelineSlots::Credit(peer, lane);
  uint32_t* ready = a.peer_slots[peer] + a.ring_first + PipelineSlots::Ready(a.rank, lane);
  char* ring = a.inbox_at_peer[peer] + static_cast<size_t>(lane) * a.slots_per_lane * a.slot_stride;
  const uint32_t base = *own_sent;  // only this block writes it, at the end of the previous call
  const uint32_t count = LaneChunks(chunks, lane, a.lanes);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t j = base + i;
    // Slot j % S is free once chunk j - S was consumed, i.e. credit >= j + 1 - S.
    if (!BlockWait(credit, j + 1 - a.slots_per_lane, peer, a)) return;
    const size_t offset = (static_cast<size_t>(lane) + static_cast<size_t>(i) * a.lanes) * a.chunk;
    const size_t n = a.bytes - offset < a.chunk ? a.bytes - offset : a.chunk;
    CopyFromBlock<kTail>(ring + (j % a.slots_per_lane) * a.slot_stride, a, offset, n);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();  // the whole block's stores before the count
      GpuStoreReleaseSystem(ready, j + 1);
    }
  }
  if (threadIdx.x == 0) *own_sent = base + count;
}

// Either way to peer: as its offer for this call says.
template <bool kTail>
__device__ void Push(const PipelinedAllGatherArgs& a, int peer, int lane, size_t chunks) {
  bool ok = false;
  int64_t tail_units = 0;
  char* at = ReadOffer(a, peer, lane, &ok, &tail_units);
  if (!ok) return;
  if (at != nullptr) {
    PushStraight<kTail>(a, peer, lane, at, tail_units);
  } else {
    PushThroughRing<kTail>(a, peer, lane, chunks);
  }
}

// Copies the chunks of `lane` from src's ring in this rank's inbox into the receive buffer,
// returning each slot to src with a `credit` count.
template <bool kTail>
__device__ void DrainRing(const PipelinedAllGatherArgs& a, int src, int lane, size_t chunks) {
  uint32_t* own_consumed = a.own_slots + a.ring_first + PipelineSlots::Consumed(src, lane);
  const uint32_t* ready = a.own_slots + a.ring_first + PipelineSlots::Ready(src, lane);
  uint32_t* credit = a.peer_slots[src] + a.ring_first + PipelineSlots::Credit(a.rank, lane);
  const char* ring = a.own_inbox + static_cast<size_t>(src) * a.inbox_bytes +
                     static_cast<size_t>(lane) * a.slots_per_lane * a.slot_stride;
  char* head_out = a.recv + static_cast<size_t>(src) * a.head;
  char* tail_out = a.tail_recv + static_cast<size_t>(src) * (a.bytes - a.head);
  const uint32_t base = *own_consumed;
  const uint32_t count = LaneChunks(chunks, lane, a.lanes);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t j = base + i;
    if (!BlockWait(ready, j + 1, src, a)) return;
    const size_t offset = (static_cast<size_t>(lane) + static_cast<size_t>(i) * a.lanes) * a.chunk;
    const size_t n = a.bytes - offset < a.chunk ? a.bytes - offset : a.chunk;
    CopyIntoBlock<kTail, true>(head_out, tail_out, a, offset,
                               ring + (j % a.slots_per_lane) * a.slot_stride, n);
    // Every thread's loads of the slot have returned (their values are stored) once all pass
    // the barrier: the slot can go back to the sender.
    __syncthreads();
    if (threadIdx.x == 0) GpuStoreReleaseSystem(credit, j + 1);
  }
  if (threadIdx.x == 0) *own_consumed = base + count;
}

// Offers src this call's way in on `lane`, then receives it: the delivery count when src
// writes straight into the receive buffer, else its chunks through the ring.
template <bool kTail>
__device__ void Receive(const PipelinedAllGatherArgs& a, int src, int lane, size_t chunks) {
  uint32_t* offer = a.own_slots + a.offer_first + DirectSlots::Offer(src, lane);
  const uint32_t call = *offer + 1;  // only this block writes it
  char* at = a.direct_at[src];
  if (threadIdx.x == 0) {
    volatile uint32_t* words = offer;
    words[1] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(at));
    words[2] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(at) >> 32);
    words[3] = static_cast<uint32_t>(static_cast<int32_t>((a.tail_recv - a.recv) / 16));
    __threadfence_system();  // the address before its count
    GpuStoreReleaseSystem(offer, call);
  }
  if (at == nullptr) {
    DrainRing<kTail>(a, src, lane, chunks);
    return;
  }
  (void)BlockWait(a.own_slots + a.offer_first + DirectSlots::Delivered(src, lane), call, src, a);
}

template <bool kTail>
__global__ void __launch_bounds__(kThreads) PipelinedAllGatherKernel(PipelinedAllGatherArgs a) {
  const size_t chunks = (a.bytes + a.chunk - 1) / a.chunk;
  const int peers = a.nranks - 1;
  const int role = blockIdx.x / a.lanes;  // [0, peers): push, [peers, 2 peers): drain, last: own
  const int lane = blockIdx.x % a.lanes;
  if (role < peers) {
    Push<kTail>(a, (a.rank + 1 + role) % a.nranks, lane, chunks);
  } else if (role < 2 * peers) {
    Receive<kTail>(a, (a.rank - 1 - (role - peers) + a.nranks) % a.nranks, lane, chunks);
  } else {
    char* own = a.recv + static_cast<size_t>(a.rank) * a.head;
    if (own != a.send) LanesTogetherCopy(own, a.send, a.head, lane, a.lanes);
    const size_t tail = a.bytes - a.head;
    char* own_tail = a.tail_recv + static_cast<size_t>(a.rank) * tail;
    if (kTail && tail > 0 && own_tail != a.tail_send)
      LanesTogetherCopy(own_tail, a.tail_send, tail, lane, a.lanes);
  }
}

}  // namespace

gpuError_t PreloadPipelinedAllGather() {
  gpuFuncAttributes_t attributes;
  const gpuError_t plain = gpuFuncGetAttributes(
      &attributes, reinterpret_cast<const void*>(&PipelinedAllGatherKernel<false>));
  if (plain != gpuSuccess) return plain;
  return gpuFuncGetAttributes(&attributes,
                              reinterpret_cast<const void*>(&PipelinedAllGatherKernel<true>));
}

int PipelineLanes(int nranks, int ranks_per_device) {
  const int peers = std::max(1, nranks - 1);
  if (ranks_per_device <= 1) return std::max(1, std::min(16, 16 / peers));
  const int resident = 264 / (ranks_per_device * (2 * peers + 1));
  return std::max(1, std::min({16, 32 / std::max(1, nranks), resident}));
}

size_t PipelineChunk(size_t bytes, int lanes, size_t chunk_max) {
  if (bytes < 16) return std::max<size_t>(bytes, 1);
  const size_t per_lane = (bytes + lanes - 1) / lanes;
  return std::min(chunk_max, (per_lane + 15) / 16 * 16);
}

gpuError_t LaunchPipelinedAllGather(const PipelinedAllGatherArgs& args, gpuStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((2 * (args.nranks - 1) + 1) * args.lanes);
  if (args.head < args.bytes) {
    PipelinedAllGatherKernel<true><<<blocks, kThreads, 0, stream>>>(args);
  } else {
    PipelinedAllGatherKernel<false><<<blocks, kThreads, 0, stream>>>(args);
  }
  return gpuGetLastError();
}

}  // namespace xccl
