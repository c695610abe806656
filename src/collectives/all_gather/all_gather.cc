#include "collectives/all_gather/all_gather.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/failure.h"
#include "collectives/all_gather/block_parts.h"
#include "collectives/all_gather/hierarchical_all_gather.h"
#include "collectives/alone_copy.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"
#include "collectives/queued_operation.h"
#include "collectives/region/arrivals.h"
#include "collectives/region/inboxes.h"
#include "collectives/zero_copy_targets.h"
#include "platform/runtime.h"

namespace xccl {

namespace {

// Direct puts (DirectPuts, blocks above the inbox size): publish the receive buffer, push
// this rank's block into every peer's receive buffer at once — queued peers first in rotated
// order (rank+2, rank+3, ...) so they start while this thread copies its own block, then this
// thread serves rank+1 itself — and wait for every peer's arrival.
xcclResult_t AllGatherDirect(Communicator* comm, const SlotRange& arrivals, DirectPuts* direct,
                             const void* send, void* recv, size_t bytes, xcclStream_t stream) {
  Transport* transport = comm->transport();
  const int rank = comm->rank(), nranks = comm->nranks();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  char* own_block = static_cast<char*>(recv) + rank * bytes;

  direct->PublishRecvBuffer(epoch, recv, nranks * bytes, bytes, arrivals.first);
  for (int step = 2; step < nranks; ++step) {
    transport->connection((rank + step) % nranks)
        .Put(epoch, /*dst: the published buffer*/ nullptr, rank * bytes, send, bytes,
             arrivals.at(rank));
  }
  xcclResult_t result = CopyAsync(own_block, send, bytes, stream);
  PlatformFailure failure;
  if (result != xcclSuccess)
    result = SetFailure(&failure, result, rank, "local copy: %s", ThreadLastError().c_str());
  if (result == xcclSuccess)
    result = direct->PutNow((rank + 1) % nranks, epoch, send, rank * bytes, bytes,
                            arrivals.at(rank), &failure);
  if (result == xcclSuccess) {
    result = WaitArrivals(
        transport, arrivals, rank, nranks, epoch, deadline, stream, [](int) {}, &failure);
  }
  if (result != xcclSuccess) {
    xcclResult_t recorded = comm->RecordFailure("xcclAllGather", failure);
    // The queues may still read `send`, and peers' puts may still write `recv`: both stop
    // within milliseconds once the failure is announced, and the caller gets its buffers back
    // only after that.
    PlatformFailure ignored;
    transport->Flush(Deadline(comm->timeout_ms()), &ignored);
    direct->CloseRecvBuffer(epoch, Deadline(comm->timeout_ms()));
    return recorded;
  }
  result = transport->Flush(deadline, &failure);
  if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
  return xcclSuccess;
}

// Through the inboxes (inboxes.h), in operations of at most a piece per block (a piece may span
// both parts: two puts, the flag on the second): every peer gets this rank's piece in its inbox
// (rotated order), the own piece is copied locally, and each peer's piece is copied out of this
// rank's inbox once it has arrived.
xcclResult_t AllGatherThroughInboxes(Communicator* comm, const SlotRange& arrivals,
                                     const BlockParts& block, xcclStream_t stream) {
  Transport* transport = comm->transport();
  DirectPuts* direct = transport->direct_puts();
  const int rank = comm->rank(), nranks = comm->nranks();
  const Inboxes inboxes = PlanInboxes(comm);
  const size_t bytes = block.bytes();
  size_t offset = 0;
  do {
    const size_t piece = std::min(inboxes.piece_limit, bytes - offset);
    const uint32_t epoch = comm->NextEpoch();
    const Deadline deadline(comm->timeout_ms());
    PlatformFailure failure;
    xcclResult_t result = transport->BeginOperation(stream, /*queued=*/true, &failure);
    if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
    // No buffer to write into (blocks go through the inboxes), but the block size is published
    // all the same: a peer that passed a larger count takes the direct path and would otherwise
    // wait for this rank's receive buffer until the deadline.
    if (direct != nullptr) direct->PublishRecvBuffer(epoch, nullptr, 0, piece, arrivals.first);
    // The put that raises the flag carries the piece's last run; it ends where the piece ends in
    // the sender's slice, which is what peers check (the same for any split of the block).
    size_t flagged = 0;
    for (int step = 1; step < nranks; ++step) {
      Connection& connection = transport->connection((rank + step) % nranks);
      block.ForEachRun(
          offset, piece,
          [&](const BlockParts::Part& p, size_t at, size_t run, size_t in_piece, bool last) {
            connection.PutToRegion(epoch, inboxes.Offset(rank, epoch) + in_piece, p.send + at, run,
                                   last ? arrivals.at(rank) : ControlLayout::kNoSignal);
            if (last) flagged = inboxes.Offset(rank, epoch) % inboxes.slice + in_piece + run;
          });
    }
    // Local copies fail only at their enqueue (a runtime error): the first one ends the call
    // once the arrivals are in.
    xcclResult_t copied = xcclSuccess;
    block.ForEachRun(offset, piece,
                     [&](const BlockParts::Part& p, size_t at, size_t run, size_t, bool) {
                       const xcclResult_t one =
                           transport->Copy(p.recv + rank * p.bytes + at, p.send + at, run, stream);
                       if (copied == xcclSuccess) copied = one;
                     });
    // A peer whose piece has another size passed another count (pieces are cut alike from
    // equal counts): nothing of it is copied, the wait for the others goes on, and then this
    // rank fails. That peer finds the same mismatch in this rank's piece, so both fail at once.
    int odd_peer = -1;
    size_t odd_bytes = 0;
    result = WaitArrivals(
        transport, arrivals, rank, nranks, epoch, deadline, stream,
        [&](int peer) {
          size_t end = flagged;
          if (transport->PutEnd(arrivals.at(peer), epoch, &end) && end != flagged) {
            if (odd_peer < 0) {
              odd_peer = peer;
              odd_bytes = end - (flagged - piece);  // where its piece ends, from its start
            }
            return;
          }
          block.ForEachRun(
              offset, piece,
              [&](const BlockParts::Part& p, size_t at, size_t run, size_t in_piece, bool) {
                const xcclResult_t one = transport->Copy(
                    p.recv + peer * p.bytes + at,
                    transport->Received(peer, inboxes.Offset(peer, epoch) + in_piece), run, stream);
                if (copied == xcclSuccess) copied = one;
              });
        },
        &failure);
    if (result == xcclSuccess && copied != xcclSuccess)
      result = SetFailure(&failure, copied, rank, "copy out of the inbox: %s",
                          ThreadLastError().c_str());
    if (result == xcclSuccess && odd_peer >= 0) {
      result = SetFailure(&failure, xcclInvalidUsage, odd_peer,
                          "rank %d sent a piece of %zu bytes at offset %zu of its block where "
                          "this rank's is %zu bytes: the ranks passed different counts",
                          odd_peer, odd_bytes, offset, piece);
    }
    if (result == xcclSuccess) result = EndQueuedOperation(comm, stream, deadline, &failure);
    if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
    offset += piece;
  } while (offset < bytes);
  return xcclSuccess;
}

// The kernel engine: both parts in one kernel. Zero-copy targets are looked up for the span that
// holds both receive areas (ag_gemm's window), and each source's head place taken from it.
xcclResult_t AllGatherKernel(Communicator* comm, const void* send, void* recv, size_t bytes,
                             const GatherTail& tail, xcclStream_t stream) {
  const size_t nranks = static_cast<size_t>(comm->nranks());
  char* head = static_cast<char*>(recv);
  char* span = head;
  size_t span_bytes = bytes * nranks;
  if (tail.bytes > 0) {
    char* tail_at = static_cast<char*>(tail.recv);
    span = std::min(head, tail_at);
    span_bytes =
        static_cast<size_t>(std::max(head + bytes * nranks, tail_at + tail.bytes * nranks) - span);
  }
  std::vector<char*> direct_at;
  ZeroCopyTargets(comm, span, span_bytes, &direct_at);
  for (char*& at : direct_at)
    if (at != nullptr) at += head - span;
  PlatformFailure failure;
  const xcclResult_t result = comm->device_engine()->all_gather->Run(
      *comm->transport(), send, recv, bytes, tail, direct_at.data(), stream, &failure);
  if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
  return xcclSuccess;
}

// The transport's enqueueing of one part, by size and topology.
xcclResult_t AllGatherPart(Communicator* comm, const SlotRange& arrivals, const void* send,
                           void* recv, size_t bytes, xcclStream_t stream) {
  DirectPuts* direct = comm->transport()->direct_puts();
  if (comm->topology().node_count > 1)
    return direct != nullptr
               ? AllGatherAcrossNodes(comm, arrivals, direct, send, recv, bytes, stream)
               : AllGatherAcrossNodesThroughInboxes(comm, arrivals, send, recv, bytes, stream);
  if (direct != nullptr && bytes > PlanInboxes(comm).piece_limit)
    return AllGatherDirect(comm, arrivals, direct, send, recv, bytes, stream);
  BlockParts block{
      {{static_cast<const char*>(send), static_cast<char*>(recv), bytes}, {nullptr, nullptr, 0}}};
  return AllGatherThroughInboxes(comm, arrivals, block, stream);
}

// Without the kernel engine: on one node where the whole block goes through the inboxes, both
// parts in the same operations; else one part after the other.
xcclResult_t AllGatherEnqueue(Communicator* comm, const void* send, void* recv, size_t bytes,
                              const GatherTail& tail, xcclStream_t stream) {
  SlotRange arrivals;
  XCCL_TRY(kArrivalSlots.Find(comm->slots(), &arrivals));
  const bool one_node = comm->topology().node_count == 1;
  const bool inboxes_only = comm->transport()->direct_puts() == nullptr ||
                            bytes + tail.bytes <= PlanInboxes(comm).piece_limit;
  if (tail.bytes > 0 && one_node && inboxes_only) {
    BlockParts block{
        {{static_cast<const char*>(send), static_cast<char*>(recv), bytes},
         {static_cast<const char*>(tail.send), static_cast<char*>(tail.recv), tail.bytes}}};
    return AllGatherThroughInboxes(comm, arrivals, block, stream);
  }
  if (bytes > 0) XCCL_TRY(AllGatherPart(comm, arrivals, send, recv, bytes, stream));
  if (tail.bytes > 0)
    XCCL_TRY(AllGatherPart(comm, arrivals, tail.send, tail.recv, tail.bytes, stream));
  return xcclSuccess;
}

}  // namespace

xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes,
                       xcclStream_t stream, const GatherTail& tail) {
  // Nothing to move: no rank takes part in an operation, so the epochs stay in step.
  if (bytes == 0 && tail.bytes == 0) return xcclSuccess;
  if (comm->nranks() == 1) {
    XCCL_TRY(CopyAlone(comm, "xcclAllGather", send, recv, bytes, stream));
    return CopyAlone(comm, "xcclAllGather", tail.send, tail.recv, tail.bytes, stream);
  }
  DeviceEngine* engine = comm->device_engine();
  const bool kernel = engine != nullptr && engine->all_gather->kernel();
  LaunchGate gate(comm, "xcclAllGather");
  XCCL_TRY(gate.Enter(stream, kernel ? engine->all_gather->RegionBytes(bytes, tail)
                                     : RegionBytesFor(comm, bytes + tail.bytes)));
  if (kernel) {
    XCCL_TRY(AllGatherKernel(comm, send, recv, bytes, tail, stream));
  } else {
    XCCL_TRY(AllGatherEnqueue(comm, send, recv, bytes, tail, stream));
  }
  return gate.Leave();
}

}  // namespace xccl
