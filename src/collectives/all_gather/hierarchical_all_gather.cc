#include "collectives/all_gather/hierarchical_all_gather.h"

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "base/failure.h"
#include "collectives/all_gather/rail_plan.h"
#include "collectives/queued_operation.h"
#include "collectives/region/inboxes.h"
#include "platform/runtime.h"

namespace xccl {

namespace {

struct Pieces {
  size_t chunk;
  uint32_t count;
  size_t Offset(uint32_t piece) const { return piece * chunk; }
  size_t Bytes(uint32_t piece, size_t block) const {
    return std::min(chunk, block - piece * chunk);
  }
};

xcclResult_t Run(Communicator* comm, const SlotRange& arrivals, const RailPlan& plan,
                 const Pieces& pieces, uint32_t first, const void* send, void* recv, size_t bytes,
                 xcclStream_t stream, const Deadline& deadline, PlatformFailure* failure) {
  Transport* transport = comm->transport();
  const Topology& topology = comm->topology();
  const int me = comm->rank();
  const uint32_t last = first + pieces.count - 1;
  const char* src = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);

  // This rank's block: over the network in pieces (the proxy sends them in order), then whole to
  // this node's peers (their queues copy it while the pieces travel).
  for (int target : plan.rail_targets) {
    Connection& connection = transport->connection(target);
    for (uint32_t piece = 0; piece < pieces.count; ++piece)
      connection.Put(first + piece, nullptr, me * bytes + pieces.Offset(piece),
                     src + pieces.Offset(piece), pieces.Bytes(piece, bytes), arrivals.at(me));
  }
  for (int peer : topology.local_ranks)
    if (peer != me)
      transport->connection(peer).Put(last, nullptr, me * bytes, send, bytes, arrivals.at(me));
  XCCL_TRY(
      CopyAsync(out + me * bytes, send, bytes, stream) == xcclSuccess
          ? xcclSuccess
          : SetFailure(failure, xcclSystemError, me, "local copy: %s", ThreadLastError().c_str()));

  // Blocks that land here, forwarded piece by piece as each arrives.
  for (uint32_t piece = 0; piece < pieces.count; ++piece) {
    for (int source : plan.forwarded_sources) {
      XCCL_TRY(transport->WaitSlot(arrivals.at(source), first + piece, source, "its data", deadline,
                                   stream, failure));
      const size_t at = source * bytes + pieces.Offset(piece);
      for (int peer : topology.local_ranks)
        if (peer != me)
          transport->connection(peer).Put(first + piece, nullptr, at, out + at,
                                          pieces.Bytes(piece, bytes), arrivals.at(source));
    }
  }
  // Everything else: this node's blocks from their owners, the other nodes' from the rank of
  // this node they landed at (a failure of their source reaches this rank through that rank).
  for (int source = 0; source < topology.nranks; ++source) {
    const std::vector<int>& forwarded = plan.forwarded_sources;
    if (source == me || std::find(forwarded.begin(), forwarded.end(), source) != forwarded.end())
      continue;
    XCCL_TRY(transport->WaitSlot(arrivals.at(source), last, plan.deliverer[source], "its data",
                                 deadline, stream, failure));
  }
  return transport->Flush(deadline, failure);
}

// One piece (`offset`, `piece` bytes of every block) through the inboxes, as one operation.
xcclResult_t RunPieceThroughInboxes(Communicator* comm, const SlotRange& arrivals,
                                    const RailPlan& plan, const Inboxes& inboxes, const char* src,
                                    char* out, size_t bytes, size_t offset, size_t piece,
                                    xcclStream_t stream, PlatformFailure* failure) {
  Transport* transport = comm->transport();
  const Topology& topology = comm->topology();
  const int me = comm->rank();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  XCCL_TRY(transport->BeginOperation(stream, /*queued=*/true, failure));
  auto copy = [&](char* to, const void* from) {
    return transport->Copy(to, from, piece, stream) == xcclSuccess
               ? xcclSuccess
               : SetFailure(failure, xcclUnhandledDeviceError, me, "copy of a piece: %s",
                            ThreadLastError().c_str());
  };
  // The network first: the rails are the slow stage, and this node's copies overlap them.
  const size_t own_inbox = inboxes.Offset(me, epoch);
  for (int target : plan.rail_targets)
    transport->connection(target).PutToRegion(epoch, own_inbox, src, piece, arrivals.at(me));
  for (int peer : topology.local_ranks)
    if (peer != me)
      transport->connection(peer).PutToRegion(epoch, own_inbox, src, piece, arrivals.at(me));
  xcclResult_t result = copy(out + me * bytes + offset, src);
  for (int source : plan.forwarded_sources) {
    if (result == xcclSuccess)
      result = transport->WaitSlot(arrivals.at(source), epoch, source, "its data", deadline, stream,
                                   failure);
    char* at = out + source * bytes + offset;
    if (result == xcclSuccess)
      result = copy(at, transport->Received(source, inboxes.Offset(source, epoch)));
    // Forwarded (or, after a failure, the slot raised all the same) so that no peer of this
    // node waits for it until its deadline: the device waits give up on the failure record.
    for (int peer : topology.local_ranks)
      if (peer != me)
        transport->connection(peer).PutToRegion(epoch, inboxes.Offset(source, epoch), at, piece,
                                                arrivals.at(source));
  }
  // Every other block in one wait: the forwarded ones again (their slots are reached already),
  // the rest as their carriers raise them; then the copies out.
  std::vector<int> raiser(plan.deliverer);
  for (int source : plan.forwarded_sources) raiser[source] = source;
  if (result == xcclSuccess)
    result = transport->WaitSlotsRaisedBy(arrivals.first, epoch, raiser, "its data", deadline,
                                          stream, failure);
  for (int source = 0; source < topology.nranks && result == xcclSuccess; ++source) {
    const std::vector<int>& forwarded = plan.forwarded_sources;
    if (source == me || std::find(forwarded.begin(), forwarded.end(), source) != forwarded.end())
      continue;
    const int carrier = plan.deliverer[source];
    result = copy(out + source * bytes + offset,
                  transport->Received(carrier, inboxes.Offset(source, epoch)));
  }
  // The closing step runs even after a failure: the peers wait for it.
  PlatformFailure closing;
  const xcclResult_t closed = EndQueuedOperation(comm, stream, deadline, &closing);
  if (result == xcclSuccess && closed != xcclSuccess) {
    *failure = closing;
    result = closed;
  }
  return result;
}

}  // namespace

