#include "collectives/barrier/barrier_slots.h"

namespace xccl {

namespace {
constexpr char kBarrier[] = "barrier";
}  // namespace

xcclResult_t ReserveBarrierSlots(int nranks, SlotMap* slots) {
  return slots->Reserve(kBarrier, nranks, SlotReach::kSignalled);
}

xcclResult_t FindBarrierSlots(const SlotMap& slots, SlotRange* out) {
  return slots.Find(kBarrier, out);
}

}  // namespace xccl
