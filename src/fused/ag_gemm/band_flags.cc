#include "fused/ag_gemm/band_flags.h"

namespace xccl {

namespace {
constexpr char kBandFlags[] = "ag_gemm.band_flags";
}  // namespace

xcclResult_t ReserveBandFlags(int nranks, SlotMap* slots) {
  return slots->Reserve(kBandFlags, nranks * kMaxBands, SlotReach::kSignalled);
}

xcclResult_t FindBandFlags(const SlotMap& slots, SlotRange* out) {
  return slots.Find(kBandFlags, out);
}

}  // namespace xccl
