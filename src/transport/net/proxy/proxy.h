// The CPU proxy: one thread per communicator that progresses its net connections
// (docs/ARCHITECTURE.md, "Across nodes (host platform)"). A peer on another node is linked only
// once this rank first queues an op for it, or the peer links to this rank, or it is one of the
// watched peers of the liveness overlay (watch_overlay.h), linked at init: every rank listens
// from init on, and the thread connects and accepts as it goes. A link is a send comm each way
// (an accepted connection is answered with one), plus heartbeat comms each way on watched links.
// Ops queued for a peer go out in order, each a 32-byte header and then its bytes; on the
// receiving side the proxy reads the headers in order, asks the transport where each op's bytes
// land (NetLanding: the receive buffer published for its epoch, an inbox, or nothing for a
// signal), lands them and lets the transport raise the flag, so that a receiver waits on its own
// slots whatever carried the data. A connection that fails, or a watched peer silent for
// kSilenceMs (heartbeats every kHeartbeatMs) whose host stopped acknowledging them (a host that
// acknowledges runs a slow process, not a dead one), fails that peer, and the first such failure is
// news: every waiter on any peer hears it, and the proxy passes it on once over each of its other
// links, so a death floods the job over the overlay. Idle, the thread sleeps in steps up to 50 ms;
// a call of this rank kicks it awake.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/failure.h"
#include "base/topology.h"
#include "transport/net/net.h"
#include "transport/net/proxy/trigger_feed.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

// One op on the wire, in the host's byte order (every rank of a job runs one architecture):
// what the receiving proxy is to do with its bytes.
struct NetOp {
  // kAbort: the sender failed because of rank `slot` (its last words before closing). kClose:
  // the sender closes its communicator in order, everything it queued sent (so the close that
  // follows is no failure a device-side wait must hear of).
  // kRegion: into the receiver's region, in the sender's own slice, at `offset` within it.
  enum Kind : uint32_t { kPut = 1, kRegion = 2, kSignal = 3, kAbort = 4, kClose = 5 };
  uint32_t kind = 0;
  int32_t slot = -1;  // the receiver's slot to raise after landing (ControlLayout::kNoSignal)
  uint32_t epoch = 0;
  uint32_t reserved = 0;
  uint64_t offset = 0;  // kPut: into the published receive buffer; kRegion: into the slice
  uint64_t bytes = 0;
};
static_assert(sizeof(NetOp) == 32, "NetOp is the wire header");

// What every landing checks first, since the wire is not trusted with memory: the slot is one
// of the ops' that a connection may raise (from ControlLayout::kFirstOpSlot to below
// `signalled_slots`, WindowGeometry; never the transport's own words) or none, and a signal
// carries no bytes.
xcclResult_t CheckWireOp(int peer, const NetOp& op, int signalled_slots, PlatformFailure* failure);

// Implemented by the transport that owns this rank's windows.
class NetLanding {
 public:
  virtual ~NetLanding() = default;
  // Where `op`'s bytes from `peer` go. xcclSuccess with *dst nullptr: not yet (its receive
  // buffer is not published), asked again later. An error refuses the op and fails the peer.
  virtual xcclResult_t Destination(int peer, const NetOp& op, char** dst,
                                   PlatformFailure* failure) = 0;
  // After the bytes have landed: raise the op's slot.
  virtual void Landed(int peer, const NetOp& op) = 0;
  // An op given a destination will never land (its connection failed): undo what Destination
  // took (a writer of the receive buffer), raise nothing.
  virtual void Abandoned(int peer, const NetOp& op) = 0;
  // `peer`'s link failed (closed, silent past kSilenceMs, refused an op, or the peer's own
  // abort naming `failure.peer`). Proxy thread, once per link. A transport whose waiters poll the
  // proxy (shm) needs nothing here; one whose waits run on a device (p2p) ends them here.
  virtual void LinkFailed(int peer, const PlatformFailure& failure) {
    (void)peer;
    (void)failure;
  }
};

