#include "collectives/reduce_scatter/reduce_scatter_across_nodes.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/datatype.h"
#include "base/error.h"
#include "base/failure.h"
#include "collectives/barrier/barrier.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"
#include "collectives/queued_operation.h"
#include "collectives/reduce/reduce_on_stream.h"
#include "collectives/reduce/reduction.h"
#include "collectives/reduce/region_reduce.h"
#include "collectives/reduce_scatter/partial_plan.h"
#include "collectives/region/arrivals.h"
#include "collectives/region/inboxes.h"

namespace xccl {

namespace {

struct Call {
  const char* send;
  char* out;
  size_t block_bytes;
  int datatype, op;
  uint64_t call_count;
  xcclStream_t stream;
  size_t header_bytes;  // RegionHeaderBytes: ranks that passed other counts fail at the first step
};

// One step: `count` elements from element `first` of every block, as one operation.
class Step {
 public:
  Step(Communicator* comm, const PartialPlan& plan, const SlotRange& arrivals,
       const Inboxes& inboxes, const Call& call, char* partials)
      : comm_(comm),
        plan_(plan),
        arrivals_(arrivals),
        inboxes_(inboxes),
        call_(call),
        partials_(partials),
        transport_(comm->transport()),
        topology_(comm->topology()),
        me_(comm->rank()) {}

  xcclResult_t Run(size_t first, size_t count, PlatformFailure* failure) {
    const size_t elem = DataTypeSize(call_.datatype), acc = AccumulatorSize(call_.datatype);
    const size_t piece = count * elem, partial = count * acc, first_byte = first * elem;
    const std::vector<int>& mine = plan_.owned[me_];
    epoch_ = comm_->NextEpoch();
    deadline_ = Deadline(comm_->timeout_ms());
    XCCL_TRY(transport_->BeginOperation(call_.stream, /*queued=*/true, failure));
    put_at_ = inboxes_.Offset(me_, epoch_);

    // This rank's pieces of the blocks whose partials its node's peers make.
    for (int peer : topology_.local_ranks) {
      if (peer == me_) continue;
      const std::vector<int>& theirs = plan_.owned[peer];
      Connection& connection = transport_->connection(peer);
      PutHeader(connection);
      for (size_t k = 0; k < theirs.size(); ++k)
        connection.PutToRegion(
            epoch_, put_at_ + call_.header_bytes + k * piece,
            call_.send + theirs[k] * call_.block_bytes + first_byte, piece,
            k + 1 == theirs.size() ? arrivals_.at(me_) : ControlLayout::kNoSignal);
    }
    // The partials this rank makes, its node's ranks in rank order.
    std::vector<int> node_peers;
    for (int peer : topology_.local_ranks)
      if (peer != me_) node_peers.push_back(peer);
    std::vector<const char*> landed(topology_.nranks, nullptr);
    XCCL_TRY(Land(node_peers, mine.size() * piece, &landed, failure));
    // Each partial for another node goes out as soon as it is made, so that the network carries
    // it while the next ones are reduced; this rank's own (every rank makes its own, in
    // partial_plan.h) comes last and stays.
    std::vector<size_t> order;
    size_t own = 0;
    for (size_t k = 0; k < mine.size(); ++k) {
      if (mine[k] == me_)
        own = k;
      else
        order.push_back(k);
    }
    order.push_back(own);
    std::vector<const void*> inputs(topology_.local_ranks.size());
    for (size_t k : order) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        const int r = topology_.local_ranks[i];
        inputs[i] = r == me_ ? call_.send + mine[k] * call_.block_bytes + first_byte
                             : landed[r] + k * piece;
      }
      XCCL_TRY(Reduced(ReduceStage::kPartial, inputs, partials_ + k * partial, count, failure));
      if (k == own) continue;
      Connection& connection = transport_->connection(mine[k]);
      PutHeader(connection);
      connection.PutToRegion(epoch_, put_at_ + call_.header_bytes, partials_ + k * partial, partial,
                             arrivals_.at(me_));
    }
    // Every node's partial for this rank, in node order, rounded once.
    std::vector<int> makers;
    for (int node = 0; node < topology_.node_count; ++node)
      if (plan_.partial_from[node] != me_) makers.push_back(plan_.partial_from[node]);
    XCCL_TRY(Land(makers, partial, &landed, failure));
    std::vector<const void*> nodes(topology_.node_count);
    for (int node = 0; node < topology_.node_count; ++node) {
      const int maker = plan_.partial_from[node];
      nodes[node] = maker == me_ ? partials_ + own * partial : landed[maker];
    }
    XCCL_TRY(Reduced(ReduceStage::kPartials, nodes, call_.out + first_byte, count, failure));
    return EndQueuedOperation(comm_, call_.stream, deadline_, failure);
  }

 private:
  void PutHeader(Connection& connection) {
    // Queued puts read it after this frame may be gone (a failed step returns at once).
    static thread_local uint64_t header;
    header = call_.call_count;
    if (call_.header_bytes > 0)
      connection.PutToRegion(epoch_, put_at_, &header, sizeof(header), ControlLayout::kNoSignal);
  }

