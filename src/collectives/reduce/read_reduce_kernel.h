// The read engine's kernels (read_reduce_engine.h): the offer and the wait for every peer's (one
// small block), then the rank-order reduction of what the offers point at (a grid that never
// waits). GPU builds only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/reduce/reduce_kernel.h"
#include "platform/gpu.h"
#include "transport/device_view.h"

namespace xccl {

// Per source s, four words in every rank's window from `offers`: [0] the device epoch of s's
// latest offer, [2] and [3] the low and high halves of s's send buffer address.
constexpr int kOfferWords = 4;

struct ReadReduceCall {
  int offers = 0;              // first offer slot
  const char* send = nullptr;  // this rank's send buffer (every rank of the process reads it)
  size_t first_byte = 0;       // where each rank's part to reduce starts in every send buffer
  char* out = nullptr;
  size_t count = 0;
  int blocks = 1;
};

gpuError_t PreloadReadReduce();

gpuError_t LaunchReadReduce(const DeviceView& view, const ReadReduceCall& call, int datatype,
                            int op, gpuStream_t stream);

}  // namespace xccl
