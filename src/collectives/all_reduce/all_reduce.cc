#include "collectives/all_reduce/all_reduce.h"

#include <algorithm>

#include "base/datatype.h"
#include "base/error.h"
#include "collectives/all_gather/all_gather.h"
#include "collectives/all_reduce/all_reduce_plan.h"
#include "collectives/alone_copy.h"
#include "collectives/launch_gate.h"
#include "collectives/reduce/read_reduce.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/region_reduce.h"
#include "collectives/reduce_scatter/reduce_scatter.h"

namespace xccl {

namespace {

constexpr const char* kOpName = "xcclAllReduce";

// Every rank's whole input to every peer, in steps of at most a region piece; each rank reduces
// all of them.
xcclResult_t AllReduceOneShot(Communicator* comm, const void* send, void* recv, size_t count,
                              int datatype, int op, size_t step_count, uint64_t call_count,
                              xcclStream_t stream) {
  const size_t size = DataTypeSize(datatype);
  LaunchGate gate(comm, kOpName);
  XCCL_TRY(gate.Enter(stream, RegionReduceBytes(comm, step_count, count, datatype)));
  for (size_t first = 0; first < count; first += step_count) {
    RegionReduceStep step;
    step.count = std::min(step_count, count - first);
    const void* piece = static_cast<const char*>(send) + first * size;
    step.piece_for = [piece](int) { return piece; };
    step.out = static_cast<char*>(recv) + first * size;
    step.call_count = call_count;
    XCCL_TRY(ReduceThroughRegion(comm, kOpName, datatype, op, step, stream));
  }
  return gate.Leave();
}

// This rank's part of every rank's input, reduced into every rank's output (the read engine).
xcclResult_t AllReduceReadOnce(Communicator* comm, const BuffersAsSeen& buffers, size_t count,
                               int datatype, int op, xcclStream_t stream) {
  const size_t size = DataTypeSize(datatype);
  size_t first = 0;
  ReducedPart part;
  ReadOncePart(count, size, comm->nranks(), comm->rank(), &first, &part.count);
  part.first_byte = first * size;
  part.out_byte = first * size;
  part.to_every_rank = true;
  return ReduceByReading(comm, kOpName, buffers, part, datatype, op, stream);
}

}  // namespace

xcclResult_t AllReduce(Communicator* comm, const void* send, void* recv, size_t count, int datatype,
                       int op, xcclStream_t stream) {
  if (count == 0) return xcclSuccess;  // no rank takes part in an operation
  const int nranks = comm->nranks();
  const size_t size = DataTypeSize(datatype);
  if (nranks == 1) return CopyAlone(comm, kOpName, send, recv, count * size, stream);
  XCCL_TRY(CheckReducible(kOpName, nranks));
  BuffersAsSeen buffers;
  bool reads_peers = false;
  XCCL_TRY(ReductionsReadPeers(comm, kOpName, send, count * size, recv, count * size, &buffers,
                               &reads_peers));
  // The region's steps only where the call goes through it (a communicator whose every call
  // reads in place has no region).
  size_t step_count = 0;
  if (!reads_peers) XCCL_TRY(RegionStepCount(comm, kOpName, datatype, &step_count));
  const AllReducePlan plan =
      ChooseAllReducePlan(count, count * size, nranks, step_count * size,
                          static_cast<size_t>(comm->params().allreduce_oneshot_bytes), reads_peers);
  if (plan == AllReducePlan::kReadOnce)
    return AllReduceReadOnce(comm, buffers, count, datatype, op, stream);
  if (plan == AllReducePlan::kOneShot)
    return AllReduceOneShot(comm, send, recv, count, datatype, op, step_count, count, stream);
  // Rank r owns elements [r * part, (r + 1) * part): reduce_scatter leaves them in place in
  // `recv` (its in-place layout when send == recv), and the all_gather in place spreads them.
  const size_t part = count / nranks;
  char* own = static_cast<char*>(recv) + comm->rank() * part * size;
  XCCL_TRY(ReduceScatter(comm, kOpName, send, own, part, datatype, op, stream, count));
  XCCL_TRY(AllGather(comm, own, recv, part * size, stream));
  const size_t done = part * nranks;
  if (done == count) return xcclSuccess;
  return AllReduceOneShot(comm, static_cast<const char*>(send) + done * size,
                          static_cast<char*>(recv) + done * size, count - done, datatype, op,
                          step_count, count, stream);
}

}  // namespace xccl
