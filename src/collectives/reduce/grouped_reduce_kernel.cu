#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/topology.h"
#include "collectives/reduce/grouped_reduce_kernel.h"
#include "collectives/reduce/reduce_limits.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/reduction.h"
#include "collectives/reduce/type_dispatch.cuh"

namespace xccl {

namespace {

struct GroupTable {
  const char* at[kMaxReduceInputs];
  int end[kMaxReduceInputs];
};

// One element of `T` at `base[i]`; bytewise where the buffers are off their alignment.
template <typename T>
__device__ inline T LoadElement(const char* base, size_t i, bool aligned) {
  if (aligned) return reinterpret_cast<const T*>(base)[i];
  T v;
  memcpy(&v, base + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
__device__ inline void StoreElement(char* base, size_t i, T v, bool aligned) {
  if (aligned)
    reinterpret_cast<T*>(base)[i] = v;
  else
    memcpy(base + i * sizeof(T), &v, sizeof(T));
}

// Network-bound stages (a partial per step crosses the network): one element per thread and
// step is enough, so no vector path.
template <int kType, bool kAccIn, bool kAccOut>
__global__ void __launch_bounds__(kStepThreads)
    GroupedReduceKernel(RedOp op, GroupTable table, int groups, char* out, size_t count,
                        int avg_ranks, bool aligned) {
  using E = Element<kType>;
  using Acc = typename E::Acc;
  auto load = [&](int input, size_t i) -> Acc {
    if constexpr (kAccIn)
      return LoadElement<Acc>(table.at[input], i, aligned);
    else
      return E::Load(LoadElement<typename E::Storage>(table.at[input], i, aligned));
  };
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    Acc total{};
    int input = 0;
    for (int g = 0; g < groups; ++g) {
      Acc group = load(input++, i);
      for (; input < table.end[g]; ++input) group = Combine(op, group, load(input, i));
      total = g == 0 ? group : Combine(op, total, group);
    }
    if constexpr (kAccOut) {
      StoreElement<Acc>(out, i, total, aligned);
    } else {
      if (op == RedOp::kAvg) total = FinishAvg(total, avg_ranks);
      StoreElement<typename E::Storage>(out, i, E::Store(total), aligned);
    }
  }
}

template <int kType, bool kAccIn, bool kAccOut>
gpuError_t Launch(RedOp op, const GroupTable& table, int groups, void* out, size_t count,
                  int avg_ranks, bool aligned, gpuStream_t stream) {
  GroupedReduceKernel<kType, kAccIn, kAccOut><<<StepBlocks(count), kStepThreads, 0, stream>>>(
      op, table, groups, static_cast<char*>(out), count, avg_ranks, aligned);
  return gpuGetLastError();
}

}  // namespace

gpuError_t PreloadGroupedReduce() {
  return ForEveryDataType([](auto type) {
    gpuError_t error = LoadKernel(&GroupedReduceKernel<type.value, false, false>);
    if (error == gpuSuccess) error = LoadKernel(&GroupedReduceKernel<type.value, false, true>);
    if (error == gpuSuccess) error = LoadKernel(&GroupedReduceKernel<type.value, true, false>);
    return error;
  });
}

gpuError_t LaunchGroupedReduce(int datatype, int op, const GroupedReduceShape& shape, void* out,
                               size_t count, gpuStream_t stream) {
  if (op < static_cast<int>(RedOp::kSum) || op > static_cast<int>(RedOp::kAvg) ||
      shape.groups < 1 || shape.groups > kMaxReduceInputs ||
      (shape.accumulators_in && shape.accumulator_out))
    return gpuErrorInvalidValue;
  // Every group holds at least one input (its first is loaded, not combined).
  for (int g = 0; g < shape.groups; ++g)
    if (shape.group_ends[g] <= (g == 0 ? 0 : shape.group_ends[g - 1])) return gpuErrorInvalidValue;
  const int inputs = shape.group_ends[shape.groups - 1];
  if (inputs > kMaxReduceInputs) return gpuErrorInvalidValue;
  GroupTable table{};
  for (int i = 0; i < inputs; ++i) table.at[i] = static_cast<const char*>(shape.inputs[i]);
  for (int g = 0; g < shape.groups; ++g) table.end[g] = shape.group_ends[g];
  return WithDataType(datatype, [&](auto type) {
    if (count == 0) return gpuSuccess;  // the type was known
    using E = Element<type.value>;
    const size_t in_size =
        shape.accumulators_in ? sizeof(typename E::Acc) : sizeof(typename E::Storage);
    const size_t out_size =
        shape.accumulator_out ? sizeof(typename E::Acc) : sizeof(typename E::Storage);
    bool aligned = reinterpret_cast<uintptr_t>(out) % out_size == 0;
    for (int i = 0; i < inputs; ++i)
      aligned = aligned && reinterpret_cast<uintptr_t>(table.at[i]) % in_size == 0;
    const RedOp red = static_cast<RedOp>(op);
    if (shape.accumulators_in)
      return Launch<type.value, true, false>(red, table, shape.groups, out, count, shape.avg_ranks,
                                             aligned, stream);
    if (shape.accumulator_out)
      return Launch<type.value, false, true>(red, table, shape.groups, out, count, shape.avg_ranks,
                                             aligned, stream);
    return Launch<type.value, false, false>(red, table, shape.groups, out, count, shape.avg_ranks,
                                            aligned, stream);
  });
}

namespace {

xcclResult_t Launched(int datatype, int op, const GroupedReduceShape& shape, void* out,
                      size_t count, xcclStream_t stream, const char* what) {
  const gpuError_t launched =
      LaunchGroupedReduce(datatype, op, shape, out, count, static_cast<gpuStream_t>(stream));
  if (launched == gpuSuccess) return xcclSuccess;
  return Fail(xcclUnhandledDeviceError, "reduction kernel (%s): %s", what,
              gpuGetErrorString(launched));
}

}  // namespace

xcclResult_t ReduceStageOnStream(ReduceStage stage, int datatype, int op, const void* const* inputs,
                                 int n, void* out, size_t count, int nranks, xcclStream_t stream) {
  if (stage == ReduceStage::kWhole)
    return ReduceOnStream(datatype, op, inputs, n, out, count, stream);
  GroupedReduceShape shape;
  shape.inputs = inputs;
  shape.group_ends = &n;
  shape.groups = 1;
  shape.accumulators_in = stage == ReduceStage::kPartials;
  shape.accumulator_out = stage == ReduceStage::kPartial;
  shape.avg_ranks = nranks;
  return Launched(datatype, op, shape, out, count, stream, "a stage across nodes");
}

xcclResult_t ReduceNodeByNodeOnStream(const Topology& topology, int datatype, int op,
                                      const void* const* inputs, void* out, size_t count,
                                      xcclStream_t stream) {
  std::vector<const void*> grouped;
  std::vector<int> ends;
  for (int node = 0; node < topology.node_count; ++node) {
    for (int r = 0; r < topology.nranks; ++r)
      if (topology.node_of_rank[r] == node) grouped.push_back(inputs[r]);
    ends.push_back(static_cast<int>(grouped.size()));
  }
  GroupedReduceShape shape;
  shape.inputs = grouped.data();
  shape.group_ends = ends.data();
  shape.groups = topology.node_count;
  shape.avg_ranks = topology.nranks;
  return Launched(datatype, op, shape, out, count, stream, "node by node");
}

}  // namespace xccl
