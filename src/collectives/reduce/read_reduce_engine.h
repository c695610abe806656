// The reductions' device engine (GPU builds, read_reduce_engine.cu; docs/ARCHITECTURE.md,
// "Reductions"): where every rank reaches every other rank's buffers (one process on one node;
// or one node, for calls whose buffers lie in windows or xcclMemAlloc memory), each rank's
// kernel reads its part straight from every rank's send buffer and reduces it in rank order: no
// copy, every input byte read once and every output byte written once (all_reduce: written into
// every rank's output). One kernel per call opens with an offer (each rank stores
// its buffers' addresses and its call number into every peer's window) and closes by telling
// every peer it is done, so no rank's stream moves past the call while a peer may still read or
// write its buffers. The host build has none.
#pragma once

#include <cstddef>
#include <memory>

#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "collectives/reduce/buffers_as_seen.h"
#include "collectives/reduce/read_reduce_grid.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

// The part of a reduction one rank's kernel computes (byte offsets into every rank's buffers).
struct ReducedPart {
  size_t first_byte = 0;  // in every send buffer: reduce_scatter's block, all_reduce's part
  size_t count = 0;
  size_t out_byte = 0;         // in the receive buffer(s)
  bool to_every_rank = false;  // all_reduce: every rank's receive buffer gets the part
  int single_source = -1;      // broadcast: that rank's send buffer alone (bytes, as they are)
  GridLimit grid;              // what the caller asks of the grid (read_reduce_grid.h)
};

// Which calls the engine runs (the same answer on every rank).
enum class ReadReach {
  kNone,           // none: they go through the receive region
  kEveryCall,      // every call: the ranks are threads of one process
  kMappedBuffers,  // calls whose buffers every rank of the node maps (zero_copy_targets.h)
};

class ReadReduceEngine {
 public:
  virtual ~ReadReduceEngine() = default;
  virtual ReadReach reach() const = 0;
  // One kernel on `stream`, which closes the call itself (after BeginOperation, not queued):
  // the rank-order reduction of `part.count` elements from byte
  // `part.first_byte` of every rank's send buffer, written at `part.out_byte` of this rank's
  // receive buffer, or of every rank's (`part.to_every_rank`).
  virtual xcclResult_t Run(const Transport& transport, const BuffersAsSeen& buffers,
                           const ReducedPart& part, int datatype, int op, xcclStream_t stream,
                           PlatformFailure* failure) = 0;
};

// Which calls the engine runs for a communicator (the same answer on every rank), before it
// exists: the window plan needs no region where it is kEveryCall.
ReadReach PlanReadReach(const Params& params, const Topology& topology);

// Before the slot map is laid: the offers' device-only slots.
xcclResult_t ReserveReadReduceSlots(const Topology& topology, SlotMap* slots);

// After the transport: loads the kernels, finds the slots, decides where the engine reads.
xcclResult_t CreateReadReduceEngine(const Params& params, const Topology& topology,
                                    const SlotMap& slots, const Transport& transport,
                                    std::unique_ptr<ReadReduceEngine>* out);

}  // namespace xccl
