#include "collectives/reduce/read_reduce_kernel.h"
#include "collectives/reduce/reduce_range.cuh"
#include "collectives/reduce/reduction.h"
#include "transport/p2p/device_wait.cuh"

namespace xccl {

namespace {

constexpr int kThreads = 512;

struct KernelArgs {
  uint32_t* const* peer_slots;
  const uint32_t* own_slots;
  const uint32_t* device_epoch;
  int offers, rank, nranks;
  const char* send;
  size_t first_byte;
  char* out;
  size_t count;
  uint64_t timeout_ns;
  DeviceFailureRecord* record;
};

// One block: offers this rank's send buffer to every peer (the address, then the epoch with a
// release store) and waits for every peer's offer of this epoch, one thread per peer. Only this
// small kernel waits: the reduction that follows never does, so a grid of any size never holds
// SMs that a peer's offer needs (ranks sharing a GPU).
__global__ void OfferKernel(KernelArgs a) {
  const int s = threadIdx.x;
  if (s >= a.nranks || s == a.rank) return;
  const uint32_t target = *a.device_epoch;  // advanced by the operation's BeginOperation
  uint32_t* offer = a.peer_slots[s] + a.offers + kOfferWords * a.rank;
  const uint64_t address = reinterpret_cast<uintptr_t>(a.send);
  reinterpret_cast<volatile uint32_t*>(offer)[2] = static_cast<uint32_t>(address);
  reinterpret_cast<volatile uint32_t*>(offer)[3] = static_cast<uint32_t>(address >> 32);
  GpuStoreReleaseSystem(offer, target);
  WaitSlot(a.own_slots + a.offers + kOfferWords * s, target, s, a.timeout_ns, a.record);
}

template <int kType>
__global__ void __launch_bounds__(kThreads) ReadReduceKernel(RedOp op, KernelArgs a) {
  __shared__ const char* inputs[kMaxReduceInputs];
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  __syncthreads();
  const int s = threadIdx.x;
  if (s < a.nranks) {
    if (s == a.rank) {
      inputs[s] = a.send + a.first_byte;
    } else {
      // The offer kernel saw every offer of this epoch, unless it gave up: then nothing is read
      // (an older offer may name a buffer freed since).
      const volatile uint32_t* words = a.own_slots + a.offers + kOfferWords * s;
      if (!Reached(words[0], *a.device_epoch)) {
        failed = 1;
      } else {
        const uint64_t address = words[2] | (static_cast<uint64_t>(words[3]) << 32);
        inputs[s] = reinterpret_cast<const char*>(static_cast<uintptr_t>(address)) + a.first_byte;
      }
    }
  }
  __syncthreads();
  if (failed) return;  // the offer kernel recorded the failure for the host
  ReduceRange<kType>(op, inputs, a.nranks, a.out, a.count,
                     blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
                     static_cast<size_t>(gridDim.x) * blockDim.x);
}

template <int kType>
gpuError_t Launch(RedOp op, const KernelArgs& args, int blocks, gpuStream_t stream) {
  OfferKernel<<<1, 32 * ((args.nranks + 31) / 32), 0, stream>>>(args);
  const gpuError_t offered = gpuGetLastError();
  if (offered != gpuSuccess) return offered;
  ReadReduceKernel<kType><<<blocks, kThreads, 0, stream>>>(op, args);
  return gpuGetLastError();
}

}  // namespace

gpuError_t PreloadReadReduce() {
  gpuFuncAttributes_t attributes;
  const gpuError_t offer =
      gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&OfferKernel));
  if (offer != gpuSuccess) return offer;
  return gpuFuncGetAttributes(&attributes,
                              reinterpret_cast<const void*>(&ReadReduceKernel<xcclFloat32>));
}

gpuError_t LaunchReadReduce(const DeviceView& view, const ReadReduceCall& call, int datatype,
                            int op, gpuStream_t stream) {
  if (op < static_cast<int>(RedOp::kSum) || op > static_cast<int>(RedOp::kAvg) ||
      view.nranks > kMaxReduceInputs || view.nranks > kThreads)
    return gpuErrorInvalidValue;
  KernelArgs a{view.peer_slots, view.own_slots, view.device_epoch, call.offers,
               view.rank,       view.nranks,    call.send,         call.first_byte,
               call.out,        call.count,     view.timeout_ns,   view.record};
  const RedOp red = static_cast<RedOp>(op);
  const int blocks = call.blocks;
  switch (datatype) {
    case xcclInt8:
      return Launch<xcclInt8>(red, a, blocks, stream);
    case xcclUint8:
      return Launch<xcclUint8>(red, a, blocks, stream);
    case xcclInt32:
      return Launch<xcclInt32>(red, a, blocks, stream);
    case xcclUint32:
      return Launch<xcclUint32>(red, a, blocks, stream);
    case xcclInt64:
      return Launch<xcclInt64>(red, a, blocks, stream);
    case xcclUint64:
      return Launch<xcclUint64>(red, a, blocks, stream);
    case xcclFloat16:
      return Launch<xcclFloat16>(red, a, blocks, stream);
    case xcclFloat32:
      return Launch<xcclFloat32>(red, a, blocks, stream);
    case xcclFloat64:
      return Launch<xcclFloat64>(red, a, blocks, stream);
    case xcclBfloat16:
      return Launch<xcclBfloat16>(red, a, blocks, stream);
    case xcclFloat8e4m3:
      return Launch<xcclFloat8e4m3>(red, a, blocks, stream);
    case xcclFloat8e5m2:
      return Launch<xcclFloat8e5m2>(red, a, blocks, stream);
    default:
      return gpuErrorInvalidValue;
  }
}

}  // namespace xccl
