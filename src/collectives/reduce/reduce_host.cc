#include <cstddef>

#include "base/error.h"
#include "collectives/reduce/reduction.h"

namespace xccl {

namespace {

template <int kType>
void ReduceElements(RedOp op, const void* const* inputs, int nranks, void* out, size_t count) {
  using Storage = typename Element<kType>::Storage;
  Storage* result = static_cast<Storage*>(out);
  for (size_t i = 0; i < count; ++i) {
    // Every input is read before the store: `out` may be one of them (in place).
    result[i] = ReduceInRankOrder<kType>(
        op, nranks, [&](int r) { return static_cast<const Storage*>(inputs[r])[i]; });
  }
}

}  // namespace

xcclResult_t ReduceOnHost(int datatype, int op, const void* const* inputs, int nranks, void* out,
                          size_t count) {
  if (op < static_cast<int>(RedOp::kSum) || op > static_cast<int>(RedOp::kAvg))
    return Fail(xcclInvalidArgument, "reduction op %d is none of sum, prod, max, min, avg", op);
  if (nranks < 1) return Fail(xcclInvalidArgument, "a reduction over %d ranks", nranks);
  const RedOp red = static_cast<RedOp>(op);
  switch (datatype) {
    case xcclInt8:
      ReduceElements<xcclInt8>(red, inputs, nranks, out, count);
      break;
    case xcclUint8:
      ReduceElements<xcclUint8>(red, inputs, nranks, out, count);
      break;
    case xcclInt32:
      ReduceElements<xcclInt32>(red, inputs, nranks, out, count);
      break;
    case xcclUint32:
      ReduceElements<xcclUint32>(red, inputs, nranks, out, count);
      break;
    case xcclInt64:
      ReduceElements<xcclInt64>(red, inputs, nranks, out, count);
      break;
    case xcclUint64:
      ReduceElements<xcclUint64>(red, inputs, nranks, out, count);
      break;
    case xcclFloat16:
      ReduceElements<xcclFloat16>(red, inputs, nranks, out, count);
      break;
    case xcclFloat32:
      ReduceElements<xcclFloat32>(red, inputs, nranks, out, count);
      break;
    case xcclFloat64:
      ReduceElements<xcclFloat64>(red, inputs, nranks, out, count);
      break;
    case xcclBfloat16:
      ReduceElements<xcclBfloat16>(red, inputs, nranks, out, count);
      break;
    case xcclFloat8e4m3:
      ReduceElements<xcclFloat8e4m3>(red, inputs, nranks, out, count);
      break;
    case xcclFloat8e5m2:
      ReduceElements<xcclFloat8e5m2>(red, inputs, nranks, out, count);
      break;
    default:
      return Fail(xcclInvalidArgument, "data type %d is none of xcclDataType_t", datatype);
  }
  return xcclSuccess;
}

}  // namespace xccl
