// The order in which fused ag_gemm hands the gathered rows to the GEMM plugin, band by band
// (docs/ARCHITECTURE.md, "ag_gemm"): which rows each GEMM call covers, which (source, band) flags
// it waits for first, and which compute stream runs it. A pure function of the op's geometry, so
// the op, gemm_plugin_perf (which times the same calls without the exchange) and the unit tests
// share it.
#pragma once

#include <cstdint>
#include <vector>

#include "fused/ag_gemm/chunk_rule.h"

namespace xccl {

// One flag a GEMM call waits for: band `band` of source rank `source` has landed.
struct BandWait {
  int source;
  int band;
  bool operator==(const BandWait& o) const { return source == o.source && band == o.band; }
};

// One call of the plugin's run entry.
struct GemmStep {
  int64_t row_begin;  // rows of the gathered A (and of C), counted from source 0's receive slot
  int64_t row_end;    // ... exclusive
  std::vector<BandWait> waits;  // flags seen before the call (none for the own rows)
  int compute_stream;           // 0: the caller's stream and plugin context; 1: the side ones
};

// The steps of one fused call on `rank` of `world` with `padded` rows per source receive slot cut
// into `bands` (BandRows; none when padded is 0):
// - the own rows first, all bands in one call on compute stream 0, waiting for nothing;
// - then, band by band, the peers in rotation from rank - 1 (the order in which their rows are
//   likeliest to be complete: every rank pushes to rank + 1 first). With `sources_per_gemm` 2
//   and one band per source, two sources consecutive in that rotation share one call where
//   their receive slots are adjacent in the window (source s + 1 and then s; not world - 1 and then
//   0). A source that cannot be paired so gets a call of its own, and those come first, beside the
//   own rows' GEMM on the other compute stream, then the pairs in rotation order (at world 8: the
//   own rows, one single, three pairs on every rank). Left last, the single would run alone at the
//   end (docs/perf-history.md, fourth round).
// - with `compute_streams` 2 the peer calls take the side stream and compute stream 0 in turn, the
// side stream first
//   (so the first peer call can overlap the own rows' GEMM); with 1, all run on compute stream 0.
std::vector<GemmStep> FusedGemmSchedule(int rank, int world, int64_t padded,
                                        const std::vector<RowRange>& bands, int sources_per_gemm,
                                        int compute_streams);

}  // namespace xccl
