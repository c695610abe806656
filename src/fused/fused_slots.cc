#include "fused/fused_slots.h"

#include "fused/ag_gemm/band_flags.h"

namespace xccl {

xcclResult_t ReserveFusedSlots(int nranks, SlotMap* slots) {
  return kBandFlagSlots.Reserve(nranks * kMaxBands, slots);
}

}  // namespace xccl
