#include "collectives/broadcast/broadcast.h"

#include <algorithm>

#include "base/error.h"
#include "collectives/alone_copy.h"
#include "collectives/launch_gate.h"
#include "collectives/reduce/read_reduce.h"
#include "collectives/reduce/reduction.h"
#include "collectives/reduce/region_reduce.h"

namespace xccl {

namespace {

constexpr const char* kOpName = "xcclBroadcast";

}  // namespace

xcclResult_t Broadcast(Communicator* comm, const void* send, void* recv, size_t bytes, int root,
                       xcclStream_t stream) {
  if (bytes == 0) return xcclSuccess;  // no rank takes part in an operation
  const int rank = comm->rank();
  if (comm->nranks() == 1) return CopyAlone(comm, kOpName, send, recv, bytes, stream);
  // Bytes, as one source's "reduction": every bit of every type arrives as it left.
  const int bytes_type = xcclUint8, copy = static_cast<int>(RedOp::kSum);
  BuffersAsSeen buffers;
  // Only where every call reads: between processes a rank could not tell whether root's buffer
  // is mapped (a non-root rank has no send buffer of its own to look up).
  bool reads = false;
  if (ReadEngineReach(comm) == ReadReach::kEveryCall)
    XCCL_TRY(ReductionsReadPeers(comm, kOpName, send, bytes, recv, 0, &buffers, &reads));
  if (reads) {
    ReducedPart part;
    part.single_source = root;
    part.count = rank == root && send == recv ? 0 : bytes;  // in place, root has it already
    return ReduceByReading(comm, kOpName, buffers, part, bytes_type, copy, stream);
  }
  size_t step_bytes = 0;
  XCCL_TRY(RegionStepCount(comm, kOpName, bytes_type, &step_bytes));
  LaunchGate gate(comm, kOpName);
  XCCL_TRY(gate.Enter(stream, RegionReduceBytes(comm, step_bytes, bytes, bytes_type)));
  const char* from = rank == root ? static_cast<const char*>(send) : nullptr;
  for (size_t first = 0; first < bytes; first += step_bytes) {
    RegionReduceStep step;
    step.count = std::min(step_bytes, bytes - first);
    step.piece_for = [from, first](int) { return from + first; };
    step.out = static_cast<char*>(recv) + first;
    step.call_count = bytes;
    step.only_source = root;
    XCCL_TRY(ReduceThroughRegion(comm, kOpName, bytes_type, copy, step, stream));
  }
  return gate.Leave();
}

}  // namespace xccl
