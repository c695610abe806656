// ag_gemm's fused mode: the flag a rank raises in every peer's control window once band `band` of
// its rows has landed there, kMaxBands per source among the slots the op asked for
// (transport/slot_map.h).
#pragma once

#include "transport/slot_map.h"
#include "xccl.h"

namespace xccl {

constexpr int kMaxBands = 8;

// kMaxBands per source, asked for by every communicator at init: an op made later signals in them.
inline constexpr SlotName kBandFlagSlots{"ag_gemm.band_flags", SlotReach::kSignalled};

inline int BandFlag(const SlotRange& flags, int src, int band) {
  return flags.at(src * kMaxBands + band);
}

}  // namespace xccl
