#include "collectives/all_gather.h"

#include <algorithm>
#include <string>

#include "core/failure.h"

namespace xccl {

namespace {

// Direct puts (host platform, blocks above the inbox size): publish the receive buffer, push
// this rank's block into every peer's receive buffer at once — queued peers first in rotated
// order (rank+2, rank+3, ...) so they start while this thread copies its own block, then this
// thread serves rank+1 itself — and wait for every peer's arrival.
xcclResult_t AllGatherDirect(Communicator* comm, const void* send, void* recv, size_t bytes) {
  Platform* platform = comm->platform();
  const int rank = comm->rank(), nranks = comm->nranks();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  char* own_block = static_cast<char*>(recv) + rank * bytes;

  platform->PublishRecvBuffer(epoch, recv, nranks * bytes, bytes);
  for (int step = 2; step < nranks; ++step) {
    platform->EnqueuePut((rank + step) % nranks, epoch, send, rank * bytes, bytes,
                         ControlLayout::Arrival(rank));
  }
  if (send != own_block) platform->LocalCopy(own_block, send, bytes);
  PlatformFailure failure;
  xcclResult_t result = platform->PutFromCaller((rank + 1) % nranks, epoch, send, rank * bytes,
                                                bytes, ControlLayout::Arrival(rank), &failure);
  if (result == xcclSuccess) {
    result = platform->WaitArrivals(
        epoch, deadline, [](int) {}, &failure);
  }
  if (result != xcclSuccess) {
    xcclResult_t recorded = comm->RecordFailure("xcclAllGather", failure);
    // The queues may still read `send`, and peers' puts may still write `recv`: both stop
    // within milliseconds once the failure is announced, and the caller gets its buffers back
    // only after that.
    PlatformFailure ignored;
    platform->EndOperation(epoch, Deadline(comm->timeout_ms()), &ignored);
    platform->CloseRecvBuffer(epoch, Deadline(comm->timeout_ms()));
    return recorded;
  }
  result = platform->EndOperation(epoch, deadline, &failure);
  if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
  return xcclSuccess;
}

// Through the inboxes, in operations of at most inbox_limit() bytes per block: every peer gets
// this rank's piece in its inbox (rotated order), the own piece is copied locally, and each
// peer's piece is copied out of this rank's inbox once it has arrived.
xcclResult_t AllGatherThroughInboxes(Communicator* comm, const void* send, void* recv, size_t bytes,
                                     xcclStream_t stream) {
  Platform* platform = comm->platform();
  const int rank = comm->rank(), nranks = comm->nranks();
  const size_t piece_limit = std::max<size_t>(platform->inbox_limit(), 1);
  size_t offset = 0;
  do {
    const size_t piece = std::min(piece_limit, bytes - offset);
    const uint32_t epoch = comm->NextEpoch();
    const Deadline deadline(comm->timeout_ms());
    const char* src = static_cast<const char*>(send) + offset;
    char* out = static_cast<char*>(recv);
    platform->BeginOperation(stream);
    // No buffer to write into (blocks go through the inboxes), but the block size is published
    // all the same: a peer that passed a larger count takes the direct path and would otherwise
    // wait for this rank's receive buffer until the deadline.
    platform->PublishRecvBuffer(epoch, nullptr, 0, piece);
    for (int step = 1; step < nranks; ++step) {
      platform->InboxPut((rank + step) % nranks, epoch, src, piece, ControlLayout::Arrival(rank));
    }
    char* own = out + rank * bytes + offset;
    if (src != own) platform->LocalCopy(own, src, piece);
    PlatformFailure failure;
    // A peer whose piece has another size passed another count (pieces are cut alike from
    // equal counts): nothing of it is copied, the wait for the others goes on, and then this
    // rank fails. That peer finds the same mismatch in this rank's piece, so both fail at once.
    int odd_peer = -1;
    size_t odd_bytes = 0;
    xcclResult_t result = platform->WaitArrivals(
        epoch, deadline,
        [&](int peer) {
          size_t arrived = piece;
          if (platform->InboxBlockBytes(epoch, peer, &arrived) && arrived != piece) {
            if (odd_peer < 0) {
              odd_peer = peer;
              odd_bytes = arrived;
            }
            return;
          }
          platform->LocalCopy(out + peer * bytes + offset, platform->Inbox(epoch, peer), piece);
        },
        &failure);
    if (result == xcclSuccess && odd_peer >= 0) {
      result = SetFailure(&failure, xcclInvalidUsage, odd_peer,
                          "rank %d sent a piece of %zu bytes at offset %zu of its block where "
                          "this rank's is %zu bytes: the ranks passed different counts",
                          odd_peer, odd_bytes, offset, piece);
    }
    if (result == xcclSuccess) result = platform->EndOperation(epoch, deadline, &failure);
    if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
    offset += piece;
  } while (offset < bytes);
  return xcclSuccess;
}

}  // namespace

xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes,
                       xcclStream_t stream) {
  // Nothing to move: no rank takes part in an operation, so the epochs stay in step.
  if (bytes == 0) return xcclSuccess;
  Platform* platform = comm->platform();
  if (platform->pipelined_all_gather()) {
    PlatformFailure failure;
    xcclResult_t result = platform->PipelinedAllGather(send, recv, bytes, stream, &failure);
    if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
    return xcclSuccess;
  }
  if (platform->direct_puts() && bytes > platform->inbox_limit())
    return AllGatherDirect(comm, send, recv, bytes);
  return AllGatherThroughInboxes(comm, send, recv, bytes, stream);
}

}  // namespace xccl
