#include "collectives/reduce/read_reduce.h"

#include "base/failure.h"
#include "collectives/device_engine.h"
#include "collectives/queued_operation.h"

namespace xccl {

bool ReductionsReadPeers(Communicator* comm) {
  const DeviceEngine* engine = comm->device_engine();
  return engine != nullptr && engine->read_reduce != nullptr && engine->read_reduce->reads();
}

xcclResult_t ReduceByReading(Communicator* comm, const char* op_name, const void* send,
                             size_t first_byte, void* out, size_t count, int datatype, int op,
                             xcclStream_t stream) {
  Transport* transport = comm->transport();
  comm->NextEpoch();  // the host's count of operations stays the device's
  const Deadline deadline(comm->timeout_ms());
  PlatformFailure failure;
  xcclResult_t result = transport->BeginOperation(stream, /*queued=*/true, &failure);
  if (result == xcclSuccess)
    result = comm->device_engine()->read_reduce->Run(*transport, send, first_byte, out, count,
                                                     datatype, op, stream, &failure);
  // The closing barrier runs even after a failed launch: the peers wait for it.
  const xcclResult_t ended = EndQueuedOperation(comm, stream, deadline, &failure);
  if (result == xcclSuccess) result = ended;
  if (result != xcclSuccess) return comm->RecordFailure(op_name, failure);
  return xcclSuccess;
}

}  // namespace xccl
