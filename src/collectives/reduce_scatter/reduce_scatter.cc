#include "collectives/reduce_scatter/reduce_scatter.h"

#include <algorithm>

#include "base/datatype.h"
#include "base/error.h"
#include "collectives/alone_copy.h"
#include "collectives/launch_gate.h"
#include "collectives/reduce/read_reduce.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/region_reduce.h"
#include "collectives/reduce_scatter/reduce_scatter_across_nodes.h"

namespace xccl {

xcclResult_t ReduceScatter(Communicator* comm, const char* op_name, const void* send, void* recv,
                           size_t count, int datatype, int op, xcclStream_t stream,
                           uint64_t call_count, const GridLimit& grid) {
  // Nothing to move: no rank takes part in an operation, so the epochs stay in step.
  if (count == 0) return xcclSuccess;
  const size_t size = DataTypeSize(datatype);
  const size_t block = count * size;
  if (comm->nranks() == 1) return CopyAlone(comm, op_name, send, recv, block, stream);
  XCCL_TRY(CheckReducible(op_name, comm->nranks()));
  BuffersAsSeen buffers;
  bool reads = false;
  XCCL_TRY(
      ReductionsReadPeers(comm, op_name, send, block * comm->nranks(), recv, 0, &buffers, &reads));
  if (reads) {
    ReducedPart part;
    part.first_byte = comm->rank() * block;
    part.count = count;
    part.grid = grid;
    return ReduceByReading(comm, op_name, buffers, part, datatype, op, stream);
  }
  // Across nodes: each node's partials first, each crossing the network once.
  if (comm->topology().node_count > 1)
    return ReduceScatterAcrossNodes(comm, op_name, send, recv, count, datatype, op, call_count,
                                    stream);
  size_t step_count = 0;
  XCCL_TRY(RegionStepCount(comm, op_name, datatype, &step_count));
  LaunchGate gate(comm, op_name);
  XCCL_TRY(gate.Enter(stream, RegionReduceBytes(comm, step_count, count, datatype)));
  const char* blocks = static_cast<const char*>(send);
  for (size_t first = 0; first < count; first += step_count) {
    RegionReduceStep step;
    step.count = std::min(step_count, count - first);
    step.piece_for = [&](int dst) { return blocks + dst * block + first * size; };
    step.out = static_cast<char*>(recv) + first * size;
    step.call_count = call_count;
    XCCL_TRY(ReduceThroughRegion(comm, op_name, datatype, op, step, stream));
  }
  return gate.Leave();
}

}  // namespace xccl
