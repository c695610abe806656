#include "collectives/barrier/barrier.h"

#include "base/error.h"
#include "base/topology.h"
#include "collectives/barrier/barrier_slots.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"

namespace xccl {

namespace {

// `from`: the barrier's slots (barrier_slots.h).
xcclResult_t SignalsThenWaits(Communicator* comm, const SlotRange& from, uint32_t epoch,
                              const Deadline& deadline, PlatformFailure* failure) {
  Transport* transport = comm->transport();
  const int rank = comm->rank(), nranks = comm->nranks();
  for (int step = 1; step < nranks; ++step)
    transport->connection((rank + step) % nranks).Signal(from.at(rank), epoch);
  for (int step = 1; step < nranks; ++step) {
    const int peer = (rank - step + nranks) % nranks;
    XCCL_TRY(
        transport->WaitSlot(from.at(peer), epoch, peer, "barrier", deadline, nullptr, failure));
  }
  // Signals to other nodes are queued on the proxy: out before the call returns.
  return transport->Flush(deadline, failure);
}

// Across nodes (docs/ARCHITECTURE.md, "barrier"): the ranks of each node check in with its first
// rank; the first ranks run a dissemination barrier (round k: a signal to the node 2^k ahead, a
// wait for the one 2^k behind; their senders differ, so each keeps its own slot), then each
// releases its node. log2(nodes) rounds over the links the liveness overlay already holds.
xcclResult_t NodesThenRelease(Communicator* comm, const SlotRange& from, uint32_t epoch,
                              const Deadline& deadline, PlatformFailure* failure) {
  Transport* transport = comm->transport();
  const Topology& topology = comm->topology();
  const int rank = comm->rank();
  const std::vector<std::vector<int>> nodes = RanksByNode(topology);
  const int node_count = static_cast<int>(nodes.size());
  const int node = topology.node_of_rank[rank];
  const std::vector<int>& mine = nodes[node];
  const int first = mine[0];
  if (rank != first) {
    transport->connection(first).Signal(from.at(rank), epoch);
    return transport->WaitSlot(from.at(first), epoch, first, "barrier", deadline, nullptr, failure);
  }
  for (int r : mine)
    if (r != rank)
      XCCL_TRY(transport->WaitSlot(from.at(r), epoch, r, "barrier", deadline, nullptr, failure));
  for (int step = 1; step < node_count; step *= 2) {
    const int ahead = nodes[(node + step) % node_count][0];
    const int behind = nodes[(node + node_count - step % node_count) % node_count][0];
    transport->connection(ahead).Signal(from.at(rank), epoch);
    XCCL_TRY(
        transport->WaitSlot(from.at(behind), epoch, behind, "barrier", deadline, nullptr, failure));
  }
  for (int r : mine)
    if (r != rank) transport->connection(r).Signal(from.at(rank), epoch);
  return transport->Flush(deadline, failure);
}

}  // namespace

xcclResult_t Barrier(Communicator* comm, xcclStream_t stream) {
  DeviceEngine* engine = comm->device_engine();
  SlotRange from;
  if (engine == nullptr) XCCL_TRY(kBarrierSlots.Find(comm->slots(), &from));
  LaunchGate gate(comm, "xcclBarrier");
  XCCL_TRY(gate.Enter(stream));
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  Transport* transport = comm->transport();
  PlatformFailure failure;
  xcclResult_t result = transport->BeginOperation(stream, /*queued=*/false, &failure);
  if (result == xcclSuccess) {
    result = engine != nullptr
                 ? engine->barrier->Run(*transport, /*advance_epoch=*/true, stream, &failure)
             : comm->topology().node_count > 1
                 ? NodesThenRelease(comm, from, epoch, deadline, &failure)
                 : SignalsThenWaits(comm, from, epoch, deadline, &failure);
  }
  if (result != xcclSuccess) return comm->RecordFailure("xcclBarrier", failure);
  return gate.Leave();
}

}  // namespace xccl
