#include "collectives/collective_slots.h"

#include "base/error.h"
#include "collectives/barrier/barrier_slots.h"
#include "collectives/region/arrivals.h"

namespace xccl {

xcclResult_t ReserveCollectiveSlots(int nranks, SlotMap* slots) {
  XCCL_TRY(kArrivalSlots.Reserve(nranks, slots));
  return kBarrierSlots.Reserve(nranks, slots);
}

}  // namespace xccl
