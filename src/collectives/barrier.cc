#include "collectives/barrier.h"

namespace xccl {

xcclResult_t Barrier(Communicator* comm) {
  Platform* platform = comm->platform();
  const int rank = comm->rank();
  const int nranks = comm->nranks();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  for (int step = 1; step < nranks; ++step) {
    platform->Signal((rank + step) % nranks, ControlLayout::BarrierFrom(rank, nranks), epoch);
  }
  for (int step = 1; step < nranks; ++step) {
    int peer = (rank - step + nranks) % nranks;
    PlatformFailure failure;
    if (platform->WaitLocal(ControlLayout::BarrierFrom(peer, nranks), epoch, peer, deadline,
                            &failure) != xcclSuccess) {
      return comm->RecordFailure("xcclBarrier", failure);
    }
  }
  return xcclSuccess;
}

}  // namespace xccl
