// Same node, GPU: one buffer of every rank of the node made reachable from this rank. A rank of
// this process is reached through its pointer itself (an IPC handle cannot be opened in the
// process that made it: CUDA runtime docs, cudaIpcOpenMemHandle), another process through an IPC
// mapping. One open loop serves the control windows at init and the op buffers (fused ops'
// windows) alike.
#pragma once

#include <vector>

#include "base/topology.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

struct PeerBuffers {
  int device = 0;            // this rank's, made current to close the mappings
  std::vector<void*> at;     // [rank]: its buffer as this process addresses it (own: local;
                             // null for a rank of another node)
  std::vector<bool> opened;  // [rank]: an IPC mapping to be closed (ClosePeerBuffers)
};

// Collective over every rank (every rank takes part in both rounds, whatever failed locally, so
// none waits): announces `local` (NULL: this rank failed before, and says so), maps every peer's
// of this node (ranks of other nodes stay null), enables peer access to other devices where
// `enable_peer_access`, and ends in a verdict round. On any rank's failure nothing stays mapped;
// `what` names the buffer in errors.
xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, const Topology& topology, int device, void* local,
                            bool enable_peer_access, const char* what, PeerBuffers* out);

// Closes the IPC mappings of `buffers` (on their device).
void ClosePeerBuffers(PeerBuffers* buffers);

// A device copy of a host table of pointers (kernels load it once per launch); freed with gpuFree.
xcclResult_t UploadPointerTable(const std::vector<void*>& table, void*** device_table);

}  // namespace xccl
