#include "collectives/zero_copy_targets.h"

#include "core/params.h"

namespace xccl {

void ZeroCopyTargets(Communicator* comm, void* recv, size_t total_bytes, std::vector<char*>* at) {
  const Topology& topology = comm->topology();
  const int rank = topology.rank;
  at->assign(topology.nranks, nullptr);
  if (GetParams().zero_copy == 0) return;
  const xcclWindow* window = comm->windows().Find(recv, total_bytes);
  const size_t offset = window != nullptr ? static_cast<char*>(recv) - window->local : 0;
  for (int s = 0; s < topology.nranks; ++s) {
    if (s == rank || topology.node_of_rank[s] != topology.node_of_rank[rank]) continue;
    if (topology.SameProcess(s)) {
      (*at)[s] = static_cast<char*>(recv);
    } else if (window != nullptr && window->seen_by[s] != nullptr) {
      (*at)[s] = window->seen_by[s] + offset;
    }
  }
}

}  // namespace xccl
