#include "collectives/reduce/region_reduce.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/byte_range.h"
#include "base/datatype.h"
#include "base/error.h"
#include "base/failure.h"
#include "collectives/barrier/barrier.h"
#include "collectives/device_engine.h"
#include "collectives/queued_operation.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/reduction.h"
#include "collectives/region/arrivals.h"
#include "collectives/region/inboxes.h"

namespace xccl {

namespace {

// On the host, each piece follows a header holding the call's count (RegionReduceStep::call_count);
// 64 bytes keep the data as aligned as the slice.
constexpr size_t kHeaderBytes = 64;

}  // namespace

size_t RegionHeaderBytes(Communicator* comm) {
  return comm->device_engine() == nullptr ? kHeaderBytes : 0;
}

xcclResult_t FenceRegion(Communicator* comm, const char* op_name, xcclStream_t stream) {
  DeviceEngine* engine = comm->device_engine();
  if (engine == nullptr)
    return comm->topology().node_count > 1 ? Barrier(comm, stream) : xcclSuccess;
  // An operation of its own, as xcclBarrier's: its signals go on `stream` (the connections
  // take the stream of the last BeginOperation).
  PlatformFailure failure;
  Transport* transport = comm->transport();
  if (transport->BeginOperation(stream, /*queued=*/false, &failure) != xcclSuccess ||
      engine->barrier->Run(*transport, /*advance_epoch=*/true, stream, &failure) != xcclSuccess)
    return comm->RecordFailure(op_name, failure);
  return xcclSuccess;
}

xcclResult_t RegionStepCount(Communicator* comm, const char* op_name, int datatype, size_t* count) {
  const size_t size = DataTypeSize(datatype);
  const size_t piece = PlanInboxes(comm).piece_limit;
  const size_t header = RegionHeaderBytes(comm);
  *count = piece > header ? (piece - header) / size : 0;
  if (*count == 0)
    return Fail(xcclInvalidUsage,
                "%s: the receive region's pieces are %zu bytes (XCCL_EAGER_BYTES on the host; "
                "none on a GPU communicator whose calls are all in place), less than one %s "
                "element",
                op_name, piece, DataTypeName(datatype));
  return xcclSuccess;
}

size_t RegionReduceBytes(Communicator* comm, size_t step_count, size_t count, int datatype) {
  return RegionBytesFor(
      comm, RegionHeaderBytes(comm) + std::min(step_count, count) * DataTypeSize(datatype));
}

xcclResult_t ReduceThroughRegion(Communicator* comm, const char* op_name, int datatype, int op,
                                 const RegionReduceStep& step, xcclStream_t stream) {
  Transport* transport = comm->transport();
  const int rank = comm->rank(), nranks = comm->nranks();
  SlotRange arrivals;
  XCCL_TRY(kArrivalSlots.Find(comm->slots(), &arrivals));
  const Inboxes inboxes = PlanInboxes(comm);
  const size_t bytes = step.count * DataTypeSize(datatype);
  // The fence is an operation of its own (host across nodes: a barrier with its epoch), so the
  // step's epoch is taken after it.
  XCCL_TRY(FenceRegion(comm, op_name, stream));
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  PlatformFailure failure;
  xcclResult_t result = transport->BeginOperation(stream, /*queued=*/true, &failure);
  if (result != xcclSuccess) return comm->RecordFailure(op_name, failure);
  // Rotated order (rank+1 first), as all_gather's puts: each peer hears first from its neighbour.
  const size_t put_at = inboxes.Offset(rank, epoch);
  const size_t header = RegionHeaderBytes(comm);
  // Queued puts read it after this frame may be gone (a failed step returns at once).
  static thread_local uint64_t call_count;
  call_count = step.call_count;
  // With one source, the other ranks' pieces are empty: their puts are the arrival alone.
  auto carries_data = [&](int source) {
    return step.only_source < 0 || step.only_source == source;
  };
  const size_t put_bytes = carries_data(rank) ? bytes : 0;
  for (int distance = 1; distance < nranks; ++distance) {
    const int dst = (rank + distance) % nranks;
    Connection& connection = transport->connection(dst);
    if (header > 0)
      connection.PutToRegion(epoch, put_at, &call_count, sizeof(call_count),
                             ControlLayout::kNoSignal);
    connection.PutToRegion(epoch, put_at + header,
                           put_bytes > 0 ? step.piece_for(dst) : &call_count, put_bytes,
                           arrivals.at(rank));
  }
  std::vector<const void*> inputs(nranks);
  inputs[rank] = carries_data(rank) ? step.piece_for(rank) : nullptr;
  int odd_peer = -1;
  uint64_t odd_count = 0;
  result = WaitArrivals(
      transport, arrivals, rank, nranks, epoch, deadline, stream,
      [&](int peer) {
        const char* landed = transport->Received(peer, inboxes.Offset(peer, epoch));
        // Where the peer's put ends in its slice when the ranks passed the same count.
        const size_t expected_end =
            put_at % inboxes.slice + header + (carries_data(peer) ? bytes : 0);
        size_t end = expected_end;
        if (transport->PutEnd(arrivals.at(peer), epoch, &end) && odd_peer < 0) {
          uint64_t its_count = 0;
          std::memcpy(&its_count, landed, sizeof(its_count));
          if (end != expected_end || its_count != call_count) {
            odd_peer = peer;
            odd_count = its_count;
          }
        }
        inputs[peer] = landed + header;
      },
      &failure);
  if (result == xcclSuccess && odd_peer >= 0) {
    // The same count with a piece of another size: a broadcast whose ranks named other roots.
    result = odd_count == call_count
                 ? SetFailure(&failure, xcclInvalidUsage, odd_peer,
                              "rank %d's piece differs in size from the one this rank expects "
                              "with the same count %llu: the ranks passed different roots",
                              odd_peer, static_cast<unsigned long long>(call_count))
                 : SetFailure(&failure, xcclInvalidUsage, odd_peer,
                              "rank %d passed count %llu where this rank passed %llu: the ranks "
                              "passed different counts",
                              odd_peer, static_cast<unsigned long long>(odd_count),
                              static_cast<unsigned long long>(call_count));
  }
  // Where `out` is a piece this rank put (all_reduce in place), the puts must have read it first.
  bool out_is_put = false;
  for (int dst = 0; dst < nranks && put_bytes > 0; ++dst) {
    if (dst != rank && ByteRange{step.piece_for(dst), bytes}.Overlaps(ByteRange{step.out, bytes}))
      out_is_put = true;
  }
  if (result == xcclSuccess && out_is_put) result = transport->Flush(deadline, &failure);
  if (result == xcclSuccess) {
    // One source: its piece as it is (a reduction of one input is a copy). Across nodes, node
    // by node, the order of ReduceScatterAcrossNodes, so every path gives its bits.
    const bool single = step.only_source >= 0;
    const xcclResult_t reduced =
        single ? ReduceOnStream(datatype, op, &inputs[step.only_source], 1, step.out, step.count,
                                stream)
        : comm->topology().node_count > 1
            ? ReduceNodeByNodeOnStream(comm->topology(), datatype, op, inputs.data(), step.out,
                                       step.count, stream)
            : ReduceOnStream(datatype, op, inputs.data(), nranks, step.out, step.count, stream);
    if (reduced != xcclSuccess)
      result = SetFailure(&failure, reduced, rank, "%s", ThreadLastError().c_str());
  }
  if (result == xcclSuccess) result = EndQueuedOperation(comm, stream, deadline, &failure);
  if (result != xcclSuccess) return comm->RecordFailure(op_name, failure);
  // Host across nodes: no rank's next operation starts before every peer has reduced.
  if (comm->device_engine() == nullptr && comm->topology().node_count > 1)
    return Barrier(comm, stream);
  return xcclSuccess;
}

}  // namespace xccl
