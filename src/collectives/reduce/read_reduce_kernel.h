// The read engine's kernel (read_reduce_engine.h; docs/ARCHITECTURE.md, "Reductions"): one
// launch per call, which offers, waits for the peers' offers, reduces, and closes. GPU builds
// only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/reduce/buffers_as_seen.h"
#include "collectives/reduce/reduce_kernel.h"
#include "platform/gpu.h"
#include "transport/device_view.h"

namespace xccl {

// Per source s, six words in every rank's window from `offers`: [0] the call number of s's
// latest offer, [1] of the latest call in which s finished reading and writing, [2] and [3] the
// low and high halves of s's send buffer address, [4] and [5] its receive buffer's. Then five
// words of this rank's own (ReadReduceCounters): the number of calls done (from the window's
// epoch base, so that the wrap is tested); the count of blocks done, whether one failed and the
// count of blocks started in this call (all three 0 between calls, set so at init); and the
// number of the latest call the opening block published (never reset: it starts at the epoch
// base, below the first call's number).
constexpr int kOfferWords = 6;
struct ReadReduceCounters {
  static constexpr int kCalls = 0, kBlocksDone = 1, kFailed = 2, kStarted = 3, kOpened = 4,
                       kCount = 5;
};
constexpr int OfferSlotCount(int nranks) {
  return kOfferWords * nranks + ReadReduceCounters::kCount;
}

struct ReadReduceCall {
  int offers = 0;              // first offer slot
  BuffersAsSeen buffers;       // this rank's, as each rank addresses them (offered to that rank)
  size_t first_byte = 0;       // where each rank's part to reduce starts in every send buffer
  size_t out_byte = 0;         // where the result goes in the receive buffer(s)
  bool to_every_rank = false;  // the result into every rank's receive buffer, else this rank's
  int single_source = -1;      // that rank's input alone (a copy: broadcast), else every rank's
  size_t count = 0;
  int blocks = 1;
};

gpuError_t PreloadReadReduce();

gpuError_t LaunchReadReduce(const DeviceView& view, const ReadReduceCall& call, int datatype,
                            int op, gpuStream_t stream);

}  // namespace xccl
