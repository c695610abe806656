#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "collectives/reduce/data_type_switch.h"
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

constexpr size_t kChunk = 512;

// Rank by rank over a chunk of accumulators, so that the compiler vectorises each pass; the
// order of the combines per element is ReduceInRankOrder's, so the bits are too. Every input of a
// chunk is read before the chunk is stored: `out` may be one of them (in place). The stages of a
// reduction across nodes (ReduceStage) read or write the accumulator type instead of the stored
// one: a node's partial stays unrounded until the last stage. `n` is a compile-time kChunk for
// every whole chunk: -O2's cost model vectorises only loops that need no scalar remainder.
template <int kType, RedOp kOp, ReduceStage kStage, typename Count>
void ReduceChunk(const void* const* inputs, int nranks, void* out, size_t base, Count n,
                 int avg_ranks) {
  using E = Element<kType>;
  using Storage = typename E::Storage;
  using Acc = typename E::Acc;
  constexpr bool kAccIn = kStage == ReduceStage::kPartials;
  constexpr bool kAccOut = kStage == ReduceStage::kPartial;
  const auto load = [inputs](int r, size_t i) {
    if constexpr (kAccIn)
      return LoadAt<Acc>(inputs[r], i);
    else
      return E::Load(LoadAt<Storage>(inputs[r], i));
  };
  Acc acc[kChunk];
  for (size_t i = 0; i < n; ++i) acc[i] = load(0, base + i);
  for (int r = 1; r < nranks; ++r) {
    for (size_t i = 0; i < n; ++i) acc[i] = Combine(kOp, acc[i], load(r, base + i));
  }
  if (kOp == RedOp::kAvg && !kAccOut) {
    for (size_t i = 0; i < n; ++i) acc[i] = FinishAvg(acc[i], avg_ranks);
  }
  for (size_t i = 0; i < n; ++i) {
    if constexpr (kAccOut)
      StoreAt<Acc>(out, base + i, acc[i]);
    else
      StoreAt<Storage>(out, base + i, E::Store(acc[i]));
  }
}

template <int kType, RedOp kOp, ReduceStage kStage>
void ReduceElements(const void* const* inputs, int nranks, void* out, size_t count, int avg_ranks) {
  size_t base = 0;
  for (; count - base >= kChunk; base += kChunk) {
    ReduceChunk<kType, kOp, kStage>(inputs, nranks, out, base,
                                    std::integral_constant<size_t, kChunk>(), avg_ranks);
  }
  if (base < count)
    ReduceChunk<kType, kOp, kStage>(inputs, nranks, out, base, count - base, avg_ranks);
}

template <int kType, ReduceStage kStage>
void ReduceElements(RedOp op, const void* const* inputs, int nranks, void* out, size_t count,
                    int avg_ranks) {
  switch (op) {
    case RedOp::kSum:
      return ReduceElements<kType, RedOp::kSum, kStage>(inputs, nranks, out, count, avg_ranks);
    case RedOp::kProd:
      return ReduceElements<kType, RedOp::kProd, kStage>(inputs, nranks, out, count, avg_ranks);
    case RedOp::kMax:
      return ReduceElements<kType, RedOp::kMax, kStage>(inputs, nranks, out, count, avg_ranks);
    case RedOp::kMin:
      return ReduceElements<kType, RedOp::kMin, kStage>(inputs, nranks, out, count, avg_ranks);
    case RedOp::kAvg:
      return ReduceElements<kType, RedOp::kAvg, kStage>(inputs, nranks, out, count, avg_ranks);
  }
}

template <ReduceStage kStage>
xcclResult_t ReduceStaged(int datatype, int op, const void* const* inputs, int nranks, void* out,
                          size_t count, int avg_ranks) {
  if (op < static_cast<int>(RedOp::kSum) || op > static_cast<int>(RedOp::kAvg))
    return Fail(xcclInvalidArgument, "reduction op %d is none of sum, prod, max, min, avg", op);
  if (nranks < 1) return Fail(xcclInvalidArgument, "a reduction over %d ranks", nranks);
  const RedOp red = static_cast<RedOp>(op);
  const bool known = SwitchDataType(datatype, false, [&](auto type) {
    ReduceElements<decltype(type)::value, kStage>(red, inputs, nranks, out, count, avg_ranks);
    return true;
  });
  if (known) return xcclSuccess;
  return Fail(xcclInvalidArgument, "data type %d is none of xcclDataType_t", datatype);
}

}  // namespace

xcclResult_t ReduceOnHost(int datatype, int op, const void* const* inputs, int nranks, void* out,
                          size_t count) {
  return ReduceStaged<ReduceStage::kWhole>(datatype, op, inputs, nranks, out, count, nranks);
}

xcclResult_t ReduceStageOnHost(ReduceStage stage, int datatype, int op, const void* const* inputs,
                               int n, void* out, size_t count, int nranks) {
  switch (stage) {
    case ReduceStage::kPartial:
      return ReduceStaged<ReduceStage::kPartial>(datatype, op, inputs, n, out, count, nranks);
    case ReduceStage::kPartials:
      return ReduceStaged<ReduceStage::kPartials>(datatype, op, inputs, n, out, count, nranks);
    default:
      return ReduceStaged<ReduceStage::kWhole>(datatype, op, inputs, n, out, count, nranks);
  }
}

size_t AccumulatorSize(int datatype) {
  return SwitchDataType(datatype, size_t{0}, [](auto type) {
    return sizeof(typename Element<decltype(type)::value>::Acc);
  });
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

xcclResult_t ReduceStageOnStream(ReduceStage stage, int datatype, int op, const void* const* inputs,
                                 int n, void* out, size_t count, int nranks,
                                 xcclStream_t /*stream*/) {
  return ReduceStageOnHost(stage, datatype, op, inputs, n, out, count, nranks);
}

xcclResult_t ReduceNodeByNodeOnStream(const Topology& topology, int datatype, int op,
                                      const void* const* inputs, void* out, size_t count,
                                      xcclStream_t /*stream*/) {
  const size_t partial = count * AccumulatorSize(datatype);
  std::vector<char> partials(topology.node_count * partial);
  std::vector<const void*> nodes(topology.node_count);
  for (int node = 0; node < topology.node_count; ++node) {
    std::vector<const void*> ranks;
    for (int r = 0; r < topology.nranks; ++r)
      if (topology.node_of_rank[r] == node) ranks.push_back(inputs[r]);
    nodes[node] = partials.data() + node * partial;
    XCCL_TRY(ReduceStageOnHost(ReduceStage::kPartial, datatype, op, ranks.data(),
                               static_cast<int>(ranks.size()), partials.data() + node * partial,
                               count, topology.nranks));
  }
  return ReduceStageOnHost(ReduceStage::kPartials, datatype, op, nodes.data(), topology.node_count,
                           out, count, topology.nranks);
}

}  // namespace xccl
#endif
