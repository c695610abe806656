#include "collectives/alone_copy.h"

#include "base/error.h"
#include "base/failure.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t CopyAlone(Communicator* comm, const char* op, const void* send, void* recv,
                       size_t bytes, xcclStream_t stream) {
  if (send == recv || bytes == 0) return xcclSuccess;
  const xcclResult_t copied = CopyAsync(recv, send, bytes, stream);
  if (copied == xcclSuccess) return xcclSuccess;
  PlatformFailure failure;
  SetFailure(&failure, copied, comm->rank(), "copy: %s", ThreadLastError().c_str());
  return comm->RecordFailure(op, failure);
}

}  // namespace xccl
