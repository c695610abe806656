#include <cstdint>

#include "base/datatype.h"
#include "base/error.h"
#include "collectives/reduce/reduce_kernel.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/reduce_range.cuh"
#include "collectives/reduce/reduction.h"
#include "collectives/reduce/type_dispatch.cuh"

namespace xccl {

namespace {

struct ReduceInputs {
  const char* at[kMaxReduceInputs];
};

template <int kType>
__global__ void __launch_bounds__(kStepThreads)
    ReduceKernel(RedOp op, ReduceInputs inputs, int nranks, void* out, size_t count) {
  char* const outputs[1] = {static_cast<char*>(out)};
  ReduceRange<kType>(op, ReduceTargets{inputs.at, nranks, outputs, 1}, count,
                     blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
                     static_cast<size_t>(gridDim.x) * blockDim.x);
}

template <int kType>
gpuError_t Launch(RedOp op, const ReduceInputs& inputs, int nranks, void* out, size_t count,
                  gpuStream_t stream) {
  if (count == 0) return gpuSuccess;
  ReduceKernel<kType>
      <<<StepBlocks(count), kStepThreads, 0, stream>>>(op, inputs, nranks, out, count);
  return gpuGetLastError();
}

}  // namespace

gpuError_t PreloadReduce() {
  return ForEveryDataType([](auto type) { return LoadKernel(&ReduceKernel<type.value>); });
}

gpuError_t LaunchReduce(int datatype, int op, const void* const* inputs, int nranks, void* out,
                        size_t count, gpuStream_t stream) {
  if (op < static_cast<int>(RedOp::kSum) || op > static_cast<int>(RedOp::kAvg) || nranks < 1 ||
      nranks > kMaxReduceInputs)
    return gpuErrorInvalidValue;
  ReduceInputs table{};
  for (int r = 0; r < nranks; ++r) table.at[r] = static_cast<const char*>(inputs[r]);
  return WithDataType(datatype, [&](auto type) {
    return Launch<type.value>(static_cast<RedOp>(op), table, nranks, out, count, stream);
  });
}

}  // namespace xccl

namespace xccl {

xcclResult_t CheckReducible(const char* op_name, int nranks) {
  if (nranks > kMaxReduceInputs)
    return Fail(xcclInvalidUsage, "%s: a reduction over %d ranks; GPU builds reduce at most %d",
                op_name, nranks, kMaxReduceInputs);
  return xcclSuccess;
}

xcclResult_t ReduceOnStream(int datatype, int op, const void* const* inputs, int nranks, void* out,
                            size_t count, xcclStream_t stream) {
  const gpuError_t launched =
      LaunchReduce(datatype, op, inputs, nranks, out, count, static_cast<gpuStream_t>(stream));
  if (launched != gpuSuccess)
    return Fail(xcclUnhandledDeviceError, "reduction kernel: %s", gpuGetErrorString(launched));
  return xcclSuccess;
}

}  // namespace xccl