class Proxy {
 public:
  static constexpr int kHeartbeatMs = 200;
  static constexpr int kSilenceMs = 1500;
  static constexpr int kMaxNapUs = 50000;

  Proxy(const Topology& topology, NetLanding* landing, int64_t timeout_ms);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Collective over every rank (those without remote peers take part too): on each backend,
  // listens and exchanges handles over the bootstrap; then starts the thread, which links the
  // watched peers. `net` carries the ops, `beats` the heartbeats.
  xcclResult_t Connect(Bootstrap* bootstrap, std::unique_ptr<NetBackend> net,
                       std::unique_ptr<NetBackend> beats);

  // Before Connect: a feed the thread drains on every pass (a GPU rank's trigger FIFO). Not
  // owned; it outlives the proxy.
  void SetTriggerFeed(TriggerFeed* feed) { feed_ = feed; }

  // Wakes the thread now and keeps it polling for a while: this rank is about to wait for a
  // peer of another node.
  void Kick();
  // Queues `op` for `peer`: its header, then `op.bytes` from `src` (kept alive by the caller
  // until Flush).
  void Enqueue(int peer, const NetOp& op, const void* src);
  // Until every op queued for `peer` has been sent; the peer's failure, or xcclTimeout.
  xcclResult_t Flush(int peer, const Deadline& deadline, PlatformFailure* failure);
  // For waiters: the first failure this proxy heard of (news, whichever link), else `peer`'s
  // orderly close; false while healthy.
  bool PeerFailed(int peer, PlatformFailure* failure) const;
  // For a diagnosis after a device-side timeout: per link, ops queued and sent, ops landed and
  // the last one's slot and epoch.
  std::string Describe() const;
  // Stops the thread, tells every peer that this rank failed because of `failed_peer` (best
  // effort, within 100 ms), closes every connection and fails queued ops.
  void Abort(int failed_peer);
  // Destroying a proxy that was not aborted stops its thread and tells every healthy peer that
  // this rank closes in order (kClose, best effort within 100 ms): ops still queued are dropped,
  // so the owner flushes first.

 private:
  struct Outgoing {
    NetOp op;
    const void* src;
  };
  // A send comm this rank opened, until its identity is sent (then ops may follow).
  struct Outbound {
    std::unique_ptr<NetSendComm> comm;
    NetRequest* said = nullptr;
    bool ready = false;
  };
  struct Link {
    int peer = -1;
    bool watched = false;  // heartbeats both ways (proxy thread only)
    Outbound send, beat_send;
    std::unique_ptr<NetRecvComm> recv;
    // Send side: the queue (under mutex_), the op in flight (proxy thread only).
    std::deque<Outgoing> queue;
    uint64_t queued = 0, sent = 0;
    std::atomic<bool> sending{false};  // atomic for Describe only
    Outgoing current{};
    bool told = false;     // the news went out as this link's last words (all of it)
    bool telling = false;  // `current` is those last words (an abort or close sends them again)
    NetRequest* header_request = nullptr;
    NetRequest* data_request = nullptr;
    bool header_sent = false, data_sent = false;
    // A send that failed (the peer closed): reported after 200 ms unless the receive side fails
    // the link first with the peer's own words.
    bool send_broken = false;
    std::chrono::steady_clock::time_point send_broken_at;
    std::string send_error;
    // Receive side (proxy thread only).
    enum class In { kIdle, kHeader, kDestination, kData };
    std::atomic<In> in{In::kIdle};  // atomic for Describe only
    NetOp incoming{};
    NetRequest* in_request = nullptr;
    // Liveness (proxy thread only): the heartbeat comms (beat_send above), the beat in
    // flight each way, when the last beat went out and when anything last arrived.
    std::unique_ptr<NetRecvComm> beat_recv;
    NetRequest* beat_out = nullptr;
    NetRequest* beat_in = nullptr;
    uint64_t beat_word = 0;
    bool beats_closed = false;  // the peer closed its heartbeats (done, or dead: the data says)
    std::chrono::steady_clock::time_point last_beat, last_heard;
    std::atomic<uint64_t> arrived{0};  // atomic for Describe only
    // What landed (written by the proxy thread, read by Describe).
    std::atomic<uint64_t> landed{0};
    std::atomic<int64_t> last_landed{-1};     // slot << 32 | epoch
    std::atomic<uint64_t> incoming_shown{0};  // the op waiting in kDestination/kData: bytes
    // The first failure (under mutex_).
    bool failed = false;
    PlatformFailure failure;
  };

