// The liveness watch over the other processes of this node's ranks of one communicator, for
// ranks whose waits run on a device: a kernel cannot look at a process, so without it a dead
// peer is found only at XCCL_TIMEOUT_MS. Each pair of such processes holds one unix stream
// connection, made at init; one thread polls them beside each peer's pidfd (the process's exit,
// zombies included, also where a child inherited the socket; /proc every 100 ms where no pidfd
// can be had). A rank that leaves in order (destroy) or aborts says so on the connection before
// it closes; any other end of a peer is its death, reported within milliseconds. Peers on other
// nodes are the proxy's (their connections and heartbeats); ranks of this process die with it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <thread>
#include <vector>

#include "base/failure.h"
#include "base/topology.h"
#include "transport/bootstrap/socket.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

class PeerWatch {
 public:
  // The watch thread, once per lost peer: `failure` names the rank to blame (the dead one, or
  // the one an aborting peer saw fail) and why.
  using OnLoss = std::function<void(int peer, const PlatformFailure& failure)>;

  PeerWatch() = default;
  ~PeerWatch() { Close(); }
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Collective over every rank of `bootstrap`, also those with nothing to watch, and whatever
  // failed locally (one verdict round), so that no rank waits for one that gave up. Waits at
  // most `timeout_ms` for the connections.
  xcclResult_t Start(Bootstrap* bootstrap, const Topology& topology, int64_t timeout_ms,
                     OnLoss on_loss);
  // Tells every watched peer that this rank leaves in order, then stops: no OnLoss after it.
  void Close() { Stop(kBye, kNoPeer); }
  // Tells every watched peer that this rank failed because of `failed_peer` (kNoPeer: none
  // known), then stops.
  void Abort(int failed_peer) { Stop(kAbort, failed_peer); }
  // Peers watched (other processes of this node).
  int watched() const { return static_cast<int>(peers_.size()); }

  // What a peer says on its connection before it closes.
  enum WordKind : uint32_t { kBye = 1, kAbort = 2 };

 private:
  struct Peer {
    int rank = -1;
    Socket socket;
    int pidfd = -1;     // -1: none (old kernel, or a pid this namespace cannot see)
    pid_t pid = 0;      // as this process sees it (SO_PEERCRED); 0: unknown
    bool done = false;  // left in order, or reported lost
    bool left = false;  // said kBye
    unsigned char partial[8] = {};
    size_t partial_bytes = 0;
  };

  xcclResult_t Connect(Bootstrap* bootstrap, int64_t timeout_ms);
  void Run();
  // Reads what `peer` said; true when its connection has ended (EOF or error).
  bool Drain(Peer& peer);
  void Ended(Peer& peer);
  void Lose(Peer& peer, const PlatformFailure& failure);
  void Stop(WordKind last, int blamed);

  Topology topology_;
  OnLoss on_loss_;
  std::vector<Peer> peers_;
  int wake_ = -1;  // eventfd: stop
  std::thread thread_;
};

}  // namespace xccl
