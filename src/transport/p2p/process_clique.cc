#include "transport/p2p/process_clique.h"

#include <chrono>
#include <map>
#include <thread>
#include <utility>

#include "base/deadline.h"
#include "base/error.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {

namespace {

// Cliques of this process by token, so that the members of one find it from the token its
// maker shares through the bootstrap.
std::mutex registry_mutex;
std::map<uint64_t, std::weak_ptr<ProcessClique>>& Registry() {
  static auto* registry = new std::map<uint64_t, std::weak_ptr<ProcessClique>>();
  return *registry;
}
uint64_t next_token = 0;  // under registry_mutex

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ProcessClique::ProcessClique(const Topology& topology)
    : gate_peers_(topology.nranks),
      counters_(new Counter[topology.nranks]),
      on_abort_(topology.nranks) {
  for (int r = 0; r < topology.nranks; ++r) {
    if (topology.ranks[r].process_token != topology.ranks[topology.rank].process_token) continue;
    ++members_;
    for (int p = 0; p < topology.nranks; ++p)
      if (p != r && topology.ranks[p].process_token == topology.ranks[r].process_token &&
          topology.node_of_rank[p] == topology.node_of_rank[r] &&
          topology.ranks[p].device == topology.ranks[r].device)
        gate_peers_[r].push_back(p);
  }
}

ProcessClique::~ProcessClique() = default;

xcclResult_t ProcessClique::Join(Bootstrap* bootstrap, const Topology& topology,
                                 std::shared_ptr<ProcessClique>* out) {
  const int rank = topology.rank;
  int maker = rank;
  for (int r = 0; r < rank; ++r)
    if (topology.SameProcess(r)) {
      maker = r;
      break;
    }
  std::shared_ptr<ProcessClique> made;
  std::vector<uint64_t> tokens(topology.nranks, 0);
  if (maker == rank) {
    made = std::make_shared<ProcessClique>(topology);
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (auto it = Registry().begin(); it != Registry().end();)
      it = it->second.expired() ? Registry().erase(it) : std::next(it);
    tokens[rank] = ++next_token;
    Registry()[tokens[rank]] = made;
  }
  XCCL_TRY(bootstrap->AllGather(tokens.data(), sizeof(uint64_t)));
  if (made) {
    *out = std::move(made);
    return xcclSuccess;
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto found = Registry().find(tokens[maker]);
  if (found != Registry().end()) *out = found->second.lock();
  if (!*out)
    return Fail(xcclInternalError, "rank %d: rank %d of this process left before init ended", rank,
                maker);
  return xcclSuccess;
}

xcclResult_t ProcessClique::PassGate(int rank, bool wait, int64_t timeout_ms,
                                     PlatformFailure* failure) {
  const uint64_t mine = counters_[rank].passed.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (!wait) return xcclSuccess;
  const Deadline deadline(timeout_ms);
  for (int peer : gate_peers_[rank]) {
    const Counter& theirs = counters_[peer];
    for (unsigned spins = 0; theirs.passed.load(std::memory_order_acquire) < mine; ++spins) {
      const int blamed = blamed_.load(std::memory_order_acquire);
      if (blamed >= 0)
        return SetFailure(failure, xcclRemoteError, blamed,
                          "rank %d aborted its communicator (a rank of this process)", blamed);
      if (theirs.left.load(std::memory_order_acquire))
        return SetFailure(failure, xcclRemoteError, peer,
                          "rank %d left the communicator while this rank still calls it", peer);
      if (spins < 4096) {
        CpuRelax();
        continue;
      }
      if (spins % 64 == 0 && deadline.Expired())
        return SetFailure(failure, xcclTimeout, peer,
                          "rank %d (a rank of this process on this device) did not reach its "
                          "next call within %lld ms",
                          peer, static_cast<long long>(timeout_ms));
      std::this_thread::yield();
    }
  }
  return xcclSuccess;
}

void ProcessClique::Enter(int rank, OnPeerAbort on_peer_abort) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_abort_[rank] = std::move(on_peer_abort);
}

void ProcessClique::Abort(int rank, int blamed) {
  int none = -1;
  blamed_.compare_exchange_strong(none, blamed, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t r = 0; r < on_abort_.size(); ++r)
    if (static_cast<int>(r) != rank && on_abort_[r]) on_abort_[r](blamed);
}

void ProcessClique::Leave(int rank, std::function<void()> release) {
  std::vector<std::function<void()>> now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    on_abort_[rank] = nullptr;
    counters_[rank].left.store(true, std::memory_order_release);
    if (release) releases_.push_back(std::move(release));
    if (++left_ < members_) return;
    now.swap(releases_);
  }
  for (auto& r : now) r();
}

}  // namespace xccl
