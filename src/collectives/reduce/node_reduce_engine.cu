#include <algorithm>

#include "base/error.h"
#include "collectives/reduce/grouped_reduce_kernel.h"
#include "collectives/reduce/node_reduce_engine.h"
#include "platform/gpu/gpu_call.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t CreateNodeReduceEngine(const Topology& topology, const Transport& transport,
                                    std::unique_ptr<NodeReduceEngine>* out) {
  out->reset();
  if (topology.node_count < 2) return xcclSuccess;
  XCCL_GPU_TRY(PreloadGroupedReduce());
  // A region piece on GPUs (collectives/region/inboxes.h: a piece takes the whole slice there).
  const size_t bytes =
      std::max<size_t>(std::min(transport.slice_bytes(), transport.region_put_limit()), 1);
  const int device = topology.ranks[topology.rank].device;
  void* partials = nullptr;
  XCCL_TRY(AllocateOpBuffer(device, bytes, &partials));
  *out = std::make_unique<NodeReduceEngine>(device, static_cast<char*>(partials), bytes);
  return xcclSuccess;
}

}  // namespace xccl
