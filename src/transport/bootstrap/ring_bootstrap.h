// RingBootstrap, the Bootstrap that Init returns: a ring of connections (rank -> rank+1) for
// AllGather and Barrier, and tagged point-to-point messages and group calls beside it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/bootstrap_gate.h"
#include "transport/bootstrap/bootstrap_secret.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/socket.h"
#include "xccl.h"

namespace xccl {
namespace bootstrap_internal {

// ---------------------------------------------------------------------------------------------
// The ring, after the rendezvous, and the point-to-point messages beside it.

// Abort()'s doorbell: a blocked Send/Recv polls it with its sockets, so another thread can
// wake that call without touching the connection tables the call is using.
class Doorbell {
 public:
  Doorbell() = default;
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  xcclResult_t Open();
  void Ring();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// A handshake frame of `type` (kRingHello, kRingAck, kP2pHello, kP2pAck): the secret and the
// sender's rank and nranks.
std::vector<uint8_t> HandshakeFrame(const Secret& secret, int rank, int nranks, uint32_t type);

class RingBootstrap final : public Bootstrap {
 public:
  RingBootstrap(const Secret& secret, int rank, int nranks, int64_t timeout_ms, Socket next,
                Socket prev);

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  // ring_bootstrap.cc
  xcclResult_t AllGather(void* data, size_t block_bytes) override;
  xcclResult_t Barrier() override;
  void Abort() override;

  // The last step of Init (nranks > 1): keeps `listener` for point-to-point connections and
  // gathers every rank's listen address over the ring, within Init's deadline.
  xcclResult_t StartPeerMessages(Socket listener, const Deadline& deadline);

  // ring_bootstrap_messages.cc
  xcclResult_t Send(int peer, uint32_t tag, const void* data, size_t bytes) override;
  xcclResult_t Recv(int peer, uint32_t tag, void* data, size_t bytes) override;

  // ring_bootstrap_groups.cc
  xcclResult_t GroupAllGather(const std::vector<int>& ranks, void* data,
                              size_t block_bytes) override;
  xcclResult_t GroupBarrier(const std::vector<int>& ranks) override;

 private:
  // ---- The ring (ring_bootstrap.cc) -------------------------------------------------------
  int Next() const { return (rank_ + 1) % nranks_; }
  int Prev() const { return (rank_ + nranks_ - 1) % nranks_; }

  static const char* OpName(uint32_t op);
  xcclResult_t Exchange(void* data, size_t block_bytes, uint32_t op);
  xcclResult_t ExchangeWithSeq(void* data, size_t block_bytes, uint32_t op, uint64_t seq,
                               const Deadline& deadline);
  xcclResult_t CheckHeader(const uint8_t* h, size_t block_bytes, uint32_t op);
  xcclResult_t IoFailure(const IoStatus& st, bool on_send, const char* what);

  // ---- Point-to-point ---------------------------------------------------------------------
  // Each ordered pair (a -> b) has its own connection, made by a on its first Send to b's
  // listener (address from Init's table) with the ring's secret handshake, then frames of
  // {tag, bytes} + payload; b buffers what no Recv waits for yet. There is no background
  // thread: every wait polls all of a rank's connections, so two ranks sending to each other
  // at once both progress, and a Recv finds whatever arrived while the rank was elsewhere.

  struct PostedSend {
    PostedSend(int p, uint32_t t, const void* d, size_t n)
        : peer(p), tag(t), data(static_cast<const uint8_t*>(d)), bytes(n) {
      wire::PutHeader(header, wire::kP2pData, wire::kP2pDataBytes);
      wire::PutU32(header + wire::kHeaderBytes, tag);
      wire::PutU64(header + wire::kHeaderBytes + 4, bytes);
    }
    size_t total() const { return sizeof(header) + bytes; }

    int peer;
    uint32_t tag;
    const uint8_t* data;
    size_t bytes;
    uint8_t header[wire::kHeaderBytes + wire::kP2pDataBytes];
    size_t done = 0;  // bytes of header + data handed to the kernel
    bool finished = false;
  };

  struct PostedRecv {
    PostedRecv(int p, uint32_t t, void* d, size_t n)
        : peer(p), tag(t), data(static_cast<uint8_t*>(d)), bytes(n) {}
    int peer;
    uint32_t tag;
    uint8_t* data;
    size_t bytes;
    bool finished = false;
  };

