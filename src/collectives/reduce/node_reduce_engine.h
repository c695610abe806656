// The device engine of the reductions across nodes (GPU builds, node_reduce_engine.cu;
// docs/ARCHITECTURE.md, "Reductions across nodes"): the grouped kernels loaded, and device memory
// for the node partials a rank makes in one step of reduce_scatter across nodes, which cross the
// network from there. Made at init for communicators that span nodes, since allocating or
// freeing device memory inside a call can wait for the whole device (ranks sharing it stall).
#pragma once

#include <cstddef>
#include <memory>

#include "base/topology.h"
#include "platform/runtime.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class NodeReduceEngine {
 public:
  NodeReduceEngine(int device, char* partials, size_t partial_bytes)
      : device_(device), partials_(partials), partial_bytes_(partial_bytes) {}
  ~NodeReduceEngine() { FreeOpBuffer(device_, partials_); }
  NodeReduceEngine(const NodeReduceEngine&) = delete;
  NodeReduceEngine& operator=(const NodeReduceEngine&) = delete;

  char* partials() const { return partials_; }
  // A region piece (the most one put carries): a step's partials fit it.
  size_t partial_bytes() const { return partial_bytes_; }

 private:
  int device_;
  char* partials_;
  size_t partial_bytes_;
};

// Null for a communicator of one node.
xcclResult_t CreateNodeReduceEngine(const Topology& topology, const Transport& transport,
                                    std::unique_ptr<NodeReduceEngine>* out);

}  // namespace xccl