xcclResult_t AllGatherAcrossNodesThroughInboxes(Communicator* comm, const SlotRange& arrivals,
                                                const void* send, void* recv, size_t bytes,
                                                xcclStream_t stream) {
  const RailPlan plan = PlanRails(comm->topology());
  const Inboxes inboxes = PlanInboxes(comm);
  for (size_t offset = 0; offset < bytes; offset += inboxes.piece_limit) {
    PlatformFailure failure;
    const xcclResult_t result = RunPieceThroughInboxes(
        comm, arrivals, plan, inboxes, static_cast<const char*>(send) + offset,
        static_cast<char*>(recv), bytes, offset, std::min(inboxes.piece_limit, bytes - offset),
        stream, &failure);
    if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
  }
  return xcclSuccess;
}

xcclResult_t AllGatherAcrossNodes(Communicator* comm, const SlotRange& arrivals, DirectPuts* direct,
                                  const void* send, void* recv, size_t bytes, xcclStream_t stream) {
  Pieces pieces;
  // Pieces pay where a landed block is forwarded inside its node; with one rank per node they
  // only add ops, so the block goes whole (every rank sees the same topology).
  const Topology& topology = comm->topology();
  const bool forwarding = static_cast<int>(topology.node_count) < topology.nranks;
  pieces.chunk = forwarding ? comm->net_chunk_bytes() : std::max<size_t>(bytes, 1);
  pieces.count = static_cast<uint32_t>((bytes + pieces.chunk - 1) / pieces.chunk);
  const uint32_t first = comm->NextEpochs(pieces.count);
  const uint32_t last = first + pieces.count - 1;
  const Deadline deadline(comm->timeout_ms());
  direct->PublishRecvRange(first, last, recv, comm->nranks() * bytes, bytes, pieces.chunk,
                           arrivals.first);
  PlatformFailure failure;
  const xcclResult_t result = Run(comm, arrivals, PlanRails(comm->topology()), pieces, first, send,
                                  recv, bytes, stream, deadline, &failure);
  if (result == xcclSuccess) return xcclSuccess;
  const xcclResult_t recorded = comm->RecordFailure("xcclAllGather", failure);
  // Queued puts may still read `send` and peers' puts may still write `recv`: both stop within
  // milliseconds of the announced failure, and the caller gets its buffers back only after that.
  PlatformFailure ignored;
  comm->transport()->Flush(Deadline(comm->timeout_ms()), &ignored);
  direct->CloseRecvBuffer(last, Deadline(comm->timeout_ms()));
  return recorded;
}

}  // namespace xccl
