// How this rank reaches each peer, chosen once at init from the topology and logged at
// XCCL_DEBUG=INFO: itself, a rank of this process, a rank of another process on this node over
// GPU peer mappings (p2p) or over shared memory (shm). A Connection per peer then carries a
// put and its flag in order (transport/shm/shm_transport.h on the host).
#pragma once

#include "core/topology.h"

namespace xccl {

enum class TransportKind { kSelf, kSameProcess, kP2p, kShm };

const char* TransportKindName(TransportKind kind);

// `device_memory`: the ranks' buffers are GPU memory (another process is then reached over
// p2p mappings), else host memory (over shm and cross-memory copies).
TransportKind ChooseTransport(const Topology& topology, int peer, bool device_memory);

// Logs this rank's transport to every peer, one line per kind with its peers.
void LogTransports(const Topology& topology, bool device_memory);

}  // namespace xccl
