#include "fused/fused_slots.h"

#include "fused/ag_gemm/band_flags.h"

namespace xccl {

xcclResult_t ReserveFusedSlots(int nranks, SlotMap* slots) {
  return ReserveBandFlags(nranks, slots);
}

}  // namespace xccl
