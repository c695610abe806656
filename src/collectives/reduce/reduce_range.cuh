// Device side of the owner's step (reduction.h's arithmetic, rank order): the elements a thread
// of a grid reduces, in 16-byte vectors where every input and output is 16-byte aligned
// (memory-bound: one vector load per input per 16 bytes, up to eight loads in flight per thread),
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

template <int kType>
__device__ inline void ReduceVectors(RedOp op, const ReduceTargets& t, size_t vectors,
                                     size_t thread, size_t threads) {
  using E = Element<kType>;
  using Storage = typename E::Storage;
  using Acc = typename E::Acc;
  constexpr int kVector = 16 / sizeof(Storage);
  // Loads issued before the first is combined (fewer where a vector holds 16 accumulators).
  constexpr int kInFlight = kVector >= 16 ? 4 : 8;
  union Vector {
    uint4 raw;
    Storage element[kVector];
  };
  for (size_t v = thread; v < vectors; v += threads) {
    Acc acc[kVector];
    for (int first = 0; first < t.nranks; first += kInFlight) {
      Vector in[kInFlight];
#pragma unroll
      for (int g = 0; g < kInFlight; ++g)
        if (first + g < t.nranks)
          in[g].raw = reinterpret_cast<const uint4*>(t.inputs[first + g])[v];
#pragma unroll
      for (int g = 0; g < kInFlight; ++g) {
        if (first + g >= t.nranks) break;
#pragma unroll
        for (int k = 0; k < kVector; ++k) {
          const Acc value = E::Load(in[g].element[k]);
          acc[k] = first + g == 0 ? value : Combine(op, acc[k], value);
        }
      }
    }
    Vector result;
#pragma unroll
    for (int k = 0; k < kVector; ++k)
      result.element[k] = E::Store(op == RedOp::kAvg ? FinishAvg(acc[k], t.nranks) : acc[k]);
    for (int o = 0; o < t.noutputs; ++o) reinterpret_cast<uint4*>(t.outputs[o])[v] = result.raw;
  }
}

// Two inputs and one output (reduce_scatter at 2 ranks): one vector of each would leave a thread 2
// loads in flight where 8 inputs give it 8, and a rank's grid cannot grow past its share of the
// SMs; so a thread takes kGroup vectors `threads` apart and issues all 2 * kGroup loads before
// combining (measured faster; with two outputs, all_reduce's, it was slower: docs/PERF.md). The
// arithmetic is ReduceVectors' for two inputs (rank 0's value, then rank 1's): the same bits.
template <int kType>
__device__ inline void ReducePairs(RedOp op, const ReduceTargets& t, size_t vectors, size_t thread,
                                   size_t threads) {
  using E = Element<kType>;
  using Storage = typename E::Storage;
  constexpr int kVector = 16 / sizeof(Storage);
  constexpr int kGroup = kVector == 8 ? 4 : 2;
  union Vector {
    uint4 raw;
    Storage element[kVector];
  };
  const uint4* const in0 = reinterpret_cast<const uint4*>(t.inputs[0]);
  const uint4* const in1 = reinterpret_cast<const uint4*>(t.inputs[1]);
  for (size_t v = thread; v < vectors; v += threads * kGroup) {
    Vector a[kGroup], b[kGroup];
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      if (v + u * threads < vectors) {
        a[u].raw = in0[v + u * threads];
        b[u].raw = in1[v + u * threads];
      }
    }
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      if (v + u * threads >= vectors) break;
#pragma unroll
      for (int k = 0; k < kVector; ++k) {
        typename E::Acc acc = Combine(op, E::Load(a[u].element[k]), E::Load(b[u].element[k]));
        a[u].element[k] = E::Store(op == RedOp::kAvg ? FinishAvg(acc, 2) : acc);
      }
      for (int o = 0; o < t.noutputs; ++o)
        reinterpret_cast<uint4*>(t.outputs[o])[v + u * threads] = a[u].raw;
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
  if (t.nranks == 2 && t.noutputs == 1)
    ReducePairs<kType>(op, t, vectors, thread, threads);
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
