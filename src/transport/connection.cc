#include "transport/connection.h"

#include <string>

#include "base/logging.h"

namespace xccl {

const char* TransportKindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kSelf:
      return "self";
    case TransportKind::kSameProcess:
      return "same process";
    case TransportKind::kP2p:
      return "p2p";
    case TransportKind::kShm:
      return "shm";
    case TransportKind::kNet:
      return "net";
  }
  return "?";
}

TransportKind ChooseTransport(const Topology& topology, int peer, bool device_memory) {
  if (peer == topology.rank) return TransportKind::kSelf;
  if (topology.node_of_rank[peer] != topology.node_of_rank[topology.rank])
    return TransportKind::kNet;
  if (topology.SameProcess(peer)) return TransportKind::kSameProcess;
  return device_memory ? TransportKind::kP2p : TransportKind::kShm;
}

void LogTransports(const Topology& topology, bool device_memory) {
  for (TransportKind kind : {TransportKind::kSameProcess, TransportKind::kP2p, TransportKind::kShm,
                             TransportKind::kNet}) {
    std::string peers;
    for (int peer = 0; peer < topology.nranks; ++peer)
      if (peer != topology.rank && ChooseTransport(topology, peer, device_memory) == kind)
        peers += (peers.empty() ? "" : " ") + std::to_string(peer);
    if (!peers.empty())
      XCCL_INFO(kLogInit, "rank %d: %s to ranks %s", topology.rank, TransportKindName(kind),
                peers.c_str());
  }
}

xcclResult_t FlushEach(const std::vector<std::unique_ptr<Connection>>& connections,
                       const Deadline& deadline, PlatformFailure* failure) {
  xcclResult_t first = xcclSuccess;
  for (const std::unique_ptr<Connection>& connection : connections) {
    if (!connection) continue;
    PlatformFailure one;
    const xcclResult_t result = connection->Flush(deadline, &one);
    if (result != xcclSuccess && first == xcclSuccess) {
      first = result;
      *failure = one;
    }
  }
  return first;
}

}  // namespace xccl
