// Who every rank is (host, process, device) and which ranks share a node, learned at init by
// an all-gather of RankInfo over the bootstrap.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "xccl.h"

namespace xccl {

struct RankInfo {
  char hostname[64];
  uint64_t host_hash;  // hostname + boot id: equal exactly for ranks on one node
  int32_t pid;
  int32_t device;
  uint64_t process_token;  // random per process: tells threads of one process apart from
                           // processes that reuse a pid in another namespace
  // What decides whether two ranks of one machine can share memory (docs/ARCHITECTURE.md,
  // "Communicator creation"): the /dev/shm device and the IPC namespace; and whether one can ask
  // about or copy into the other's process: the pid namespace.
  uint64_t shm_device;
  uint64_t ipc_namespace;
  uint64_t pid_namespace;
};

// This process's token (RankInfo::process_token), drawn again after a fork.
uint64_t ProcessToken();

struct Topology {
  int rank = 0;
  int nranks = 0;
  std::vector<RankInfo> ranks;
  std::vector<int> node_of_rank;  // node index per rank, 0-based in order of first rank
  int node_count = 0;
  std::vector<int> local_ranks;  // ranks on this rank's node, ascending

  bool SameProcess(int peer) const {
    return ranks[peer].process_token == ranks[rank].process_token;
  }
  // Whether another rank of this process uses this rank's device: a call here that waits for
  // the whole device can then wait for that peer's kernel, which may wait for this rank.
  bool SharesDeviceInProcess() const {
    for (int r : local_ranks)
      if (r != rank && ranks[r].device == ranks[rank].device && SameProcess(r)) return true;
    return false;
  }
  // Ranks of this node on this rank's device, this rank included.
  int RanksOnMyDevice() const {
    int count = 0;
    for (int r : local_ranks) count += ranks[r].device == ranks[rank].device;
    return count;
  }
  // Whether a rank of this node runs in another process.
  bool AnyPeerInOtherProcess() const {
    for (int r : local_ranks)
      if (!SameProcess(r)) return true;
    return false;
  }
  // Whether two ranks of one node, any node, run in different processes (the same answer on
  // every rank).
  bool AnyNodeSharedByProcesses() const {
    for (int a = 0; a < nranks; ++a)
      for (int b = a + 1; b < nranks; ++b)
        if (node_of_rank[a] == node_of_rank[b] && ranks[a].process_token != ranks[b].process_token)
          return true;
    return false;
  }
  // The most ranks of this node on one device (the same answer on every rank).
  int MostRanksOnOneDevice() const {
    int most = 0;
    for (int r : local_ranks) {
      int count = 0;
      for (int q : local_ranks) count += ranks[q].device == ranks[r].device;
      most = count > most ? count : most;
    }
    return most;
  }
  // Whether any two ranks of this node share a device (the same answer on every rank).
  bool AnyDeviceShared() const {
    for (int r : local_ranks)
      for (int q : local_ranks)
        if (q != r && ranks[q].device == ranks[r].device) return true;
    return false;
  }
};

// Whether two ranks of any node share a device: the same answer on every rank of every node
// (a choice all ranks must make alike, unlike Topology::AnyDeviceShared, which is this node's).
bool AnyNodeSharesADevice(const Topology& topology);

// Every node's ranks, ascending; a rank's index among its node's (-1 if it is not there).
std::vector<std::vector<int>> RanksByNode(const Topology& topology);
int LocalIndex(const std::vector<int>& node_ranks, int rank);

// A node's rank on the rail of local index `local_index` (the index modulo the node's size, so
// uneven nodes wrap onto the smaller node's ranks): where a hierarchical collective's block of
// that index lands, and whom the liveness overlay watches.
int RailTarget(const std::vector<int>& node_ranks, int local_index);

// `hostid` (XCCL_HOSTID) replaces the hostname and boot id as the node's identity, as NCCL_HOSTID
// does, so that processes of one machine can play several nodes.
RankInfo DescribeThisRank(int device, const std::string& hostid = "");
// Groups ranks into nodes: one host (host_hash) and the same /dev/shm, IPC and pid namespaces;
// pure, for tests.
void GroupNodes(Topology* topology);
// XCCL_FAKE_NODES (testing): "2,1,3" puts ranks 0-1 on a node, rank 2 on the next and 3-5 on a
// third, whatever their hosts, also the ranks of one process (threads, xcclCommInitAll). The
// sizes must add up to nranks. Empty: the grouping by host stays.
xcclResult_t ApplyFakeNodes(const std::string& spec, Topology* topology);
// xcclInvalidUsage naming `who` (e.g. "the host platform") unless every rank is on this node:
// the GPU platforms reach peers through device mappings only (the host platform's transport
// crosses nodes over the net backend).
xcclResult_t RequireOneNode(const Topology& topology, const char* who);

}  // namespace xccl
