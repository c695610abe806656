#include "collectives/reduce/read_reduce.h"

#include "base/error.h"
#include "base/failure.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"

namespace xccl {

bool ReductionsReadPeers(Communicator* comm) {
  const DeviceEngine* engine = comm->device_engine();
  return engine != nullptr && engine->read_reduce != nullptr && engine->read_reduce->reads();
}

xcclResult_t ReduceByReading(Communicator* comm, const char* op_name, const void* send, void* recv,
                             const ReducedPart& part, int datatype, int op, xcclStream_t stream) {
  // The kernel counts its own calls on the device and closes the call itself: no epoch, no
  // closing barrier kernel (read_reduce_kernel.h).
  LaunchGate gate(comm, op_name);
  XCCL_TRY(gate.Enter(stream));
  Transport* transport = comm->transport();
  PlatformFailure failure;
  xcclResult_t result = transport->BeginOperation(stream, /*queued=*/false, &failure);
  if (result == xcclSuccess)
    result = comm->device_engine()->read_reduce->Run(*transport, send, recv, part, datatype, op,
                                                     stream, &failure);
  if (result != xcclSuccess) return comm->RecordFailure(op_name, failure);
  return gate.Leave();
}

}  // namespace xccl
