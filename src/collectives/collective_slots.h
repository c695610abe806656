// Every collective's control slots, asked for at init (transport/slot_map.h): one line per
// collective here (docs/ARCHITECTURE.md, "Adding a collective"). The device engines' own
// counters are asked for by PlanDeviceWindow, on the builds that have them.
#pragma once

#include "transport/slot_map.h"
#include "xccl.h"

namespace xccl {

xcclResult_t ReserveCollectiveSlots(int nranks, SlotMap* slots);

}  // namespace xccl
