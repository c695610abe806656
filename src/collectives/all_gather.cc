#include "collectives/all_gather.h"

namespace xccl {

namespace {

// Small blocks: every peer's block is copied into its inbox by the calling thread, then copied
// out of this rank's inbox as each arrives. Two copies, but no queue hand-off and no wait for
// the peer to publish its buffer, which is what dominates a small call.
xcclResult_t AllGatherEager(Communicator* comm, const void* send, char* own_block, void* recv,
                            size_t bytes, uint32_t epoch, const Deadline& deadline) {
  Platform* platform = comm->platform();
  const int rank = comm->rank();
  const int nranks = comm->nranks();
  for (int step = 1; step < nranks; ++step) {
    platform->EagerPut((rank + step) % nranks, epoch, send, bytes, ControlLayout::Arrival(rank));
  }
  if (send != own_block) platform->LocalCopy(own_block, send, bytes);
  for (int step = 1; step < nranks; ++step) {
    int peer = (rank - step + nranks) % nranks;
    PlatformFailure failure;
    if (platform->WaitLocal(ControlLayout::Arrival(peer), epoch, peer, deadline, &failure) !=
        xcclSuccess) {
      return comm->RecordFailure("xcclAllGather", failure);
    }
    platform->LocalCopy(static_cast<char*>(recv) + peer * bytes, platform->EagerInbox(epoch, peer),
                        bytes);
  }
  return xcclSuccess;
}

}  // namespace

xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes) {
  Platform* platform = comm->platform();
  const int rank = comm->rank();
  const int nranks = comm->nranks();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  char* own_block = static_cast<char*>(recv) + rank * bytes;

  if (bytes > 0 && bytes <= platform->eager_limit()) {
    return AllGatherEager(comm, send, own_block, recv, bytes, epoch, deadline);
  }
  platform->PublishRecvBuffer(epoch, recv);
  // Queued peers first, so they start while this thread copies its own block (which never
  // waits for anyone); then this thread serves the first peer in the rotation itself.
  for (int step = 2; step < nranks; ++step) {
    int peer = (rank + step) % nranks;
    platform->EnqueuePut(peer, epoch, send, rank * bytes, bytes, ControlLayout::Arrival(rank));
  }
  if (send != own_block) platform->LocalCopy(own_block, send, bytes);

  PlatformFailure failure;
  xcclResult_t result = xcclSuccess;
  if (nranks > 1) {
    result = platform->PutFromCaller((rank + 1) % nranks, epoch, send, rank * bytes, bytes,
                                     ControlLayout::Arrival(rank), &failure);
  }
  // Waiting in the reverse rotation: the peer that pushes to us first is rank-1.
  for (int step = 1; step < nranks && result == xcclSuccess; ++step) {
    int peer = (rank - step + nranks) % nranks;
    result = platform->WaitLocal(ControlLayout::Arrival(peer), epoch, peer, deadline, &failure);
  }
  if (result != xcclSuccess) {
    xcclResult_t recorded = comm->RecordFailure("xcclAllGather", failure);
    // The queues may still read `send`: they stop within milliseconds once aborted, and the
    // caller gets its buffers back only after that.
    PlatformFailure ignored;
    platform->DrainQueues(Deadline(comm->timeout_ms()), &ignored);
    return recorded;
  }
  result = platform->DrainQueues(deadline, &failure);
  if (result != xcclSuccess) return comm->RecordFailure("xcclAllGather", failure);
  return xcclSuccess;
}

}  // namespace xccl
