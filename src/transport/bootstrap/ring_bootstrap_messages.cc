// RingBootstrap's tagged point-to-point messages: Send and Recv, and the progress engine
// under them (one connection per ordered pair, polled by whichever call is waiting).
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/bootstrap_gate.h"
#include "transport/bootstrap/bootstrap_secret.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/ring_bootstrap.h"
#include "transport/bootstrap/socket.h"

namespace xccl {
namespace bootstrap_internal {

namespace {

// Connection attempts to a peer's listener run in slices this long, so that a peer that is
// not listening (gone) delays neither Abort() nor the other connections' progress.
constexpr int64_t kConnectSliceMs = 100;
static_assert(Bootstrap::kMaxMessageBytes == wire::kMaxMessageBytes, "one limit on the wire");

std::string TagText(uint32_t tag) {
  if ((tag & Bootstrap::kReservedTagBit) == 0) return "tag " + std::to_string(tag);
  char text[40];
  snprintf(text, sizeof(text), "group tag 0x%08x", tag);
  return text;
}

}  // namespace

xcclResult_t RingBootstrap::Send(int peer, uint32_t tag, const void* data, size_t bytes) {
  try {
    XCCL_TRY(CheckPeerCall("Send", peer, tag, data, bytes));
    std::string what = "Send to rank " + std::to_string(peer) + " (" + TagText(tag) + ", " +
                       std::to_string(bytes) + " bytes)";
    PostedSend s(peer, tag, data, bytes);
    return Progress(&s, nullptr, Deadline(timeout_ms_), what);
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: Send: %s", rank_, e.what());
  }
}

xcclResult_t RingBootstrap::Recv(int peer, uint32_t tag, void* data, size_t bytes) {
  try {
    XCCL_TRY(CheckPeerCall("Recv", peer, tag, data, bytes));
    std::string what = "Recv from rank " + std::to_string(peer) + " (" + TagText(tag) + ", " +
                       std::to_string(bytes) + " bytes)";
    PostedRecv r(peer, tag, data, bytes);
    return Progress(nullptr, &r, Deadline(timeout_ms_), what);
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: Recv: %s", rank_, e.what());
  }
}

xcclResult_t RingBootstrap::CheckPeerCall(const char* call, int peer, uint32_t tag,
                                          const void* data, size_t bytes) {
  if (aborted_.load()) {
    return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s after Abort()", rank_, call);
  }
  if (peer < 0 || peer >= nranks_) {
    return Fail(xcclInvalidArgument,
                "bootstrap: rank %d: %s with peer %d, out of range for %d ranks", rank_, call, peer,
                nranks_);
  }
  if (peer == rank_) {
    return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s with itself as the peer", rank_, call);
  }
  if ((tag & kReservedTagBit) != 0) {
    return Fail(xcclInvalidArgument,
                "bootstrap: rank %d: %s with tag 0x%08x: tags with the top bit set are reserved "
                "for the group calls",
                rank_, call, tag);
  }
  if (data == nullptr && bytes > 0) {
    return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s of %zu bytes with a null buffer",
                rank_, call, bytes);
  }
  if (bytes > kMaxMessageBytes) {
    return Fail(xcclInvalidArgument,
                "bootstrap: rank %d: %s of %zu bytes: at most %zu bytes per message", rank_, call,
                bytes, kMaxMessageBytes);
  }
  return xcclSuccess;
}

// Runs the posted send and/or receive to completion, failure or the deadline. Never leaves
// a connection pointing into the caller's buffer.
xcclResult_t RingBootstrap::Progress(PostedSend* s, PostedRecv* r, const Deadline& deadline,
                                     const std::string& what) {
  recv_ = r;
  xcclResult_t rc = xcclInternalError;
  try {
    rc = ProgressLoop(s, r, deadline, what);
  } catch (const std::exception& e) {  // allocation: the state stays consistent, see below
    rc = Fail(xcclSystemError, "bootstrap: rank %d: %s: %s", rank_, what.c_str(), e.what());
  }
  recv_ = nullptr;
  if (r != nullptr && !r->finished) DetachRecv(*r);
  if (s != nullptr && !s->finished && s->done > 0 && failed_.count(s->peer) == 0) {
    // Cut off mid-message (timeout, abort): what follows on that stream would be misread.
    char text[300];
    snprintf(text, sizeof(text),
             "bootstrap: rank %d: an earlier Send to rank %d (%s) was cut off after %zu of %zu "
             "bytes; that connection is out of step",
             rank_, s->peer, TagText(s->tag).c_str(), s->done, s->total());
    MarkFailed(s->peer, xcclRemoteError, text);
  }
  if (aborted_.load()) ShutdownPeerSockets();
  return rc;
}

xcclResult_t RingBootstrap::ProgressLoop(PostedSend* s, PostedRecv* r, const Deadline& deadline,
                                         const std::string& what) {
  for (;;) {
    if (aborted_.load()) {
      return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s interrupted by Abort()", rank_,
                  what.c_str());
    }
    bool retry_soon = false;
    if (r != nullptr && !r->finished) XCCL_TRY(TryFinishRecv(r, what));
    if (s != nullptr && !s->finished) XCCL_TRY(PushSend(s, deadline, &retry_soon));
    bool send_done = s == nullptr || s->finished;
    bool recv_done = r == nullptr || r->finished;
    if (send_done && recv_done) return xcclSuccess;
    if (deadline.Expired())
      return TimeoutFailure(recv_done ? nullptr : r, send_done ? nullptr : s, what);
    XCCL_TRY(PollPeers(send_done ? nullptr : s, retry_soon ? Deadline() : deadline));
  }
}

