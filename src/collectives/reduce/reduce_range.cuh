// Device side of the owner's step (reduction.h's arithmetic, rank order): the elements a thread
// of a grid reduces, in 16-byte vectors where every input and output is 16-byte aligned
// (memory-bound: one vector load per input per 16 bytes, up to eight loads in flight per thread,
// over several vectors where there are few inputs),
// element by element otherwise and for the tail, byte by byte where a buffer is off its element
// alignment. The result goes to every one of `outputs` (the read engine's all_reduce writes each
// peer's copy). Every input of an index is read before its stores: an output may be an input.
// Included by .cu files only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/reduce/reduction.h"
#include "platform/gpu.h"

namespace xccl {

// Where one reduction reads and writes: `inputs` in rank order, the same result to every output.
struct ReduceTargets {
  const char* const* inputs;
  int nranks;
  char* const* outputs;
  int noutputs;
};

// Vector loads a thread issues before it combines the first (fewer where a vector holds 16
// accumulators, to stay within the kernels' 64 registers).
template <int kType>
constexpr int kLoadsInFlight = 16 / sizeof(typename Element<kType>::Storage) >= 16 ? 4 : 8;

template <int kType>
union VectorOf {
  static constexpr int kCount = 16 / sizeof(typename Element<kType>::Storage);
  uint4 raw;
  typename Element<kType>::Storage element[kCount];
};

// Folds `count` (at most kInputs) loaded inputs into `acc` in rank order, from input `first`; on
// the last inputs (`finish`) stores the result to every output at vector `v`. kInputs bounds an
// unrolled loop, so that `in` stays in registers.
template <int kType, int kInputs>
__device__ inline void CombineAndStore(RedOp op, const ReduceTargets& t, const VectorOf<kType>* in,
                                       int first, typename Element<kType>::Acc* acc, size_t v,
                                       int count, bool finish) {
  using E = Element<kType>;
  constexpr int kVector = VectorOf<kType>::kCount;
#pragma unroll
  for (int g = 0; g < kInputs; ++g) {
    if (g >= count) break;
#pragma unroll
    for (int k = 0; k < kVector; ++k) {
      const typename E::Acc value = E::Load(in[g].element[k]);
      acc[k] = first + g == 0 ? value : Combine(op, acc[k], value);
    }
  }
  if (!finish) return;
  VectorOf<kType> result;
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    result.element[k] = E::Store(op == RedOp::kAvg ? FinishAvg(acc[k], t.nranks) : acc[k]);
  for (int o = 0; o < t.noutputs; ++o) reinterpret_cast<uint4*>(t.outputs[o])[v] = result.raw;
}

// Any number of inputs: a thread's vectors one at a time, their inputs' loads kLoadsInFlight at
// a time.
template <int kType>
__device__ inline void ReduceVectors(RedOp op, const ReduceTargets& t, size_t vectors,
                                     size_t thread, size_t threads) {
  constexpr int kInFlight = kLoadsInFlight<kType>;
  for (size_t v = thread; v < vectors; v += threads) {
    typename Element<kType>::Acc acc[VectorOf<kType>::kCount];
    for (int first = 0; first < t.nranks; first += kInFlight) {
      VectorOf<kType> in[kInFlight];
      const int count = t.nranks - first < kInFlight ? t.nranks - first : kInFlight;
#pragma unroll
      for (int g = 0; g < kInFlight; ++g)
        if (g < count) in[g].raw = reinterpret_cast<const uint4*>(t.inputs[first + g])[v];
      CombineAndStore<kType, kInFlight>(op, t, in, first, acc, v, count,
                                        first + kInFlight >= t.nranks);
    }
  }
}

// Few inputs (nranks * kGroup <= kLoadsInFlight): a thread takes kGroup vectors `threads` apart
// at once and issues every load of all of them before combining any, so that 1 to 4 inputs keep
// as many loads in flight as 8 do (one vector of 2 inputs left the memory system idle at 2 ranks).
template <int kType, int kGroup>
__device__ inline void ReduceVectorGroups(RedOp op, const ReduceTargets& t, size_t vectors,
                                          size_t thread, size_t threads) {
  constexpr int kRanks = kLoadsInFlight<kType> / kGroup;
  for (size_t v = thread; v < vectors; v += threads * kGroup) {
    VectorOf<kType> in[kGroup][kRanks];
#pragma unroll
    for (int u = 0; u < kGroup; ++u)
#pragma unroll
      for (int g = 0; g < kRanks; ++g)
        if (g < t.nranks && v + u * threads < vectors)
          in[u][g].raw = reinterpret_cast<const uint4*>(t.inputs[g])[v + u * threads];
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      if (v + u * threads >= vectors) break;
      typename Element<kType>::Acc acc[VectorOf<kType>::kCount];
      CombineAndStore<kType, kRanks>(op, t, in[u], 0, acc, v + u * threads, t.nranks, true);
    }
  }
}

template <int kType>
__device__ inline void ReduceRange(RedOp op, const ReduceTargets& t, size_t count, size_t thread,
                                   size_t threads) {
  using Storage = typename Element<kType>::Storage;
  constexpr int kVector = 16 / sizeof(Storage);
  auto all_aligned = [&t](size_t alignment) {
    bool aligned = true;
    for (int r = 0; r < t.nranks; ++r)
      aligned = aligned && reinterpret_cast<uintptr_t>(t.inputs[r]) % alignment == 0;
    for (int o = 0; o < t.noutputs; ++o)
      aligned = aligned && reinterpret_cast<uintptr_t>(t.outputs[o]) % alignment == 0;
    return aligned;
  };
  const size_t vectors = all_aligned(16) ? count / kVector : 0;
  constexpr int kInFlight = kLoadsInFlight<kType>;
  if (t.nranks * 2 <= kInFlight)
    ReduceVectorGroups<kType, 2>(op, t, vectors, thread, threads);
  else
    ReduceVectors<kType>(op, t, vectors, thread, threads);
  if (all_aligned(sizeof(Storage))) {
    for (size_t i = vectors * kVector + thread; i < count; i += threads) {
      const Storage value = ReduceInRankOrder<kType>(
          op, t.nranks, [&](int r) { return reinterpret_cast<const Storage*>(t.inputs[r])[i]; });
      for (int o = 0; o < t.noutputs; ++o) reinterpret_cast<Storage*>(t.outputs[o])[i] = value;
    }
    return;
  }
  // Buffers off their element alignment (any byte address is allowed): bytewise loads and stores.
  for (size_t i = thread; i < count; i += threads) {
    const Storage value = ReduceInRankOrder<kType>(op, t.nranks, [&](int r) {
      Storage v;
      memcpy(&v, t.inputs[r] + i * sizeof(Storage), sizeof(Storage));
      return v;
    });
    for (int o = 0; o < t.noutputs; ++o)
      memcpy(t.outputs[o] + i * sizeof(Storage), &value, sizeof(Storage));
  }
}

}  // namespace xccl
