// The reduction arithmetic of every reducing op (docs/ARCHITECTURE.md, "Reductions"), written once
// for host code and kernels: per data type how an element widens into its accumulator, how two
// accumulators combine, and how the result narrows back, rounded once.
//   - fp16, bf16 and both fp8 formats accumulate in fp32; fp32 in fp32; fp64 in fp64;
//   - integers wrap as two's complement (their own width);
//   - max and min of floats: NaN if either side is NaN;
//   - avg: the sum divided by the rank count (integers: truncated toward zero).
// The order is fixed: rank 0's value, then rank 1's, ... combined left to right, so every rank
// and every engine that follows it gets the same bits (ReduceInRankOrder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/host_device.h"
#include "collectives/reduce/reduce_limits.h"
#include "collectives/reduce/small_floats.h"
#include "xccl.h"

namespace xccl {

// Numbered as NCCL's ncclRedOp_t (and xcclRedOp_t).
enum class RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

// Per data type: Storage (as it lies in memory), Acc (what it reduces in), Load, Store.
template <int kType>
struct Element;

template <typename T>
struct PlainElement {
  using Storage = T;
  using Acc = T;
  XCCL_HOST_DEVICE static Acc Load(Storage v) { return v; }
  XCCL_HOST_DEVICE static Storage Store(Acc v) { return v; }
};

template <typename Format, typename Bits>
struct NarrowFloatElement {
  using Storage = Bits;
  using Acc = float;
  XCCL_HOST_DEVICE static Acc Load(Storage v) { return Format::ToFloat(v); }
  XCCL_HOST_DEVICE static Storage Store(Acc v) { return static_cast<Bits>(Format::FromFloat(v)); }
};

template <>
struct Element<xcclInt8> : PlainElement<int8_t> {};
template <>
struct Element<xcclUint8> : PlainElement<uint8_t> {};
template <>
struct Element<xcclInt32> : PlainElement<int32_t> {};
template <>
struct Element<xcclUint32> : PlainElement<uint32_t> {};
template <>
struct Element<xcclInt64> : PlainElement<int64_t> {};
template <>
struct Element<xcclUint64> : PlainElement<uint64_t> {};
template <>
struct Element<xcclFloat32> : PlainElement<float> {};
template <>
struct Element<xcclFloat64> : PlainElement<double> {};
template <>
struct Element<xcclFloat16> : NarrowFloatElement<Fp16, uint16_t> {};
template <>
struct Element<xcclBfloat16> : NarrowFloatElement<Bf16, uint16_t> {};
template <>
struct Element<xcclFloat8e4m3> : NarrowFloatElement<Fp8E4m3, uint8_t> {};
template <>
struct Element<xcclFloat8e5m2> : NarrowFloatElement<Fp8E5m2, uint8_t> {};

// a (the ranks before) combined with b (the next rank). Avg combines as a sum (FinishAvg).
template <typename Acc>
XCCL_HOST_DEVICE inline Acc Combine(RedOp op, Acc a, Acc b) {
  if constexpr (std::is_integral<Acc>::value) {
    // Unsigned arithmetic wraps without undefined behaviour; the cast back is two's complement.
    using U = typename std::make_unsigned<Acc>::type;
    switch (op) {
      case RedOp::kProd:
        return static_cast<Acc>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case RedOp::kMax:
        return a < b ? b : a;
      case RedOp::kMin:
        return b < a ? b : a;
      default:
        return static_cast<Acc>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
  } else {
    switch (op) {
      case RedOp::kProd:
        return a * b;
      case RedOp::kMax:
        return a != a ? a : (b != b ? b : (a < b ? b : a));
      case RedOp::kMin:
        return a != a ? a : (b != b ? b : (b < a ? b : a));
      default:
        return a + b;
    }
  }
}

// The avg's division of the sum by `nranks`, in the accumulator (integers truncate toward zero).
template <typename Acc>
XCCL_HOST_DEVICE inline Acc FinishAvg(Acc sum, int nranks) {
  if constexpr (std::is_signed<Acc>::value && std::is_integral<Acc>::value) {
    return static_cast<Acc>(static_cast<int64_t>(sum) / nranks);  // any rank count fits
  } else if constexpr (std::is_integral<Acc>::value) {
    return static_cast<Acc>(static_cast<uint64_t>(sum) / static_cast<uint64_t>(nranks));
  } else {
    return sum / static_cast<Acc>(nranks);
  }
}

// One element of the result from each rank's value, in rank order: `value(r)` is rank r's.
template <int kType, typename ValueOf>
XCCL_HOST_DEVICE inline typename Element<kType>::Storage ReduceInRankOrder(RedOp op, int nranks,
                                                                           ValueOf value) {
  using E = Element<kType>;
  typename E::Acc acc = E::Load(value(0));
  for (int r = 1; r < nranks; ++r) acc = Combine(op, acc, E::Load(value(r)));
  if (op == RedOp::kAvg) acc = FinishAvg(acc, nranks);
  return E::Store(acc);
}

// Host: out[i] = the reduction of inputs[r][i] over r in rank order, for `count` elements of
// `datatype` (xcclDataType_t). xcclInvalidArgument for a type or op outside the enums.
xcclResult_t ReduceOnHost(int datatype, int op, const void* const* inputs, int nranks, void* out,
                          size_t count);

// A reduction in two stages (across nodes, docs/ARCHITECTURE.md "Reductions across nodes"):
// each node's ranks in rank order into a partial of the accumulator type (kPartial: stored
// values in, unrounded accumulators out, avg not yet divided), then the partials in node order
// (kPartials: accumulators in, stored values out, rounded once, avg divided by `nranks`).
// kWhole is ReduceOnHost.
enum class ReduceStage { kWhole, kPartial, kPartials };
xcclResult_t ReduceStageOnHost(ReduceStage stage, int datatype, int op, const void* const* inputs,
                               int n, void* out, size_t count, int nranks);
// Bytes of one accumulator of `datatype` (fp32 for the 16- and 8-bit floats); 0 for no type.
size_t AccumulatorSize(int datatype);

}  // namespace xccl
