// all_gather's arrival flags (transport/slot_map.h): slot first + s of every rank's window is
// raised once source s's block (or a piece of it, each piece its own epoch) has landed in that
// rank's receive buffer or inbox, by s or by the rank of this node that forwards s's block.
#pragma once

#include <functional>

#include "base/deadline.h"
#include "base/failure.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

// One per source rank.
inline constexpr SlotName kArrivalSlots{"all_gather.arrivals", SlotReach::kSignalled};

// Until every peer's own arrival reaches `epoch`, calling `on_arrival(peer)` once its block is
// there. Host: as each arrives, in reverse rotation (rank - 1 pushes to this rank first). Device:
// stream-ordered on `stream` after one wait kernel for all of them.
xcclResult_t WaitArrivals(Transport* transport, const SlotRange& arrivals, int rank, int nranks,
                          uint32_t epoch, const Deadline& deadline, xcclStream_t stream,
                          const std::function<void(int peer)>& on_arrival,
                          PlatformFailure* failure);

}  // namespace xccl
