#include "base/error.h"
#include "collectives/device_engine.h"
#include "collectives/in_place_reach.h"
#include "transport/p2p/device_signals.h"

namespace xccl {

namespace {

// The inboxes carry what a peer cannot write or read in place: none for one rank (its calls are
// copies), none where all_gather writes and the read engine reads in place on every call and the
// dma engine cannot run.
bool InboxesUsed(const Params& params, const Topology& topology) {
  if (topology.nranks == 1) return false;
  const bool dma_possible = params.allgather_algo == "dma" && !topology.AnyDeviceShared();
  return !EveryCallInPlace(params, topology) ||
         PlanReadReach(params, topology) != ReadReach::kEveryCall || dma_possible;
}

}  // namespace

xcclResult_t PlanDeviceWindow(const Params& params, const Topology& topology, SlotMap* slots,
                              WindowGeometry* geometry) {
  // Every wait kernel watches at most kMaxWatchedRanks slots.
  if (topology.nranks > kMaxWatchedRanks)
    return Fail(xcclInvalidUsage, "the GPU platforms support at most %d ranks, not %d",
                kMaxWatchedRanks, topology.nranks);
  WindowGeometry g;
  XCCL_TRY(PlanAllGatherWindow(params, topology, InboxesUsed(params, topology), slots, &g));
  XCCL_TRY(ReserveReadReduceSlots(topology, slots));
  *geometry = g;
  return xcclSuccess;
}

xcclResult_t CreateDeviceEngine(const Params& params, const Topology& topology,
                                const WindowGeometry& geometry, const SlotMap& slots,
                                const Transport& transport, std::unique_ptr<DeviceEngine>* out) {
  auto engine = std::make_unique<DeviceEngine>();
  XCCL_TRY(
      CreateAllGatherEngine(params, topology, geometry, slots, transport, &engine->all_gather));
  XCCL_TRY(CreateBarrierEngine(topology, slots, &engine->barrier));
  XCCL_TRY(CreateReadReduceEngine(params, topology, slots, transport, &engine->read_reduce));
  XCCL_TRY(CreateNodeReduceEngine(topology, transport, &engine->node_reduce));
  *out = std::move(engine);
  return xcclSuccess;
}

}  // namespace xccl
