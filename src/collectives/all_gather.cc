#include "collectives/all_gather.h"

namespace xccl {

xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes) {
  Platform* platform = comm->platform();
  const int rank = comm->rank();
  const int nranks = comm->nranks();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  char* own_block = static_cast<char*>(recv) + rank * bytes;

  platform->PublishRecvBuffer(epoch, recv);
  // Peers first in issue order so their queues start while this thread copies its own block;
  // the own block never waits for anyone.
  for (int step = 1; step < nranks; ++step) {
    int peer = (rank + step) % nranks;
    platform->EnqueuePut(peer, epoch, send, rank * bytes, bytes, ControlLayout::Arrival(rank));
  }
  if (send != own_block) platform->LocalCopy(own_block, send, bytes);

  PlatformFailure failure;
  xcclResult_t result = xcclSuccess;
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
