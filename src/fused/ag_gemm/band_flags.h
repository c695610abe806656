// ag_gemm's fused mode: the flag a rank raises in every peer's control window once band `band` of
// its rows has landed there, in the op slots the window keeps per source.
#pragma once

#include "transport/window.h"

namespace xccl {

constexpr int kMaxBands = ControlLayout::kOpSlotsPerSource;

inline int BandFlag(int src, int band, int nranks) {
  return ControlLayout::OpSlot(src, band, nranks);
}

}  // namespace xccl
