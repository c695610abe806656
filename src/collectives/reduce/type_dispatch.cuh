// The kernels' type switch (docs/ARCHITECTURE.md, "Reductions"): one template instantiation per
// xcclDataType_t, picked at launch, and every one of them loaded at init. CUDA loads kernels
// lazily, and a load waits for the device; where ranks share a GPU a peer's kernel may be waiting
// for this rank's next launch, so a first launch made mid-run can stall every rank.
#pragma once

#include <utility>

#include "collectives/reduce/data_type_switch.h"
#include "platform/gpu.h"
#include "xccl.h"

namespace xccl {

// f(DataTypeTag<datatype>{}); gpuErrorInvalidValue for a value outside the enum.
template <typename F>
gpuError_t WithDataType(int datatype, F&& f) {
  return SwitchDataType(datatype, gpuErrorInvalidValue, std::forward<F>(f));
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
