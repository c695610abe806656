// The kernels' type switch (docs/ARCHITECTURE.md, "Reductions"): one template instantiation per
// xcclDataType_t, picked at launch, and every one of them loaded at init. CUDA loads kernels
// lazily, and a load waits for the device; where ranks share a GPU a peer's kernel may be waiting
// for this rank's next launch, so a first launch made mid-run can stall every rank.
#pragma once

#include <type_traits>

#include "platform/gpu.h"
#include "xccl.h"

namespace xccl {

template <int kType>
using DataTypeTag = std::integral_constant<int, kType>;

// f(DataTypeTag<datatype>{}); gpuErrorInvalidValue for a value outside the enum.
template <typename F>
gpuError_t WithDataType(int datatype, F&& f) {
  switch (datatype) {
    case xcclInt8:
      return f(DataTypeTag<xcclInt8>{});
    case xcclUint8:
      return f(DataTypeTag<xcclUint8>{});
    case xcclInt32:
      return f(DataTypeTag<xcclInt32>{});
    case xcclUint32:
      return f(DataTypeTag<xcclUint32>{});
    case xcclInt64:
      return f(DataTypeTag<xcclInt64>{});
    case xcclUint64:
      return f(DataTypeTag<xcclUint64>{});
    case xcclFloat16:
      return f(DataTypeTag<xcclFloat16>{});
    case xcclFloat32:
      return f(DataTypeTag<xcclFloat32>{});
    case xcclFloat64:
      return f(DataTypeTag<xcclFloat64>{});
    case xcclBfloat16:
      return f(DataTypeTag<xcclBfloat16>{});
    case xcclFloat8e4m3:
      return f(DataTypeTag<xcclFloat8e4m3>{});
    case xcclFloat8e5m2:
      return f(DataTypeTag<xcclFloat8e5m2>{});
    default:
      return gpuErrorInvalidValue;
  }
}

// f for every type, stopping at the first error.
template <typename F>
gpuError_t ForEveryDataType(F&& f) {
  for (int datatype = 0; datatype < xcclNumTypes; ++datatype) {
    const gpuError_t error = WithDataType(datatype, f);
    if (error != gpuSuccess) return error;
  }
  return gpuSuccess;
}

// Loads `kernel` now (a function attribute query loads it).
template <typename Kernel>
gpuError_t LoadKernel(Kernel* kernel) {
  gpuFuncAttributes_t attributes;
  return gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
}

}  // namespace xccl