xcclResult_t RingBootstrap::PeerFailed(int peer) {
  auto f = failed_.find(peer);
  if (f == failed_.end()) return xcclSuccess;
  return Fail(f->second.code, "%s", f->second.message.c_str());
}

// The first failure of a pair is the one reported, by every later call with that peer.
void RingBootstrap::MarkFailed(int peer, xcclResult_t code, const std::string& message) {
  if (failed_.emplace(peer, PeerFailure{code, message}).second) {
    XCCL_INFO(kLogBootstrap, "%s", message.c_str());
  }
}

xcclResult_t RingBootstrap::TryFinishRecv(PostedRecv* r, const std::string& what) {
  XCCL_TRY(PeerFailed(r->peer));
  auto q = unexpected_.find({r->peer, r->tag});
  if (q != unexpected_.end() && !q->second.empty()) {
    std::vector<uint8_t>& msg = q->second.front();
    if (msg.size() != r->bytes) {
      RefuseMessage(r->peer, r->tag, msg.size(), r->bytes);
      return PeerFailed(r->peer);
    }
    if (r->bytes > 0) memcpy(r->data, msg.data(), r->bytes);
    q->second.pop_front();
    if (q->second.empty()) unexpected_.erase(q);
    r->finished = true;
    return xcclSuccess;
  }
  auto in = in_.find(r->peer);
  if (in != in_.end() && in->second.closed) {
    return Fail(xcclRemoteError,
                "bootstrap: rank %d: %s: rank %d closed its connection before sending it (did "
                "it exit or abort?)",
                rank_, what.c_str(), r->peer);
  }
  return xcclSuccess;
}

// A size mismatch, found by the receiver: both ends learn it with the same numbers, and
// the pair is unusable from here on (what the sender sends next is read and dropped).
void RingBootstrap::RefuseMessage(int peer, uint32_t tag, uint64_t sent, uint64_t expected) {
  char text[300];
  snprintf(text, sizeof(text),
           "bootstrap: rank %d: Recv from rank %d (%s) expected %llu bytes, but rank %d sent "
           "%llu bytes: Send and Recv must agree on the size",
           rank_, peer, TagText(tag).c_str(), static_cast<unsigned long long>(expected), peer,
           static_cast<unsigned long long>(sent));
  MarkFailed(peer, xcclInvalidUsage, text);
  auto in = in_.find(peer);
  if (in == in_.end() || !in->second.sock.valid()) return;
  InConn& c = in->second;
  uint8_t frame[wire::kHeaderBytes + wire::kP2pRefusalBytes];
  wire::PutHeader(frame, wire::kP2pRefusal, wire::kP2pRefusalBytes);
  wire::PutU32(frame + wire::kHeaderBytes, tag);
  wire::PutU64(frame + wire::kHeaderBytes + 4, sent);
  wire::PutU64(frame + wire::kHeaderBytes + 12, expected);
  // The first bytes this end ever writes on that socket: the buffer has room.
  IoStatus st = c.sock.SendAll(frame, sizeof(frame), Deadline(kConnectSliceMs));
  if (!st.ok()) {
    XCCL_INFO(kLogBootstrap, "bootstrap: rank %d: could not tell rank %d of the mismatch: %s",
              rank_, peer, st.Describe().c_str());
  }
  c.draining = true;
  c.in_payload = false;
  c.direct = false;
  c.dest = nullptr;
  c.buffer = {};
}

