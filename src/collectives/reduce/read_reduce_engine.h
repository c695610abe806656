// The reductions' device engine (GPU builds, read_reduce_engine.cu; docs/ARCHITECTURE.md,
// "Reductions"): where every rank of the communicator lives in one process on one node, each
// rank's kernel reads its part straight from every rank's send buffer and reduces it in rank
// order: no copy, every input byte read once and every output byte written once. The step opens
// with an offer (each rank stores its send buffer's address and the device epoch into every
// peer's window) and closes with the closing barrier, so no rank's stream moves past the call
// while a peer may still read its send buffer. The host build has none.
#pragma once

#include <cstddef>
#include <memory>

#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class ReadReduceEngine {
 public:
  virtual ~ReadReduceEngine() = default;
  // Whether this engine runs the communicator's reductions (the same answer on every rank).
  virtual bool reads() const = 0;
  // One kernel on `stream`, inside an operation the caller began (BeginOperation) and ends
  // (EndQueuedOperation): out[i] = the rank-order reduction of element `first + i` of every
  // rank's `send` (byte offsets: reduce_scatter's block of this rank, or all_reduce's whole
  // buffer), for `count` elements.
  virtual xcclResult_t Run(const Transport& transport, const void* send, size_t first_byte,
                           void* out, size_t count, int datatype, int op, xcclStream_t stream,
                           PlatformFailure* failure) = 0;
};

// Before the slot map is laid: the offers' device-only slots.
xcclResult_t ReserveReadReduceSlots(const Topology& topology, SlotMap* slots);

// After the transport: loads the kernels, finds the slots, decides where the engine reads.
xcclResult_t CreateReadReduceEngine(const Params& params, const Topology& topology,
                                    const SlotMap& slots, std::unique_ptr<ReadReduceEngine>* out);

}  // namespace xccl
