// Every fused op's control slots, asked for at init (transport/slot_map.h), so that an op made
// on the communicator later finds them laid: one line per fused op here (docs/ARCHITECTURE.md,
// "Adding a fused op").
#pragma once

#include "transport/slot_map.h"
#include "xccl.h"

namespace xccl {

xcclResult_t ReserveFusedSlots(int nranks, SlotMap* slots);

}  // namespace xccl
