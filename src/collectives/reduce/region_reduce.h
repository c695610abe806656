// One reducing step through the receive region (docs/ARCHITECTURE.md, "Reductions"): in one
// operation every rank puts its piece for each peer into that peer's region (slice `rank`, by
// collectives/region/inboxes.h), and once every peer's piece for this rank is in, this rank
// reduces them with its own, in rank order, into `out`. reduce_scatter's steps (a rank's piece for
// dst: its block dst) and all_reduce's one-shot steps (the same piece for every rank) are this,
// and broadcast's, a step with one source (the others' pieces empty, so every rank still hears
// from every peer in each epoch, which keeps the region's epoch parity safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

struct RegionReduceStep {
  std::function<const void*(int dst)> piece_for;  // this rank's piece for `dst` (dst == rank: own)
  size_t count = 0;                               // elements in every piece
  void* out = nullptr;                            // may be this rank's own piece (in place)
  // The count of the user's call, the same on every rank that passed the same one: on the host it
  // travels ahead of each piece, so that ranks that passed different counts all fail at the first
  // step, not only where their pieces differ in size.
  uint64_t call_count = 0;
  // Broadcast: only this rank's piece carries data (the others put none, their pieces are not
  // read), and `out` gets its elements as they are (callers pass bytes). -1: a reduction.
  int only_source = -1;
};

// Every peer's previous operation is over before a piece lands in its region: on GPUs the kernel
// all_gather keeps its rings in the same inboxes and may end before a peer has drained them, and
// across nodes the hierarchical all_gather forwards pieces of several epochs, so a rank may be
// more than the one epoch ahead that the parity halves allow (docs/ARCHITECTURE.md,
// "Reductions"). GPU: a device barrier on `stream`; host: a barrier across nodes, else nothing.
// A failure is recorded as `op_name`'s.
xcclResult_t FenceRegion(Communicator* comm, const char* op_name, xcclStream_t stream);

// Bytes ahead of each region put of a reducing step: the call's count, where the host can check
// it (PutEnd answers there); 0 on GPUs, whose stream-ordered puts the host cannot read.
size_t RegionHeaderBytes(Communicator* comm);

// The most elements of `datatype` one step carries (every rank the same); xcclInvalidUsage naming
// `op_name` where the region's pieces hold not even one (a tiny XCCL_EAGER_BYTES on the host).
xcclResult_t RegionStepCount(Communicator* comm, const char* op_name, int datatype, size_t* count);
// The slice a call of `count` elements in steps of `step_count` needs: its launch gate's
// region_bytes (collectives/launch_gate.h).
size_t RegionReduceBytes(Communicator* comm, size_t step_count, size_t count, int datatype);

// Failures are recorded on the communicator as `op_name`'s. On the host the ranks' counts are
// checked: a peer whose call count or piece differs fails the step (xcclInvalidUsage, naming it).
xcclResult_t ReduceThroughRegion(Communicator* comm, const char* op_name, int datatype, int op,
                                 const RegionReduceStep& step, xcclStream_t stream);

}  // namespace xccl