  // Waits for this step's puts of `peers` (GPU: one wait on the stream for all of them) and, on
  // the host, checks that each passed this rank's count (`bytes` after the header);
  // (*landed)[p]: where p's data landed.
  xcclResult_t Land(const std::vector<int>& peers, size_t bytes, std::vector<const char*>* landed,
                    PlatformFailure* failure) {
    if (peers.empty()) return xcclSuccess;
    std::vector<int> raiser(topology_.nranks, kUnwatched);
    for (int peer : peers) raiser[peer] = peer;
    XCCL_TRY(transport_->WaitSlotsRaisedBy(arrivals_.first, epoch_, raiser, "its data", deadline_,
                                           call_.stream, failure));
    for (int peer : peers) {
      const char* at = transport_->Received(peer, inboxes_.Offset(peer, epoch_));
      (*landed)[peer] = at + call_.header_bytes;
      if (call_.header_bytes == 0) continue;
      const size_t expected_end = put_at_ % inboxes_.slice + call_.header_bytes + bytes;
      size_t end = expected_end;
      uint64_t its_count = 0;
      std::memcpy(&its_count, at, sizeof(its_count));
      if (transport_->PutEnd(arrivals_.at(peer), epoch_, &end) &&
          (end != expected_end || its_count != call_.call_count))
        return SetFailure(failure, xcclInvalidUsage, peer,
                          "rank %d passed count %llu where this rank passed %llu: the ranks "
                          "passed different counts",
                          peer, static_cast<unsigned long long>(its_count),
                          static_cast<unsigned long long>(call_.call_count));
    }
    return xcclSuccess;
  }

  xcclResult_t Reduced(ReduceStage stage, const std::vector<const void*>& inputs, void* out,
                       size_t count, PlatformFailure* failure) {
    const xcclResult_t result = ReduceStageOnStream(stage, call_.datatype, call_.op, inputs.data(),
                                                    static_cast<int>(inputs.size()), out, count,
                                                    topology_.nranks, call_.stream);
    return result == xcclSuccess
               ? xcclSuccess
               : SetFailure(failure, result, me_, "%s", ThreadLastError().c_str());
  }

  Communicator* comm_;
  const PartialPlan& plan_;
  const SlotRange& arrivals_;
  const Inboxes& inboxes_;
  const Call& call_;
  char* partials_;
  Transport* transport_;
  const Topology& topology_;
  const int me_;
  uint32_t epoch_ = 0;
  size_t put_at_ = 0;
  Deadline deadline_{0};
};

}  // namespace

xcclResult_t ReduceScatterAcrossNodes(Communicator* comm, const char* op_name, const void* send,
                                      void* recv, size_t count, int datatype, int op,
                                      uint64_t call_count, xcclStream_t stream) {
  const PartialPlan plan = PlanPartials(comm->topology());
  const Inboxes inboxes = PlanInboxes(comm);
  SlotRange arrivals;
  XCCL_TRY(kArrivalSlots.Find(comm->slots(), &arrivals));
  const DeviceEngine* engine = comm->device_engine();
  const NodeReduceEngine* device_partials = engine != nullptr ? engine->node_reduce.get() : nullptr;
  if (engine != nullptr && device_partials == nullptr)
    return Fail(xcclInternalError, "%s: a communicator across nodes without its partials' memory",
                op_name);
  const size_t header = RegionHeaderBytes(comm);
  // Every put of a step fits a piece: the most pieces a rank receives from one peer, or one
  // partial (wider than an element for the 16- and 8-bit floats). GPU: a rank's partials of a
  // step also fit its partials' memory (a piece).
  const size_t elem = DataTypeSize(datatype), acc = AccumulatorSize(datatype);
  const size_t per_element = std::max(plan.most_owned * elem, acc);
  size_t step_count =
      inboxes.piece_limit > header ? (inboxes.piece_limit - header) / per_element : 0;
  if (device_partials != nullptr)
    step_count = std::min(step_count, device_partials->partial_bytes() / (plan.most_owned * acc));
  if (step_count == 0)
    return Fail(xcclInvalidUsage,
                "%s: the receive region's pieces are %zu bytes (XCCL_EAGER_BYTES on the host, "
                "XCCL_WINDOW_BYTES on GPUs), too few for one element of each of %zu blocks",
                op_name, inboxes.piece_limit, plan.most_owned);
  const Call call{static_cast<const char*>(send),
                  static_cast<char*>(recv),
                  count * elem,
                  datatype,
                  op,
                  call_count,
                  stream,
                  header};
  // Host: queued puts read the partials until the step's flush; a step that fails returns before
  // it, and the failure's abort stops the proxy (joined) before this vector goes (shm puts copy
  // at once). GPU: the engine's memory, reused only after a step's closing barrier.
  std::vector<char> host_partials;
  if (device_partials == nullptr) host_partials.resize(plan.most_owned * step_count * acc);
  char* partials = device_partials != nullptr ? device_partials->partials() : host_partials.data();
  LaunchGate gate(comm, op_name);
  XCCL_TRY(gate.Enter(stream));
  // Fenced against the operations before and after (the hierarchical all_gather may leave a rank
  // several epochs ahead); between its own steps no rank runs more than one epoch ahead of a
  // rank it puts to, since each step waits for every rank that feeds it (docs/ARCHITECTURE.md).
  // GPU steps close with a barrier of their own (EndQueuedOperation).
  XCCL_TRY(FenceRegion(comm, op_name, stream));
  Step step(comm, plan, arrivals, inboxes, call, partials);
  for (size_t first = 0; first < count; first += step_count) {
    PlatformFailure failure;
    if (step.Run(first, std::min(step_count, count - first), &failure) != xcclSuccess)
      return comm->RecordFailure(op_name, failure);
  }
  if (engine == nullptr) XCCL_TRY(Barrier(comm, nullptr));
  return gate.Leave();
}

}  // namespace xccl
