// Device side of the owner's step (reduction.h's arithmetic, rank order): the elements a thread
// of a grid reduces, in 16-byte vectors where every input and the output are 16-byte aligned
// (memory-bound: one vector load per input per 16 bytes), element by element otherwise and for the
// tail, byte by byte where a buffer is off its element alignment. Every input of an index is read
// before its store: the output may be one of the inputs. Included by .cu files only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/reduce/reduction.h"
#include "platform/gpu.h"

namespace xccl {

template <int kType>
__device__ inline void ReduceRange(RedOp op, const char* const* inputs, int nranks, char* out,
                                   size_t count, size_t thread, size_t threads) {
  using E = Element<kType>;
  using Storage = typename E::Storage;
  using Acc = typename E::Acc;
  constexpr int kVector = 16 / sizeof(Storage);
  union Vector {
    uint4 raw;
    Storage element[kVector];
  };
  bool aligned = reinterpret_cast<uintptr_t>(out) % 16 == 0;
  for (int r = 0; r < nranks; ++r)
    aligned = aligned && reinterpret_cast<uintptr_t>(inputs[r]) % 16 == 0;
  const size_t vectors = aligned ? count / kVector : 0;
  for (size_t v = thread; v < vectors; v += threads) {
    Acc acc[kVector];
    Vector in;
    in.raw = reinterpret_cast<const uint4*>(inputs[0])[v];
#pragma unroll
    for (int k = 0; k < kVector; ++k) acc[k] = E::Load(in.element[k]);
    for (int r = 1; r < nranks; ++r) {
      in.raw = reinterpret_cast<const uint4*>(inputs[r])[v];
#pragma unroll
      for (int k = 0; k < kVector; ++k) acc[k] = Combine(op, acc[k], E::Load(in.element[k]));
    }
    Vector result;
#pragma unroll
    for (int k = 0; k < kVector; ++k)
      result.element[k] = E::Store(op == RedOp::kAvg ? FinishAvg(acc[k], nranks) : acc[k]);
    reinterpret_cast<uint4*>(out)[v] = result.raw;
  }
  bool element_aligned = reinterpret_cast<uintptr_t>(out) % sizeof(Storage) == 0;
  for (int r = 0; r < nranks; ++r)
    element_aligned =
        element_aligned && reinterpret_cast<uintptr_t>(inputs[r]) % sizeof(Storage) == 0;
  if (element_aligned) {
    Storage* result = reinterpret_cast<Storage*>(out);
    for (size_t i = vectors * kVector + thread; i < count; i += threads) {
      result[i] = ReduceInRankOrder<kType>(
          op, nranks, [&](int r) { return reinterpret_cast<const Storage*>(inputs[r])[i]; });
    }
    return;
  }
  // Buffers off their element alignment (any byte address is allowed): bytewise loads and stores.
  for (size_t i = thread; i < count; i += threads) {
    const Storage value = ReduceInRankOrder<kType>(op, nranks, [&](int r) {
      Storage v;
      memcpy(&v, inputs[r] + i * sizeof(Storage), sizeof(Storage));
      return v;
    });
    memcpy(out + i * sizeof(Storage), &value, sizeof(Storage));
  }
}

}  // namespace xccl