  void Run();
  bool ProgressSend(Link& link);
  bool ProgressRecv(Link& link);
  bool ProgressDestination(Link& link);  // ProgressRecv once a header is in
  bool Beat(Link& link, std::chrono::steady_clock::time_point now);
  // A listener on `net` and every rank's handle for it.
  xcclResult_t ListenAll(Bootstrap* bootstrap, NetBackend* net,
                         std::unique_ptr<NetListenComm>* listener, std::vector<NetHandle>* handles);
  // Connects and identifies `out` step by step; false once it failed (the link is failed).
  bool Open(Link& link, Outbound& out, NetBackend* net, const NetHandle& handle, bool* moved);
  // Connects what the link wants and has not yet: data always, heartbeats when watched.
  bool OpenLink(Link& link);
  // Accepted comms: read their identities and give them to their links.
  bool AcceptIncoming();
  // The link of `peer`, made (and handed to the thread) if it has none. Under mutex_.
  Link* LinkForLocked(int peer);
  // Records the first failure heard of (under mutex_): every waiter hears it, links pass it on.
  void NoteNewsLocked(const PlatformFailure& failure);

  // `blamed`: the rank the failure names (-1: the link's peer). `orderly`: the peer closed in
  // order (kClose): waiters still learn that it is gone, NetLanding::LinkFailed is not called.
  void FailLink(Link& link, xcclResult_t result, const std::string& what, int blamed = -1,
                bool orderly = false);
  // After the thread stopped: `last` to every link marked in `healthy` (best effort, 100 ms).
  void SendLastWords(const NetOp& last, std::vector<bool> healthy);
  // The op whose bytes are landing will not finish (proxy thread, or after it stopped).
  void AbandonIncoming(Link& link);
  void NoteLanded(Link& link);
  Link* LinkOf(int peer);
  const Link* LinkOf(int peer) const;

  Topology topology_;
  NetLanding* landing_;
  int64_t timeout_ms_;
  std::unique_ptr<NetBackend> net_;
  std::unique_ptr<NetBackend> beats_;
  TriggerFeed* feed_ = nullptr;
  // By peer rank: null until linked (made under mutex_, never freed before the proxy).
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<Link*> active_;  // the thread's links
  std::vector<Link*> fresh_;   // made since the thread last looked (under mutex_)
  std::vector<NetHandle> net_handles_, beat_handles_;
  std::unique_ptr<NetListenComm> net_listener_, beat_listener_;
  // The first message on every comm: who opened it.
  struct Identity {
    uint64_t magic;
    int64_t rank;
  };
  struct Unidentified {
    std::unique_ptr<NetRecvComm> comm;
    bool beats = false;
    NetRequest* request = nullptr;
    Identity heard{};
  };
  Identity identity_{};                                      // this rank's
  std::vector<std::unique_ptr<Unidentified>> unidentified_;  // proxy thread only
  bool accept_warned_ = false;                               // proxy thread only
  std::atomic<bool> news_{false};
  PlatformFailure news_failure_;  // under mutex_
  NetOp news_op_;                 // the kAbort that passes the news on (set with news_)
  mutable std::mutex mutex_;
  std::condition_variable progress_;  // ops sent, failures
  std::condition_variable work_;      // ops queued, stop
  std::atomic<bool> stop_{false};
  std::atomic<bool> kicked_{false};
  std::thread thread_;
};

}  // namespace xccl
