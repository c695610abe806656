// The arrival flags of the ops that land data in receive buffers or the receive region
// (transport/slot_map.h): slot first + s of every rank's window is raised once source s's block
// (or a piece of it, each piece its own epoch) has landed in that rank's receive buffer or inbox,
// by s or by the rank of this node that forwards s's block. Every such op puts to every peer in
// each of its epochs, so all of them share these slots (docs/ARCHITECTURE.md, "Reductions").
#pragma once

#include <functional>

#include "base/deadline.h"
#include "base/failure.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

// One per source rank.
inline constexpr SlotName kArrivalSlots{"region.arrivals", SlotReach::kSignalled};

// Until every peer's own arrival reaches `epoch`, calling `on_arrival(peer)` once its block is
// there. Host: as each arrives, in reverse rotation (rank - 1 pushes to this rank first). Device:
// stream-ordered on `stream` after one wait kernel for all of them.
xcclResult_t WaitArrivals(Transport* transport, const SlotRange& arrivals, int rank, int nranks,
                          uint32_t epoch, const Deadline& deadline, xcclStream_t stream,
                          const std::function<void(int peer)>& on_arrival,
                          PlatformFailure* failure);

}  // namespace xccl
