// The barrier's control slots (transport/slot_map.h): one per rank, raised by that rank with the
// barrier's epoch; the device engine's barrier kernel and the host barrier use the same ones.
#pragma once

#include "transport/slot_map.h"
#include "xccl.h"

namespace xccl {

xcclResult_t ReserveBarrierSlots(int nranks, SlotMap* slots);
xcclResult_t FindBarrierSlots(const SlotMap& slots, SlotRange* out);

}  // namespace xccl
