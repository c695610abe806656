#include "fused/gemm_schedule.h"

#include <cstddef>

namespace xccl {

std::vector<GemmStep> FusedGemmSchedule(int rank, int world, int64_t padded,
                                        const std::vector<RowRange>& bands, int sources_per_gemm,
                                        int lanes) {
  std::vector<GemmStep> steps;
  if (bands.empty() || world < 1) return steps;
  steps.push_back({rank * padded, (rank + 1) * padded, {}, 0});
  // Pairs join whole slots, so only where a band is the whole slot.
  const bool pair_sources = sources_per_gemm >= 2 && bands.size() == 1;
  int turn = 0;
  for (std::size_t b = 0; b < bands.size(); ++b) {
    const int band = static_cast<int>(b);
    for (int step = 1; step < world; ++step) {
      const int source = (rank - step + world) % world;
      const int lane = lanes >= 2 ? (++turn % 2) : 0;
      // The next source in the rotation is source - 1; it shares this call when its slot sits
      // just below this one's (no wrap from rank 0 to rank world - 1).
      if (pair_sources && step + 1 < world && source > 0) {
        steps.push_back({(source - 1) * padded,
                         (source + 1) * padded,
                         {{source, band}, {source - 1, band}},
                         lane});
        ++step;
        continue;
      }
      steps.push_back({source * padded + bands[b].begin,
                       source * padded + bands[b].end,
                       {{source, band}},
                       lane});
    }
  }
  return steps;
}

}  // namespace xccl
