#include "collectives/reduce/read_reduce_kernel.h"
#include "collectives/reduce/reduce_range.cuh"
#include "collectives/reduce/reduction.h"
#include "collectives/reduce/type_dispatch.cuh"
#include "transport/p2p/device_wait.cuh"

namespace xccl {

namespace {

constexpr int kThreads = 512;

struct KernelArgs {
  uint32_t* const* peer_slots;
  uint32_t* own_slots;
  int offers, rank, nranks;
  BuffersAsSeen buffers;
  size_t first_byte;
  size_t out_byte;
  bool to_every_rank;
  int single_source;
  size_t count;
  uint64_t timeout_ns;
  DeviceFailureRecord* record;
};

__device__ inline void StoreAddress(uint32_t* words, const void* address) {
  const uint64_t value = reinterpret_cast<uintptr_t>(address);
  reinterpret_cast<volatile uint32_t*>(words)[0] = static_cast<uint32_t>(value);
  reinterpret_cast<volatile uint32_t*>(words)[1] = static_cast<uint32_t>(value >> 32);
}

__device__ inline char* LoadAddress(const uint32_t* words) {
  const volatile uint32_t* w = words;
  const uint64_t value = w[0] | (static_cast<uint64_t>(w[1]) << 32);
  return reinterpret_cast<char*>(static_cast<uintptr_t>(value));
}

// The first block to start opens the call for the whole grid: one thread per peer offers this
// rank's buffers and waits for that peer's offer, then the block publishes the call on this rank's
// own counters (device scope), where the other blocks wait for it. A block that started is
// resident, so the opener never waits behind blocks not yet scheduled; and only it touches the
// peers' windows, so a large grid costs no more system-scope traffic than a small one.
// Returns false (every thread of the block) where the call failed: nothing is read then.
__device__ bool OpenCall(const KernelArgs& a, uint32_t* counters, uint32_t call, int* failed,
                         int* opens) {
  using C = ReadReduceCounters;
  const int s = threadIdx.x;
  if (s == 0) {
    *opens = atomicAdd(counters + C::kStarted, 1u) == 0;
    *failed = 0;
  }
  __syncthreads();
  if (*opens) {
    if (s < a.nranks && s != a.rank) {
      // The buffers as rank s addresses them (its mapping where it is another process).
      uint32_t* offer = a.peer_slots[s] + a.offers + kOfferWords * a.rank;
      StoreAddress(offer + 2, a.buffers.send[s]);
      StoreAddress(offer + 4, a.buffers.recv[s]);
      GpuStoreReleaseSystem(offer, call);
      // Nothing is read after a give-up, this rank's or an earlier one (an offer may then be of
      // another call, naming a buffer freed since).
      if (!WaitSlot(a.own_slots + a.offers + kOfferWords * s, call, s, a.timeout_ns, a.record) ||
          GpuLoadAcquireSystem(&a.record->failure) != 0 ||
          GpuLoadAcquireSystem(&a.record->abort) != 0)
        *failed = 1;
    }
    __syncthreads();
    if (s == 0) {
      if (*failed) reinterpret_cast<volatile uint32_t*>(counters)[C::kFailed] = 1;
      GpuStoreReleaseDevice(counters + C::kOpened, call);
    }
  } else if (s == 0) {
    // The opener always publishes, failed or not; the deadline is a backstop behind its own.
    const unsigned long long start = GpuGlobalTimerNs();
    unsigned int polls = 0;
    while (GpuLoadAcquireDevice(counters + C::kOpened) != call) {
      if ((++polls & 1023u) == 0 && GiveUp(start, a.rank, 2 * a.timeout_ns, a.record)) {
        *failed = 1;
        break;
      }
    }
    if (!*failed) *failed = reinterpret_cast<volatile uint32_t*>(counters)[C::kFailed] != 0;
  }
  __syncthreads();
  return *failed == 0;
}

// One launch per call, so that where ranks share a GPU a rank's stream never holds, behind a
// kernel that waits for peers, a second kernel of the same call that a peer's wait needs
// (docs/ARCHITECTURE.md, "Ranks sharing a GPU"). The call opens (OpenCall), every block reduces
// its share and counts itself done; the last block closes: it tells every peer that this rank
// has finished with their buffers and waits for the same from each, so no rank's stream moves
// past the call while a peer may still read or write its buffers. A rank that gave up tells no
// peer it is done: they learn of the failure instead (the record, the abort). The call number
// lives on the device (graph replays count on).
template <int kType>
__global__ void __launch_bounds__(kThreads, 2) ReadReduceKernel(RedOp op, KernelArgs a) {
  using C = ReadReduceCounters;
  __shared__ const char* inputs[kMaxReduceInputs];
  __shared__ char* outputs[kMaxReduceInputs];
  __shared__ uint32_t call;
  __shared__ int failed, opens, last;
  uint32_t* const counters = a.own_slots + a.offers + kOfferWords * a.nranks;
  if (threadIdx.x == 0) call = reinterpret_cast<volatile uint32_t*>(counters)[C::kCalls] + 1;
  __syncthreads();
  const int s = threadIdx.x;
  if (OpenCall(a, counters, call, &failed, &opens)) {
    if (s < a.nranks) {
      const uint32_t* words = a.own_slots + a.offers + kOfferWords * s;
      inputs[s] = (s == a.rank ? a.buffers.send[s] : LoadAddress(words + 2)) + a.first_byte;
      outputs[s] = (s == a.rank ? a.buffers.recv[s] : LoadAddress(words + 4)) + a.out_byte;
    }
    __syncthreads();
    // This rank's output alone (reduce_scatter), or every rank's (all_reduce).
    char* const* targets = a.to_every_rank ? outputs : outputs + a.rank;
    // One source (broadcast), or every rank's in rank order.
    const bool single = a.single_source >= 0;
    ReduceRange<kType>(
        op,
        ReduceTargets{single ? inputs + a.single_source : inputs, single ? 1 : a.nranks, targets,
                      a.to_every_rank ? a.nranks : 1},
        a.count, blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
        static_cast<size_t>(gridDim.x) * blockDim.x);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (failed) reinterpret_cast<volatile uint32_t*>(counters)[C::kFailed] = 1;
    // Device scope is enough here: the last block's system fence below is cumulative over what
    // it has seen through the count, so the peers see every block's stores after the signal.
    __threadfence();
    last = atomicAdd(counters + C::kBlocksDone, 1u) == gridDim.x - 1;
    __threadfence();  // every block's count (and failure) before what the last block reads
    if (last) failed = reinterpret_cast<volatile uint32_t*>(counters)[C::kFailed] != 0;
  }
  __syncthreads();
  if (!last) return;
  if (threadIdx.x == 0) {
    // Back to 0 for the next call, which starts after this kernel ends; kOpened keeps this call.
    counters[C::kBlocksDone] = 0;
    counters[C::kFailed] = 0;
    counters[C::kStarted] = 0;
    counters[C::kCalls] = call;
  }
  if (failed || s >= a.nranks || s == a.rank) return;
  __threadfence_system();  // every block's stores (seen through the count) before the signal
  GpuStoreReleaseSystem(a.peer_slots[s] + a.offers + kOfferWords * a.rank + 1, call);
  WaitSlot(a.own_slots + a.offers + kOfferWords * s + 1, call, s, a.timeout_ns, a.record);
}

template <int kType>
gpuError_t Launch(RedOp op, const KernelArgs& args, int blocks, gpuStream_t stream) {
  ReadReduceKernel<kType><<<blocks, kThreads, 0, stream>>>(op, args);
  return gpuGetLastError();
}

}  // namespace

gpuError_t PreloadReadReduce() {
  return ForEveryDataType([](auto type) { return LoadKernel(&ReadReduceKernel<type.value>); });
}

gpuError_t LaunchReadReduce(const DeviceView& view, const ReadReduceCall& call, int datatype,
                            int op, gpuStream_t stream) {
  if (op < static_cast<int>(RedOp::kSum) || op > static_cast<int>(RedOp::kAvg) ||
      view.nranks > kMaxReduceInputs || view.nranks > kThreads || call.single_source >= view.nranks)
    return gpuErrorInvalidValue;
  KernelArgs a{view.peer_slots,    view.own_slots,     call.offers,     view.rank,
               view.nranks,        call.buffers,       call.first_byte, call.out_byte,
               call.to_every_rank, call.single_source, call.count,      view.timeout_ns,
               view.record};
  return WithDataType(datatype, [&](auto type) {
    return Launch<type.value>(static_cast<RedOp>(op), a, call.blocks, stream);
  });
}

}  // namespace xccl
