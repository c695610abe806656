#include "base/topology.h"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/fnv1a.h"
#include "base/logging.h"

namespace xccl {

// One random token per process, so that ranks in one process recognise each other. A child
// forked after the parent made communicators must not inherit the parent's token (it would
// take its peers for threads of its own process), so the token is drawn again when the pid
// changes.
uint64_t ProcessToken() {
  static std::mutex mutex;
  static pid_t owner = 0;
  static uint64_t token = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (owner != getpid()) {
    owner = getpid();
    if (getrandom(&token, sizeof(token), 0) != sizeof(token)) token = owner * 2654435761ull;
    token |= 1;
  }
  return token;
}

namespace {

// The device of a path, or its inode for a namespace link (0 where it cannot be read: then
// every rank that cannot read it looks alike, as before namespaces were looked at).
uint64_t DeviceOf(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? static_cast<uint64_t>(st.st_dev) : 0;
}
uint64_t InodeOf(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// What ranks must share to be one node: the host (or XCCL_HOSTID), and the means to share
// memory and copy between processes.
uint64_t NodeKey(const RankInfo& info) {
  return Fnv1a(std::to_string(info.host_hash) + "/" + std::to_string(info.shm_device) + "/" +
               std::to_string(info.ipc_namespace) + "/" + std::to_string(info.pid_namespace));
}

}  // namespace

RankInfo DescribeThisRank(int device, const std::string& hostid) {
  RankInfo info;
  memset(&info, 0, sizeof(info));
  gethostname(info.hostname, sizeof(info.hostname) - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  info.host_hash = hostid.empty() ? Fnv1a(std::string(info.hostname) + "/" + boot_id)
                                  : Fnv1a("hostid/" + hostid);
  info.shm_device = DeviceOf("/dev/shm");
  info.ipc_namespace = InodeOf("/proc/self/ns/ipc");
  info.pid_namespace = InodeOf("/proc/self/ns/pid");
  info.pid = getpid();
  info.device = device;
  info.process_token = ProcessToken();
  return info;
}

void GroupNodes(Topology* topology) {
  std::map<uint64_t, int> node_by_key;
  int split_from = -1;  // a rank of this host that is not on this node
  const uint64_t my_key = NodeKey(topology->ranks[topology->rank]);
  const RankInfo& mine = topology->ranks[topology->rank];
  topology->node_of_rank.assign(topology->nranks, 0);
  for (int r = 0; r < topology->nranks; ++r) {
    const RankInfo& info = topology->ranks[r];
    const uint64_t key = NodeKey(info);
    auto inserted = node_by_key.emplace(key, static_cast<int>(node_by_key.size()));
    topology->node_of_rank[r] = inserted.first->second;
    if (split_from < 0 && info.host_hash == mine.host_hash && key != my_key) split_from = r;
  }
  if (split_from >= 0)
    XCCL_INFO(kLogInit,
              "rank %d: rank %d runs on this host (%s) in another container (a different "
              "/dev/shm, IPC or pid namespace): they talk over the network",
              topology->rank, split_from, mine.hostname);
  topology->node_count = static_cast<int>(node_by_key.size());
  topology->local_ranks.clear();
  for (int r = 0; r < topology->nranks; ++r)
    if (topology->node_of_rank[r] == topology->node_of_rank[topology->rank])
      topology->local_ranks.push_back(r);
}

xcclResult_t ApplyFakeNodes(const std::string& spec, Topology* topology) {
  if (spec.empty()) return xcclSuccess;
  std::vector<int> node_of_rank;
  size_t at = 0;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string item = spec.substr(at, comma - at);
    char* end = nullptr;
    const long size = strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || size < 1 || size > topology->nranks)
      return Fail(xcclInvalidArgument,
                  "XCCL_FAKE_NODES=\"%s\": \"%s\" is not a node size (a comma-separated list of "
                  "ranks per node, e.g. 2,1,3)",
                  spec.c_str(), item.c_str());
    const int node = node_of_rank.empty() ? 0 : node_of_rank.back() + 1;
    node_of_rank.insert(node_of_rank.end(), size, node);
    at = comma + 1;
  }
  if (static_cast<int>(node_of_rank.size()) != topology->nranks)
    return Fail(xcclInvalidArgument,
                "XCCL_FAKE_NODES=\"%s\" places %zu ranks, the communicator has %d", spec.c_str(),
                node_of_rank.size(), topology->nranks);
  topology->node_of_rank = node_of_rank;
  topology->node_count = node_of_rank.back() + 1;
  topology->local_ranks.clear();
  for (int r = 0; r < topology->nranks; ++r)
    if (node_of_rank[r] == node_of_rank[topology->rank]) topology->local_ranks.push_back(r);
  return xcclSuccess;
}

bool AnyNodeSharesADevice(const Topology& topology) {
  std::vector<std::pair<int, int>> places;  // (node, device) of every rank
  places.reserve(static_cast<size_t>(topology.nranks));
  for (int r = 0; r < topology.nranks; ++r)
    places.emplace_back(topology.node_of_rank[r], topology.ranks[r].device);
  std::sort(places.begin(), places.end());
  return std::adjacent_find(places.begin(), places.end()) != places.end();
}

std::vector<std::vector<int>> RanksByNode(const Topology& topology) {
  std::vector<std::vector<int>> nodes(topology.node_count);
  for (int r = 0; r < topology.nranks; ++r) nodes[topology.node_of_rank[r]].push_back(r);
  return nodes;
}

int LocalIndex(const std::vector<int>& node_ranks, int rank) {
  for (size_t i = 0; i < node_ranks.size(); ++i)
    if (node_ranks[i] == rank) return static_cast<int>(i);
  return -1;
}

int RailTarget(const std::vector<int>& node_ranks, int local_index) {
  return node_ranks[local_index % static_cast<int>(node_ranks.size())];
}

xcclResult_t RequireOneNode(const Topology& topology, const char* who) {
  if (topology.node_count == 1) return xcclSuccess;
  return Fail(xcclInvalidUsage,
              "%s reaches the ranks of one node only (it has no network transport yet), but "
              "these %d ranks span %d nodes",
              who, topology.nranks, topology.node_count);
}

}  // namespace xccl
