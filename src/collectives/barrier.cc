#include "collectives/barrier.h"

namespace xccl {

xcclResult_t Barrier(Communicator* comm, xcclStream_t stream) {
  Platform* platform = comm->platform();
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  PlatformFailure failure;
  platform->BeginOperation(stream);
  xcclResult_t result = platform->Barrier(epoch, deadline, &failure);
  if (result != xcclSuccess) return comm->RecordFailure("xcclBarrier", failure);
  return xcclSuccess;
}

}  // namespace xccl
