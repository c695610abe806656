#include "collectives/queued_operation.h"

#include "collectives/device_engine.h"

namespace xccl {

xcclResult_t EndQueuedOperation(Communicator* comm, xcclStream_t stream, const Deadline& deadline,
                                PlatformFailure* failure) {
  Transport* transport = comm->transport();
  xcclResult_t result = transport->Flush(deadline, failure);
  // The closing step runs even after a failed flush: the peers wait for it.
  if (DeviceEngine* engine = comm->device_engine()) {
    PlatformFailure closing;
    const xcclResult_t closed =
        engine->barrier->Run(*transport, /*advance_epoch=*/false, stream, &closing);
    if (result == xcclSuccess && closed != xcclSuccess) {
      result = closed;
      *failure = closing;
    }
  }
  return result;
}

}  // namespace xccl
