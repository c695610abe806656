#include <algorithm>
#include <cstddef>
#include <cstring>

#include "base/error.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/reduction.h"

namespace xccl {

namespace {

// Elements at any byte address: user buffers need not be aligned to their element size.
template <typename T>
T LoadAt(const void* base, size_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void StoreAt(void* base, size_t i, T value) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &value, sizeof(T));
}

// Rank by rank over a chunk of accumulators, so that the compiler vectorises each pass; the
// order of the combines per element is ReduceInRankOrder's, so the bits are too. Every input of a
// chunk is read before the chunk is stored: `out` may be one of them (in place).
template <int kType, RedOp kOp>
void ReduceElements(const void* const* inputs, int nranks, void* out, size_t count) {
  using E = Element<kType>;
  using Storage = typename E::Storage;
  constexpr size_t kChunk = 512;
  typename E::Acc acc[kChunk];
  for (size_t base = 0; base < count; base += kChunk) {
    const size_t n = std::min(kChunk, count - base);
    for (size_t i = 0; i < n; ++i) acc[i] = E::Load(LoadAt<Storage>(inputs[0], base + i));
    for (int r = 1; r < nranks; ++r) {
      for (size_t i = 0; i < n; ++i)
        acc[i] = Combine(kOp, acc[i], E::Load(LoadAt<Storage>(inputs[r], base + i)));
    }
    if (kOp == RedOp::kAvg) {
      for (size_t i = 0; i < n; ++i) acc[i] = FinishAvg(acc[i], nranks);
    }
    for (size_t i = 0; i < n; ++i) StoreAt<Storage>(out, base + i, E::Store(acc[i]));
  }
}

template <int kType>
void ReduceElements(RedOp op, const void* const* inputs, int nranks, void* out, size_t count) {
  switch (op) {
    case RedOp::kSum:
      return ReduceElements<kType, RedOp::kSum>(inputs, nranks, out, count);
    case RedOp::kProd:
      return ReduceElements<kType, RedOp::kProd>(inputs, nranks, out, count);
    case RedOp::kMax:
      return ReduceElements<kType, RedOp::kMax>(inputs, nranks, out, count);
    case RedOp::kMin:
      return ReduceElements<kType, RedOp::kMin>(inputs, nranks, out, count);
    case RedOp::kAvg:
      return ReduceElements<kType, RedOp::kAvg>(inputs, nranks, out, count);
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

#if defined(XCCL_PLATFORM_HOST)
namespace xccl {

xcclResult_t CheckReducible(const char* /*op_name*/, int /*nranks*/) {
  return xcclSuccess;  // any rank count
}

xcclResult_t ReduceOnStream(int datatype, int op, const void* const* inputs, int nranks, void* out,
                            size_t count, xcclStream_t /*stream: host steps are immediate*/) {
  return ReduceOnHost(datatype, op, inputs, nranks, out, count);
}

}  // namespace xccl
#endif
