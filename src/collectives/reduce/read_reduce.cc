#include "collectives/reduce/read_reduce.h"

#include <vector>

#include "base/error.h"
#include "base/failure.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"
#include "collectives/zero_copy_targets.h"

namespace xccl {

namespace {

// *seen[s]: `buffer` as rank s addresses it, *reaches: whether every rank of the node does. A
// buffer meant to be mapped (a window, xcclMemAlloc memory) that some peer process could not map
// fails the call: that peer's kernel would read it while this rank took the region, a stall until
// the deadline; plain memory is simply not read (every rank passes such or none does: xccl.h).
template <typename T>
xcclResult_t EveryRankReaches(Communicator* comm, const char* op_name, T* buffer, size_t bytes,
                              T** seen, bool* reaches) {
  std::vector<char*> at;
  const bool shared =
      ZeroCopyTargets(comm, const_cast<char*>(reinterpret_cast<const char*>(buffer)), bytes, &at);
  *reaches = true;
  for (int s = 0; s < comm->nranks() && *reaches; ++s) {
    *reaches = s == comm->rank() || at[s] != nullptr;
    seen[s] = s == comm->rank() ? buffer : at[s];
    if (!*reaches && shared) {
      PlatformFailure failure;
      SetFailure(&failure, xcclUnhandledDeviceError, kNoPeer,
                 "the process of rank %d could not map this rank's buffer %p (a window or "
                 "xcclMemAlloc memory), which the peers read in place: the call cannot go on "
                 "(see the warning above for why)",
                 s, static_cast<const void*>(buffer));
      return comm->RecordFailure(op_name, failure);
    }
  }
  return xcclSuccess;
}

}  // namespace

ReadReach ReadEngineReach(Communicator* comm) {
  const DeviceEngine* engine = comm->device_engine();
  return engine != nullptr && engine->read_reduce != nullptr ? engine->read_reduce->reach()
                                                             : ReadReach::kNone;
}

xcclResult_t ReductionsReadPeers(Communicator* comm, const char* op_name, const void* send,
                                 size_t send_bytes, void* recv, size_t recv_bytes,
                                 BuffersAsSeen* buffers, bool* reads) {
  const ReadReach reach = ReadEngineReach(comm);
  const char* const send_bytes_at = static_cast<const char*>(send);
  char* const recv_bytes_at = static_cast<char*>(recv);
  *reads = reach == ReadReach::kEveryCall;
  if (*reads) {
    for (int s = 0; s < comm->nranks(); ++s) {
      buffers->send[s] = send_bytes_at;
      buffers->recv[s] = recv_bytes_at;
    }
    return xcclSuccess;
  }
  if (reach != ReadReach::kMappedBuffers) return xcclSuccess;
  XCCL_TRY(EveryRankReaches(comm, op_name, send_bytes_at, send_bytes, buffers->send, reads));
  if (!*reads) return xcclSuccess;
  if (recv_bytes > 0)
    return EveryRankReaches(comm, op_name, recv_bytes_at, recv_bytes, buffers->recv, reads);
  // Only this rank writes its receive buffer: the peers get no address of it.
  for (int s = 0; s < comm->nranks(); ++s)
    buffers->recv[s] = s == comm->rank() ? recv_bytes_at : nullptr;
  return xcclSuccess;
}

xcclResult_t ReduceByReading(Communicator* comm, const char* op_name, const BuffersAsSeen& buffers,
                             const ReducedPart& part, int datatype, int op, xcclStream_t stream) {
  // The kernel counts its own calls on the device and closes the call itself: no epoch, no
  // closing barrier kernel (read_reduce_kernel.h).
  LaunchGate gate(comm, op_name);
  XCCL_TRY(gate.Enter(stream));
  Transport* transport = comm->transport();
  PlatformFailure failure;
  xcclResult_t result = transport->BeginOperation(stream, /*queued=*/false, &failure);
  if (result == xcclSuccess)
    result = comm->device_engine()->read_reduce->Run(*transport, buffers, part, datatype, op,
                                                     stream, &failure);
  if (result != xcclSuccess) return comm->RecordFailure(op_name, failure);
  return gate.Leave();
}

}  // namespace xccl