// Connects if needed, then hands the kernel what it takes. *retry_soon: a connection attempt
// timed out its slice and is tried again after the other connections had their turn.
xcclResult_t RingBootstrap::PushSend(PostedSend* s, const Deadline& deadline, bool* retry_soon) {
  XCCL_TRY(PeerFailed(s->peer));
  auto closed = sends_closed_.find(s->peer);
  if (closed != sends_closed_.end()) {
    MarkFailed(s->peer, closed->second.code, closed->second.message);
    return PeerFailed(s->peer);
  }
  OutConn& c = out_[s->peer];
  if (c.state == OutConn::kIdle) {
    sockaddr_storage addr{};
    UnpackAddress(&addresses_[static_cast<size_t>(s->peer) * kWireAddressBytes], &addr);
    const Deadline slice = std::min(deadline, Deadline(kConnectSliceMs));
    IoStatus st = Socket::Connect(addr, slice, &c.sock);
    if (st.code == IoStatus::kTimeout) {
      c.last_connect = st;
      *retry_soon = !deadline.Expired();
      return xcclSuccess;
    }
    if (!st.ok()) {
      MarkFailed(s->peer, xcclSystemError,
                 "bootstrap: rank " + std::to_string(rank_) + ": cannot connect to rank " +
                     std::to_string(s->peer) + " at " + FormatAddress(addr) + ": " + st.Describe());
      return PeerFailed(s->peer);
    }
    std::vector<uint8_t> hello = HandshakeFrame(secret_, rank_, nranks_, wire::kP2pHello);
    st = c.sock.SendAll(hello.data(), hello.size(), deadline);
    if (!st.ok()) {
      c.sock.Close();
      c.state = OutConn::kDead;
      MarkFailed(s->peer, st.code == IoStatus::kTimeout ? xcclTimeout : xcclRemoteError,
                 "bootstrap: rank " + std::to_string(rank_) + ": sending the hello to rank " +
                     std::to_string(s->peer) + " at " + FormatAddress(addr) + ": " + st.Describe());
      return PeerFailed(s->peer);
    }
    c.state = OutConn::kAwaitAck;
    return xcclSuccess;
  }
  if (c.state != OutConn::kReady) return xcclSuccess;  // the ack comes through PollPeers
  const size_t header_bytes = sizeof(s->header);
  while (s->done < s->total()) {
    const uint8_t* p =
        s->done < header_bytes ? s->header + s->done : s->data + (s->done - header_bytes);
    size_t n = s->done < header_bytes ? header_bytes - s->done : s->total() - s->done;
    size_t sent = 0;
    IoStatus st = c.sock.SendSome(p, n, &sent);
    if (!st.ok()) {
      c.sock.Close();
      c.state = OutConn::kDead;
      MarkFailed(s->peer, st.code == IoStatus::kClosed ? xcclRemoteError : xcclSystemError,
                 "bootstrap: rank " + std::to_string(rank_) + ": rank " + std::to_string(s->peer) +
                     " closed its connection (" + st.Describe() + "; did it exit or abort?)");
      return PeerFailed(s->peer);
    }
    if (sent == 0) return xcclSuccess;  // full: PollPeers waits for room
    s->done += sent;
  }
  s->finished = true;
  return xcclSuccess;
}

xcclResult_t RingBootstrap::TimeoutFailure(const PostedRecv* r, const PostedSend* s,
                                           const std::string& what) {
  const long long ms = static_cast<long long>(timeout_ms_);
  // Blame the receive side first: a stuck ring of Send/Recv pairs is a silent predecessor.
  if (r != nullptr) {
    auto in = in_.find(r->peer);
    if (in != in_.end() && in->second.direct && in->second.in_payload) {
      return Fail(xcclTimeout,
                  "bootstrap: rank %d: %s: rank %d sent only %llu of %zu bytes within %lld ms",
                  rank_, what.c_str(), r->peer, static_cast<unsigned long long>(in->second.got),
                  r->bytes, ms);
    }
    return Fail(xcclTimeout, "bootstrap: rank %d: %s: no message from rank %d within %lld ms",
                rank_, what.c_str(), r->peer, ms);
  }
  auto out = out_.find(s->peer);
  OutConn::State state = out == out_.end() ? OutConn::kIdle : out->second.state;
  if (state == OutConn::kIdle) {
    std::string last = out == out_.end() ? "timed out" : out->second.last_connect.Describe();
    return Fail(xcclTimeout,
                "bootstrap: rank %d: %s: could not connect to rank %d within %lld ms (%s)", rank_,
                what.c_str(), s->peer, ms, last.c_str());
  }
  if (state == OutConn::kAwaitAck) {
    return Fail(xcclTimeout,
                "bootstrap: rank %d: %s: rank %d did not accept the connection within %lld ms "
                "(a rank accepts them only inside a Send, Recv or group call)",
                rank_, what.c_str(), s->peer, ms);
  }
  return Fail(xcclTimeout,
              "bootstrap: rank %d: %s: rank %d took only %zu of %zu bytes within %lld ms (is it "
              "receiving?)",
              rank_, what.c_str(), s->peer, s->done, s->total(), ms);
}

