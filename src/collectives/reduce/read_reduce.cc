#include "collectives/reduce/read_reduce.h"

#include <vector>

#include "base/error.h"
#include "base/failure.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"
#include "collectives/zero_copy_targets.h"

namespace xccl {

namespace {

// *seen[s]: `buffer` as rank s addresses it; false if some rank of the node cannot reach it.
template <typename T>
bool EveryRankReaches(Communicator* comm, T* buffer, size_t bytes, T** seen) {
  std::vector<char*> at;
  ZeroCopyTargets(comm, const_cast<char*>(reinterpret_cast<const char*>(buffer)), bytes, &at);
  for (int s = 0; s < comm->nranks(); ++s) {
    if (s != comm->rank() && at[s] == nullptr) return false;
    seen[s] = s == comm->rank() ? buffer : at[s];
  }
  return true;
}

}  // namespace

ReadReach ReadEngineReach(Communicator* comm) {
  const DeviceEngine* engine = comm->device_engine();
  return engine != nullptr && engine->read_reduce != nullptr ? engine->read_reduce->reach()
                                                             : ReadReach::kNone;
}

bool ReductionsReadPeers(Communicator* comm, const void* send, size_t send_bytes, void* recv,
                         size_t recv_bytes, BuffersAsSeen* buffers) {
  const ReadReach reach = ReadEngineReach(comm);
  const char* const send_bytes_at = static_cast<const char*>(send);
  char* const recv_bytes_at = static_cast<char*>(recv);
  if (reach == ReadReach::kEveryCall) {
    for (int s = 0; s < comm->nranks(); ++s) {
      buffers->send[s] = send_bytes_at;
      buffers->recv[s] = recv_bytes_at;
    }
    return true;
  }
  if (reach != ReadReach::kMappedBuffers ||
      !EveryRankReaches(comm, send_bytes_at, send_bytes, buffers->send))
    return false;
  if (recv_bytes > 0) return EveryRankReaches(comm, recv_bytes_at, recv_bytes, buffers->recv);
  // Only this rank writes its receive buffer: the peers get no address of it.
  for (int s = 0; s < comm->nranks(); ++s)
    buffers->recv[s] = s == comm->rank() ? recv_bytes_at : nullptr;
  return true;
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
