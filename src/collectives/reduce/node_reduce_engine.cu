#include "base/error.h"
#include "collectives/reduce/grouped_reduce_kernel.h"
#include "collectives/reduce/node_reduce_engine.h"
#include "collectives/region/inboxes.h"
#include "platform/gpu/gpu_call.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t CreateNodeReduceEngine(const Topology& topology, const Transport& transport,
                                    std::unique_ptr<NodeReduceEngine>* out) {
  out->reset();
  if (topology.node_count < 2) return xcclSuccess;
  XCCL_GPU_TRY(PreloadGroupedReduce());
  // A region piece on GPUs, where a piece takes the whole slice.
  const size_t bytes = PieceLimit(transport, /*by_parity=*/false);
  const int device = topology.ranks[topology.rank].device;
  void* partials = nullptr;
  XCCL_TRY(AllocateOpBuffer(device, bytes, &partials));
  *out = std::make_unique<NodeReduceEngine>(device, static_cast<char*>(partials), bytes);
  return xcclSuccess;
}

}  // namespace xccl