  // This rank's connection to a peer it sends to.
  struct OutConn {
    enum State { kIdle, kAwaitAck, kReady, kDead };
    Socket sock;
    State state = kIdle;
    IoStatus last_connect;  // for the timeout message
    // The acknowledgement, then any refusal frame (the larger of the two).
    uint8_t in[wire::kHeaderBytes + wire::kRingHelloBytes] = {};
    size_t in_have = 0;
  };
  static_assert(wire::kP2pRefusalBytes <= wire::kRingHelloBytes, "OutConn::in holds a refusal");

  // A peer's connection to this rank, read message by message.
  struct InConn {
    Socket sock;
    uint8_t header[wire::kHeaderBytes + wire::kP2pDataBytes] = {};
    size_t header_have = 0;
    bool in_payload = false;
    uint32_t tag = 0;
    uint64_t bytes = 0;
    uint64_t got = 0;
    uint8_t* dest = nullptr;  // the posted Recv's buffer (direct) or `buffer`
    bool direct = false;
    std::vector<uint8_t> buffer;
    bool closed = false;    // the peer closed between two messages: what arrived stays valid
    bool draining = false;  // after a refusal: read and drop everything
  };

  struct PeerFailure {
    xcclResult_t code;
    std::string message;
  };

  // ring_bootstrap_messages.cc
  xcclResult_t CheckPeerCall(const char* call, int peer, uint32_t tag, const void* data,
                             size_t bytes);
  xcclResult_t Progress(PostedSend* s, PostedRecv* r, const Deadline& deadline,
                        const std::string& what);
  xcclResult_t ProgressLoop(PostedSend* s, PostedRecv* r, const Deadline& deadline,
                            const std::string& what);
  xcclResult_t PeerFailed(int peer);
  void MarkFailed(int peer, xcclResult_t code, const std::string& message);
  xcclResult_t TryFinishRecv(PostedRecv* r, const std::string& what);
  void RefuseMessage(int peer, uint32_t tag, uint64_t sent, uint64_t expected);
  xcclResult_t PushSend(PostedSend* s, const Deadline& deadline, bool* retry_soon);
  xcclResult_t TimeoutFailure(const PostedRecv* r, const PostedSend* s, const std::string& what);
  xcclResult_t PollPeers(const PostedSend* s, const Deadline& until);
  void AdmitPeer(Arrival a);
  void ReadInbound(int peer);
  void InboundEnded(int peer, InConn* c, const IoStatus& st);
  void ReadOutbound(int peer);
  bool AllocateBuffer(int peer, InConn* c);
  void DetachRecv(const PostedRecv& r);
  void ShutdownPeerSockets();

  // ---- Group calls (ring_bootstrap_groups.cc) ---------------------------------------------
  enum GroupOp : uint32_t { kGroupAllGather = 1, kGroupBarrier = 2, kGroupWorldAllGather = 3 };
  // From this many ranks, AllGather and Barrier run in log2(n) rounds of point-to-point
  // messages instead of the ring's n - 1 hops (docs/ARCHITECTURE.md, "Communicator creation").
  static constexpr int kLogRoundsFromRanks = 32;
  xcclResult_t WorldAllGather(void* data, size_t block_bytes);

  xcclResult_t CheckGroup(const char* call, const std::vector<int>& ranks, size_t* me);
  static std::string GroupText(const std::vector<int>& ranks);
  static uint32_t GroupTag(GroupOp op, const std::vector<int>& ranks);

  Secret secret_;
  int rank_;
  int nranks_;
  int64_t timeout_ms_;
  Socket next_;
  Socket prev_;
  uint64_t seq_ = 0;
  bool broken_ = false;
  std::atomic<bool> aborted_{false};

  // Point-to-point state (nranks > 1), touched only by the calling thread.
  Socket listener_;
  std::unique_ptr<Gate> gate_;  // after listener_: destroyed first
  Doorbell doorbell_;
  std::vector<uint8_t> addresses_;  // every rank's listen address, packed
  std::map<int, OutConn> out_;
  std::map<int, InConn> in_;
  std::map<std::pair<int, uint32_t>, std::deque<std::vector<uint8_t>>> unexpected_;
  std::map<int, PeerFailure> failed_;
  std::map<int, PeerFailure> sends_closed_;  // peers that closed this rank's connection to them
  PostedRecv* recv_ = nullptr;               // the Recv in flight, for direct delivery
};

}  // namespace bootstrap_internal
}  // namespace xccl