// One poll over the doorbell, the listener (new peers), every inbound connection and every
// outbound one (acknowledgements, refusals, a peer closing); `s`'s connection also for room.
xcclResult_t RingBootstrap::PollPeers(const PostedSend* s, const Deadline& until) {
  std::vector<pollfd> fds;
  fds.push_back({doorbell_.fd(), POLLIN, 0});
  Deadline wake = until;
  gate_->AddPollFds(&fds, &wake);
  const size_t in_start = fds.size();
  std::vector<int> in_peers;
  for (auto& [peer, c] : in_) {
    if (!c.sock.valid()) continue;
    fds.push_back({c.sock.fd(), POLLIN, 0});
    in_peers.push_back(peer);
  }
  const size_t out_start = fds.size();
  std::vector<int> out_peers;
  for (auto& [peer, c] : out_) {
    if (!c.sock.valid() || (c.state != OutConn::kAwaitAck && c.state != OutConn::kReady)) {
      continue;
    }
    short events = POLLIN;
    if (s != nullptr && s->peer == peer && c.state == OutConn::kReady) events |= POLLOUT;
    fds.push_back({c.sock.fd(), events, 0});
    out_peers.push_back(peer);
  }
  XCCL_TRY(PollOnce(&fds, wake));
  std::vector<Arrival> ready;
  gate_->Service(fds, &ready);
  for (Arrival& a : ready) AdmitPeer(std::move(a));
  for (size_t i = 0; i < in_peers.size(); ++i) {
    if ((fds[in_start + i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) ReadInbound(in_peers[i]);
  }
  for (size_t i = 0; i < out_peers.size(); ++i) {
    if ((fds[out_start + i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ReadOutbound(out_peers[i]);
    }
  }
  return xcclSuccess;
}

// A peer's hello on the listener: the same checks as the ring's, then the acknowledgement.
void RingBootstrap::AdmitPeer(Arrival a) {
  wire::RingHelloMsg m;
  if (!wire::DecodeRingHello(a.payload, &m)) {
    gate_->Refuse(a.peer, "malformed hello");
    return;
  }
  if (!SecretEquals(secret_, m.secret)) {
    gate_->Refuse(a.peer, "wrong secret");
    return;
  }
  if (m.nranks != static_cast<uint32_t>(nranks_) || m.rank >= m.nranks ||
      m.rank == static_cast<uint32_t>(rank_)) {
    gate_->Refuse(a.peer, "claims rank " + std::to_string(m.rank) + " of " +
                              std::to_string(m.nranks) + " (this is rank " + std::to_string(rank_) +
                              " of " + std::to_string(nranks_) + ")");
    return;
  }
  int peer = static_cast<int>(m.rank);
  if (in_.count(peer) != 0) {
    gate_->Refuse(a.peer, "a second connection claiming rank " + std::to_string(peer));
    return;
  }
  std::vector<uint8_t> ack = HandshakeFrame(secret_, rank_, nranks_, wire::kP2pAck);
  IoStatus st = a.sock.SendAll(ack.data(), ack.size(), Deadline(kConnectSliceMs));
  if (!st.ok()) {
    gate_->Refuse(a.peer, "gone before the acknowledgement (" + st.Describe() + ")");
    return;
  }
  XCCL_TRACE(kLogBootstrap, "bootstrap: rank %d: rank %d (%s) connected for messages", rank_, peer,
             a.peer.c_str());
  InConn c;
  c.sock = std::move(a.sock);
  in_.emplace(peer, std::move(c));
}

// Reads whatever the peer's connection holds now, message by message: into the posted
// Recv's buffer when it waits for exactly this message, else into a buffer of its own.
void RingBootstrap::ReadInbound(int peer) {
  InConn& c = in_.at(peer);
  for (;;) {
    size_t got = 0;
    IoStatus st;
    if (c.draining) {
      uint8_t scratch[16384];
      st = c.sock.RecvSome(scratch, sizeof(scratch), &got);
      if (!st.ok()) c.sock.Close();
      if (!st.ok() || got == 0) return;
      continue;
    }
    if (!c.in_payload) {
      st = c.sock.RecvSome(c.header + c.header_have, sizeof(c.header) - c.header_have, &got);
      if (!st.ok()) return InboundEnded(peer, &c, st);
      if (got == 0) return;
      c.header_have += got;
      if (c.header_have < sizeof(c.header)) continue;
      c.header_have = 0;
      uint32_t magic = wire::GetU32(c.header);
      uint32_t type = wire::GetU32(c.header + 4);
      uint32_t length = wire::GetU32(c.header + 8);
      c.tag = wire::GetU32(c.header + wire::kHeaderBytes);
      c.bytes = wire::GetU64(c.header + wire::kHeaderBytes + 4);
      if (magic != wire::kMagic || type != wire::kP2pData || length != wire::kP2pDataBytes ||
          c.bytes > wire::kMaxMessageBytes) {
        char text[300];
        snprintf(text, sizeof(text),
                 "bootstrap: rank %d: rank %d sent a malformed message header (magic 0x%08x, "
                 "type %u, length %u, %llu bytes; at most %llu accepted)",
                 rank_, peer, magic, type, length, static_cast<unsigned long long>(c.bytes),
                 static_cast<unsigned long long>(wire::kMaxMessageBytes));
        XCCL_WARN(kLogBootstrap, "%s", text);
        MarkFailed(peer, xcclRemoteError, text);
        c.sock.Close();
        return;
      }
      c.got = 0;
      c.in_payload = true;
      auto q = unexpected_.find({peer, c.tag});
      bool queued = q != unexpected_.end() && !q->second.empty();
      if (recv_ != nullptr && !recv_->finished && recv_->peer == peer && recv_->tag == c.tag &&
          !queued) {
        if (c.bytes != recv_->bytes) {
          RefuseMessage(peer, c.tag, c.bytes, recv_->bytes);
          continue;  // draining now
        }
        c.dest = recv_->data;
        c.direct = true;
      } else if (!AllocateBuffer(peer, &c)) {
        return;
      }
    }
    if (c.got < c.bytes) {
      st = c.sock.RecvSome(c.dest + c.got, c.bytes - c.got, &got);
      if (!st.ok()) return InboundEnded(peer, &c, st);
      if (got == 0) return;
      c.got += got;
      if (c.got < c.bytes) continue;
    }
    c.in_payload = false;
    if (c.direct) {
      recv_->finished = true;
      c.direct = false;
    } else {
      unexpected_[{peer, c.tag}].push_back(std::move(c.buffer));
      c.buffer = {};
    }
    c.dest = nullptr;
  }
}

void RingBootstrap::InboundEnded(int peer, InConn* c, const IoStatus& st) {
  bool mid_message = c->in_payload || c->header_have > 0;
  c->sock.Close();
  c->direct = false;
  c->dest = nullptr;
  if (st.code == IoStatus::kClosed && !mid_message) {
    c->closed = true;  // its messages so far remain for their Recv
    return;
  }
  MarkFailed(peer, st.code == IoStatus::kClosed ? xcclRemoteError : xcclSystemError,
             "bootstrap: rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) +
                 (mid_message ? " closed its connection in the middle of a message ("
                              : " connection failed (") +
                 st.Describe() + ")");
}

// The acknowledgement of this rank's hello; afterwards a refusal, or the peer closing.
void RingBootstrap::ReadOutbound(int peer) {
  OutConn& c = out_.at(peer);
  const std::string who =
      "bootstrap: rank " + std::to_string(rank_) + ": rank " + std::to_string(peer);
  for (;;) {
    // The whole acknowledgement; or a refusal's header, then (once checked) its payload.
    size_t need = wire::kHeaderBytes + wire::kRingHelloBytes;
    if (c.state == OutConn::kReady) {
      need = c.in_have < wire::kHeaderBytes ? wire::kHeaderBytes
                                            : wire::kHeaderBytes + wire::kP2pRefusalBytes;
    }
    size_t got = 0;
    IoStatus st = c.sock.RecvSome(c.in + c.in_have, need - c.in_have, &got);
    if (!st.ok()) {
      c.sock.Close();
      bool acked = c.state == OutConn::kReady;
      c.state = OutConn::kDead;
      const std::string message =
          who +
          (acked ? " closed its connection (" : " closed the connection without accepting it (") +
          st.Describe() + "; did it exit or abort?)";
      // A peer that is done closes: only a later send to it fails. What it sent this rank
      // arrives on its own connection and stays valid.
      if (acked && st.code == IoStatus::kClosed)
        sends_closed_.emplace(peer, PeerFailure{xcclRemoteError, message});
      else
        MarkFailed(peer, xcclRemoteError, message);
      return;
    }
    if (got == 0) return;
    c.in_have += got;
    if (c.state == OutConn::kReady && c.in_have == wire::kHeaderBytes) {
      if (wire::GetU32(c.in) != wire::kMagic || wire::GetU32(c.in + 4) != wire::kP2pRefusal ||
          wire::GetU32(c.in + 8) != wire::kP2pRefusalBytes) {
        c.sock.Close();
        c.state = OutConn::kDead;
        MarkFailed(peer, xcclRemoteError, who + " sent a malformed frame on its connection");
        return;
      }
      continue;
    }
    if (c.in_have < need) continue;
    c.in_have = 0;
    const uint8_t* p = c.in + wire::kHeaderBytes;
    if (c.state == OutConn::kAwaitAck) {
      // The acknowledgement proves that `peer` itself, not a stale listener, holds the end.
      wire::RingHelloMsg m;
      bool ok = wire::GetU32(c.in) == wire::kMagic && wire::GetU32(c.in + 4) == wire::kP2pAck &&
                wire::GetU32(c.in + 8) == wire::kRingHelloBytes &&
                wire::DecodeRingHello(std::vector<uint8_t>(p, p + wire::kRingHelloBytes), &m) &&
                SecretEquals(secret_, m.secret) && m.rank == static_cast<uint32_t>(peer) &&
                m.nranks == static_cast<uint32_t>(nranks_);
      if (!ok) {
        c.sock.Close();
        c.state = OutConn::kDead;
        MarkFailed(peer, xcclRemoteError, who + " sent a malformed acknowledgement");
        return;
      }
      c.state = OutConn::kReady;
      continue;
    }
    char text[300];
    snprintf(text, sizeof(text),
             "bootstrap: rank %d: rank %d refused this rank's Send (%s): %llu bytes were sent, "
             "its Recv expected %llu bytes; Send and Recv must agree on the size",
             rank_, peer, TagText(wire::GetU32(p)).c_str(),
             static_cast<unsigned long long>(wire::GetU64(p + 4)),
             static_cast<unsigned long long>(wire::GetU64(p + 12)));
    MarkFailed(peer, xcclInvalidUsage, text);
    c.sock.Close();  // the peer drops whatever else this rank would send
    c.state = OutConn::kDead;
    return;
  }
}

// A buffer for a message no Recv waits for. Out of memory, the connection is given up
// rather than left reading into nothing.
bool RingBootstrap::AllocateBuffer(int peer, InConn* c) {
  c->direct = false;
  c->dest = nullptr;
  try {
    c->buffer.resize(c->bytes);
  } catch (const std::bad_alloc&) {
    c->sock.Close();
    c->in_payload = false;
    MarkFailed(peer, xcclSystemError,
               "bootstrap: rank " + std::to_string(rank_) + ": out of memory buffering " +
                   std::to_string(c->bytes) + " bytes from rank " + std::to_string(peer));
    return false;
  }
  c->dest = c->buffer.data();
  return true;
}

// A Recv that returns unfinished leaves its message, if under way, to a buffer of its own:
// no connection may keep pointing into the caller's memory.
void RingBootstrap::DetachRecv(const PostedRecv& r) {
  auto in = in_.find(r.peer);
  if (in == in_.end() || !in->second.direct) return;
  InConn& c = in->second;
  if (AllocateBuffer(r.peer, &c) && c.got > 0) memcpy(c.dest, r.data, c.got);
}

void RingBootstrap::ShutdownPeerSockets() {
  listener_.Shutdown();
  for (auto& [peer, c] : in_) c.sock.Shutdown();
  for (auto& [peer, c] : out_) c.sock.Shutdown();
}

}  // namespace bootstrap_internal
}  // namespace xccl
