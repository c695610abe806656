#include "fused/ag_gemm/gemm_schedule.h"

#include <cstddef>
#include <utility>

namespace xccl {

std::vector<GemmStep> FusedGemmSchedule(int rank, int world, int64_t padded,
                                        const std::vector<RowRange>& bands, int sources_per_gemm,
                                        int compute_streams) {
  std::vector<GemmStep> steps;
  if (bands.empty() || world < 1) return steps;
  steps.push_back({rank * padded, (rank + 1) * padded, {}, 0});
  // Pairs join whole receive slots, so only where a band is the whole receive slot.
  const bool pair_sources = sources_per_gemm >= 2 && bands.size() == 1;
  int turn = 0;
  auto add = [&](int64_t begin, int64_t end, std::vector<BandWait> waits) {
    steps.push_back({begin, end, std::move(waits), compute_streams >= 2 ? (++turn % 2) : 0});
  };
  if (pair_sources) {
    // The rotation is two runs of adjacent receive slots, rank - 1 down to 0 and world - 1 down to
    // rank + 1. Each run pairs from its end, s + 1 with s, so a run of odd length leaves its head
    // (its earliest source) alone. Singles go first: beside the own rows' GEMM on the other compute
    // stream a single makes about one pair's work, and no small call is left for the tail. Then the
    // pairs in rotation order. At an even world every rank gets exactly one single, so every rank
    // makes calls of the same sizes in the same order.
    std::vector<std::vector<int>> singles, pairs;
    for (int step = world - 1; step >= 1; --step) {
      const int source = (rank - step + world) % world;  // the later of a would-be pair
      const int before = (source + 1) % world;           // the one rotated just before it
      if (step - 1 >= 1 && before == source + 1) {
        pairs.push_back({before, source});
        --step;
      } else {
        singles.push_back({source});
      }
    }
    for (const auto* groups : {&singles, &pairs}) {
      for (auto g = groups->rbegin(); g != groups->rend(); ++g) {  // built from the end
        const int low = g->back();  // the lower receive slot: the later source of a pair
        std::vector<BandWait> waits;
        for (int source : *g) waits.push_back({source, 0});
        add(low * padded, (low + static_cast<int64_t>(g->size())) * padded, std::move(waits));
      }
    }
    return steps;
  }
  for (std::size_t b = 0; b < bands.size(); ++b) {
    for (int step = 1; step < world; ++step) {
      const int source = (rank - step + world) % world;
      add(source * padded + bands[b].begin, source * padded + bands[b].end,
          {{source, static_cast<int>(b)}});
    }
  }
  return steps;
}

}  // namespace xccl
