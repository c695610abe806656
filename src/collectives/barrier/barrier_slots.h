// The barrier's control slots (transport/slot_map.h): one per rank, raised by that rank with the
// barrier's epoch; the device engine's barrier kernel and the host barrier use the same ones.
#pragma once

#include "transport/slot_map.h"

namespace xccl {

inline constexpr SlotName kBarrierSlots{"barrier", SlotReach::kSignalled};

}  // namespace xccl
