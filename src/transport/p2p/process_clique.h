// The ranks of one communicator that live in this process (docs/ARCHITECTURE.md, "Ranks sharing
// a GPU"). They share three things:
// - a launch gate per device: a rank that shares its device with other ranks of the process
//   passes the gate before and after it enqueues a collective's kernels, and passes only when
//   every such rank has reached the same gate. So no rank's kernel waits on the device for a
//   peer that is still in its own code (where a device-synchronising call or a blocked launch
//   would wait for that kernel), and no rank enqueues work behind its kernel before every peer's
//   matching kernel is enqueued (a hardware queue shared with a peer then never holds work that
//   waits for a kernel queued behind it);
// - an abort: a member that aborts makes every other member's device waits give up, naming it;
// - the end of memory: what a member gives up (its window, which the others' kernels store
//   into) is freed when the last member has left, so no member's kernel touches freed memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/failure.h"
#include "base/topology.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

class ProcessClique {
 public:
  // What a member does when another member aborts: make its own device waits give up, blaming
  // `blamed`.
  using OnPeerAbort = std::function<void(int blamed)>;

  explicit ProcessClique(const Topology& topology);
  ~ProcessClique();
  ProcessClique(const ProcessClique&) = delete;
  ProcessClique& operator=(const ProcessClique&) = delete;

  // Collective over every rank of `bootstrap`: the lowest rank of each process makes the clique,
  // the others of that process take it.
  static xcclResult_t Join(Bootstrap* bootstrap, const Topology& topology,
                           std::shared_ptr<ProcessClique>* out);

  // Whether `rank` shares its device with another member (only those pass gates).
  bool Gated(int rank) const { return !gate_peers_[rank].empty(); }
  // Counts one gate passed by `rank` and, with `wait`, waits until every member on its device has
  // passed as many. Fails naming the peer on the deadline, at once where a peer aborted or left.
  // Without `wait` (a call that failed half way) it only counts, so the members stay in step.
  xcclResult_t PassGate(int rank, bool wait, int64_t timeout_ms, PlatformFailure* failure);

  void Enter(int rank, OnPeerAbort on_peer_abort);
  // `rank` aborted (blaming `blamed`): every other member's waits give up, gates fail.
  void Abort(int rank, int blamed);
  // `rank` leaves; `release` frees what its peers' kernels may touch, run when the last member
  // has left (by that member's thread).
  void Leave(int rank, std::function<void()> release);

 private:
  struct alignas(64) Counter {
    std::atomic<uint64_t> passed{0};
    std::atomic<bool> left{false};
  };

  std::vector<std::vector<int>> gate_peers_;  // [rank] -> other members on its device
  std::unique_ptr<Counter[]> counters_;       // [rank]
  std::atomic<int> blamed_{-1};               // >= 0: a member aborted, blaming this rank
  std::mutex mutex_;
  std::vector<OnPeerAbort> on_abort_;  // [rank], empty once left
  std::vector<std::function<void()>> releases_;
  int members_ = 0;
  int left_ = 0;
};

}  // namespace xccl
