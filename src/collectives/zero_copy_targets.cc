#include "collectives/zero_copy_targets.h"

#include <algorithm>

#include "transport/peer_imports.h"
#include "transport/user_memory.h"

namespace xccl {

bool ZeroCopyTargets(Communicator* comm, void* recv, size_t total_bytes, std::vector<char*>* at) {
  const Topology& topology = comm->topology();
  const int rank = topology.rank;
  at->assign(topology.nranks, nullptr);
  if (comm->params().zero_copy == 0) return false;
  // Ranks of this process reach recv itself: only a peer of another process needs the window or
  // allocation holding it, whose lookups take locks on every call.
  const bool other_process = topology.AnyPeerInOtherProcess();
  const xcclWindow* window = other_process ? comm->windows().Find(recv, total_bytes) : nullptr;
  const size_t offset = window != nullptr ? static_cast<char*>(recv) - window->local : 0;
  UserAllocation allocation;
  const bool allocated = other_process && window == nullptr &&
                         FindUserAllocation(recv, total_bytes, /*pin=*/false, &allocation);
  // A peer that does not answer is not waited for long: its blocks then take the inboxes.
  const int64_t ask_ms = std::min<int64_t>(comm->timeout_ms(), 5000);
  for (int s = 0; s < topology.nranks; ++s) {
    if (s == rank || topology.node_of_rank[s] != topology.node_of_rank[rank]) continue;
    if (topology.SameProcess(s)) {
      (*at)[s] = static_cast<char*>(recv);
    } else if (window != nullptr && window->seen_by[s] != nullptr) {
      (*at)[s] = window->seen_by[s] + offset;
    } else if (allocated) {
      char* base = PeerAddressOf(allocation, topology.ranks[s].process_token,
                                 topology.ranks[s].device, ask_ms);
      if (base != nullptr) (*at)[s] = base + (static_cast<char*>(recv) - allocation.base);
    }
  }
  return window != nullptr || allocated;
}

}  // namespace xccl
