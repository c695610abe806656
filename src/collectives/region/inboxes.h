// The inboxes of the ops that go through the receive region (all_gather, the reductions;
// docs/ARCHITECTURE.md, "all_gather on the host"): source s's pieces land in slice s of every
// receiver's region (Transport::slice_bytes). Where an operation ends without a
// closing barrier (the host platform) a rank may run one operation ahead of a peer, so each slice
// holds two pieces, one per epoch parity; on GPUs the closing barrier keeps ranks in step and a
// piece takes the whole slice. Pieces are cut by what a slice may grow to (slice_cap_bytes), and a
// call's launch gate grows the slices to hold its pieces (RegionBytesFor) before any is put.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.h"

namespace xccl {

struct Inboxes {
  size_t slice = 0;
  bool by_parity = false;
  size_t piece_limit = 1;  // the most one source puts per operation
  // Where source `src`'s piece of operation `epoch` lands in a receiver's region.
  size_t Offset(int src, uint32_t epoch) const {
    return static_cast<size_t>(src) * slice + (by_parity ? (epoch & 1) * (slice / 2) : 0);
  }
};

Inboxes PlanInboxes(Communicator* comm);

// The most one source puts per operation into a slice of `transport`'s region, halved where the
// slice holds a piece per epoch parity (Inboxes::by_parity); 0 where the region has no slices.
size_t PieceLimit(const Transport& transport, bool by_parity);

// The slice a call needs that puts `bytes` per source through the region, in pieces of at most
// PlanInboxes' piece_limit: what it passes to its launch gate (LaunchGate::Enter).
size_t RegionBytesFor(Communicator* comm, size_t bytes);

}  // namespace xccl
