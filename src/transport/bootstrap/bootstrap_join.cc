// A rank's side of Init: its hello to the root, then the ring's connections (to rank+1, from
// rank-1) that make its RingBootstrap.
#include "transport/bootstrap/bootstrap_join.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/bootstrap_gate.h"
#include "transport/bootstrap/bootstrap_root.h"
#include "transport/bootstrap/bootstrap_secret.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/ring_bootstrap.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace xccl {
namespace bootstrap_internal {

namespace {

// ---------------------------------------------------------------------------------------------
// A rank's side of Init.

struct JoinContext {
  Secret secret;
  int rank;
  int nranks;
  int64_t timeout_ms;
  Deadline deadline;
  std::string root;           // for messages
  std::string socket_ifname;  // XCCL_SOCKET_IFNAME, handed down by the caller
};

xcclResult_t RendezvousTimeout(const JoinContext& c, const std::string& detail) {
  return Fail(xcclTimeout,
              "bootstrap: rank %d: the rendezvous at %s did not complete within %lld ms%s%s",
              c.rank, c.root.c_str(), static_cast<long long>(c.timeout_ms),
              detail.empty() ? "" : ": ", detail.c_str());
}

// The root's answer to this rank's hello on `sock`: the listen address of rank+1, or why the
// rendezvous failed.
xcclResult_t ReadRootAnswer(const JoinContext& c, Socket* sock, sockaddr_storage* next_addr) {
  uint8_t header[wire::kHeaderBytes];
  IoStatus st = sock->RecvAll(header, sizeof(header), c.deadline);
  if (st.code == IoStatus::kTimeout) {
    return RendezvousTimeout(c, "no answer from the root (it did not say which ranks are missing)");
  }
  if (!st.ok()) {
    return Fail(xcclRemoteError,
                "bootstrap: rank %d: the root at %s closed the connection before the rendezvous "
                "completed (%s; a different unique id, or its rendezvous already ended?)",
                c.rank, c.root.c_str(), st.Describe().c_str());
  }
  uint32_t type = wire::GetU32(header + 4);
  uint32_t length = wire::GetU32(header + 8);
  size_t table_bytes = wire::kSecretBytes + 4 + kWireAddressBytes;
  bool sane = wire::GetU32(header) == wire::kMagic &&
              ((type == wire::kNextAddress && length == table_bytes) ||
               (type == wire::kError && length >= wire::kSecretBytes + 4 &&
                length <= wire::kSecretBytes + 4 + wire::kMaxErrorText));
  std::vector<uint8_t> payload(sane ? length : 0);
  if (sane) st = sock->RecvAll(payload.data(), payload.size(), c.deadline);
  if (!sane || !st.ok() || !SecretEquals(c.secret, payload.data())) {
    return Fail(xcclRemoteError,
                "bootstrap: rank %d: malformed or foreign answer from the root at %s", c.rank,
                c.root.c_str());
  }
  uint32_t value = wire::GetU32(payload.data() + wire::kSecretBytes);
  if (type == wire::kError) {
    std::string text(payload.begin() + wire::kSecretBytes + 4, payload.end());
    if (value == xcclTimeout) {
      return Fail(xcclTimeout, "bootstrap: rank %d: the rendezvous at %s %s", c.rank,
                  c.root.c_str(), text.c_str());
    }
    xcclResult_t code = value > xcclSuccess && value < xcclNumResults
                            ? static_cast<xcclResult_t>(value)
                            : xcclRemoteError;
    return Fail(code, "bootstrap: rank %d: the rendezvous at %s failed: %s", c.rank, c.root.c_str(),
                text.c_str());
  }
  if (static_cast<int>(value) != c.nranks) {
    return Fail(xcclRemoteError, "bootstrap: rank %d: the root at %s answered for %u ranks, not %d",
                c.rank, c.root.c_str(), value, c.nranks);
  }
  if (c.nranks > 1 && !UnpackAddress(payload.data() + wire::kSecretBytes + 4, next_addr)) {
    return Fail(xcclRemoteError, "bootstrap: rank %d: the root at %s sent no address for rank %d",
                c.rank, c.root.c_str(), (c.rank + 1) % c.nranks);
  }
  return xcclSuccess;
}

// Hello to the root, answer back: the listen address of rank+1 (nranks > 1).
xcclResult_t JoinRoot(const JoinContext& c, const sockaddr_storage& root_addr, Socket* listener,
                      sockaddr_storage* next_addr) {
  Socket sock;
  IoStatus st = Socket::Connect(root_addr, c.deadline, &sock);
  if (st.code == IoStatus::kTimeout) {
    return RendezvousTimeout(c, "could not connect to the root (" + st.Describe() + ")");
  }
  if (!st.ok()) {
    return Fail(xcclSystemError,
                "bootstrap: rank %d: cannot connect to the rendezvous root at %s: %s", c.rank,
                c.root.c_str(), st.Describe().c_str());
  }

  wire::HelloMsg hello{};
  memcpy(hello.secret, c.secret.data(), c.secret.size());
  hello.rank = static_cast<uint32_t>(c.rank);
  hello.nranks = static_cast<uint32_t>(c.nranks);
  hello.timeout_ms = static_cast<uint64_t>(c.timeout_ms);
  hello.wait_ms = static_cast<uint64_t>(c.deadline.RemainingMs());
  if (c.nranks > 1) {
    // Without XCCL_SOCKET_IFNAME, listen where this host reached the root: the interface that
    // routes to the root is the one the other ranks can most likely reach too.
    sockaddr_storage local{};
    const std::string& ifname = c.socket_ifname;
    if (ifname.empty()) {
      XCCL_TRY(sock.LocalAddress(&local));
      if (local.ss_family == AF_INET) reinterpret_cast<sockaddr_in&>(local).sin_port = 0;
      if (local.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(local).sin6_port = 0;
    } else {
      XCCL_TRY(FindInterfaceAddress(ifname, &local, nullptr));
    }
    XCCL_TRY(Socket::Listen(local, listener));
    sockaddr_storage bound{};
    XCCL_TRY(listener->LocalAddress(&bound));
    PackAddress(bound, hello.listen_addr);
  }
  std::vector<uint8_t> frame = wire::Frame(wire::kHello, wire::EncodeHello(hello));
  st = sock.SendAll(frame.data(), frame.size(), c.deadline);
  if (st.code == IoStatus::kTimeout) return RendezvousTimeout(c, "the root accepted no data");
  if (!st.ok()) {
    return Fail(xcclRemoteError, "bootstrap: rank %d: the root at %s dropped the connection (%s)",
                c.rank, c.root.c_str(), st.Describe().c_str());
  }
  return ReadRootAnswer(c, &sock, next_addr);
}

std::vector<uint8_t> RingHelloFrame(const JoinContext& c, uint32_t type) {
  return HandshakeFrame(c.secret, c.rank, c.nranks, type);
}

// Accepts rank-1's connection; anything else that connects is refused and logged.
xcclResult_t AcceptPrev(const JoinContext& c, Socket* listener, Socket* out) {
  int prev = (c.rank + c.nranks - 1) % c.nranks;
  Gate gate(listener, wire::kRingHello, "rank " + std::to_string(c.rank) + " ring listener");
  for (;;) {
    if (c.deadline.Expired()) {
      return Fail(xcclTimeout, "bootstrap: rank %d: rank %d did not connect within %lld ms", c.rank,
                  prev, static_cast<long long>(c.timeout_ms));
    }
    std::vector<pollfd> fds;
    Deadline wake = c.deadline;
    gate.AddPollFds(&fds, &wake);
    XCCL_TRY(PollOnce(&fds, wake));
    std::vector<Arrival> ready;
    gate.Service(fds, &ready);
    for (Arrival& a : ready) {
      wire::RingHelloMsg m;
      if (!wire::DecodeRingHello(a.payload, &m)) {
        gate.Refuse(a.peer, "malformed ring hello");
        continue;
      }
      if (!SecretEquals(c.secret, m.secret)) {
        gate.Refuse(a.peer, "wrong secret");
        continue;
      }
      if (m.rank != static_cast<uint32_t>(prev) || m.nranks != static_cast<uint32_t>(c.nranks)) {
        gate.Refuse(a.peer, "claims rank " + std::to_string(m.rank) + " of " +
                                std::to_string(m.nranks) + ", expected rank " +
                                std::to_string(prev) + " of " + std::to_string(c.nranks));
        continue;
      }
      std::vector<uint8_t> ack = RingHelloFrame(c, wire::kRingAck);
      IoStatus st = a.sock.SendAll(ack.data(), ack.size(), c.deadline);
      if (!st.ok()) {
        return Fail(xcclRemoteError,
                    "bootstrap: rank %d: rank %d (%s) dropped the ring connection: %s", c.rank,
                    prev, a.peer.c_str(), st.Describe().c_str());
      }
      *out = std::move(a.sock);
      return xcclSuccess;
    }
  }
}

xcclResult_t ConnectNext(const JoinContext& c, const sockaddr_storage& next_addr, Socket* out) {
  int next = (c.rank + 1) % c.nranks;
  std::string where = FormatAddress(next_addr);
  IoStatus st = Socket::Connect(next_addr, c.deadline, out);
  if (st.code == IoStatus::kTimeout) {
    return Fail(
        xcclTimeout, "bootstrap: rank %d: could not connect to rank %d at %s within %lld ms (%s)",
        c.rank, next, where.c_str(), static_cast<long long>(c.timeout_ms), st.Describe().c_str());
  }
  if (!st.ok()) {
    return Fail(xcclSystemError, "bootstrap: rank %d: cannot connect to rank %d at %s: %s", c.rank,
                next, where.c_str(), st.Describe().c_str());
  }
  std::vector<uint8_t> hello = RingHelloFrame(c, wire::kRingHello);
  st = out->SendAll(hello.data(), hello.size(), c.deadline);
  if (!st.ok()) {
    return Fail(st.code == IoStatus::kTimeout ? xcclTimeout : xcclRemoteError,
                "bootstrap: rank %d: sending the ring hello to rank %d at %s: %s", c.rank, next,
                where.c_str(), st.Describe().c_str());
  }
  return xcclSuccess;
}

// The acknowledgement proves that rank+1 itself (not a stale listener) holds the other end.
xcclResult_t WaitAck(const JoinContext& c, Socket* next_sock) {
  int next = (c.rank + 1) % c.nranks;
  uint8_t buf[wire::kHeaderBytes + wire::kRingHelloBytes];
  IoStatus st = next_sock->RecvAll(buf, sizeof(buf), c.deadline);
  if (st.code == IoStatus::kTimeout) {
    return Fail(xcclTimeout,
                "bootstrap: rank %d: rank %d did not accept the ring connection within %lld ms",
                c.rank, next, static_cast<long long>(c.timeout_ms));
  }
  if (!st.ok()) {
    return Fail(xcclRemoteError, "bootstrap: rank %d: rank %d closed the ring connection: %s",
                c.rank, next, st.Describe().c_str());
  }
  wire::RingHelloMsg m;
  bool ok = wire::GetU32(buf) == wire::kMagic && wire::GetU32(buf + 4) == wire::kRingAck &&
            wire::GetU32(buf + 8) == wire::kRingHelloBytes &&
            wire::DecodeRingHello(std::vector<uint8_t>(buf + wire::kHeaderBytes, buf + sizeof(buf)),
                                  &m) &&
            SecretEquals(c.secret, m.secret) && m.rank == static_cast<uint32_t>(next) &&
            m.nranks == static_cast<uint32_t>(c.nranks);
  if (!ok) {
    return Fail(xcclRemoteError, "bootstrap: rank %d: malformed acknowledgement from rank %d",
                c.rank, next);
  }
  return xcclSuccess;
}

}  // namespace

xcclResult_t InitImpl(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                      const std::string& socket_ifname, std::unique_ptr<Bootstrap>* out) {
  if (out == nullptr) return Fail(xcclInvalidArgument, "bootstrap: Init with a null output");
  if (nranks < 1 || nranks > wire::kMaxRanks) {
    return Fail(xcclInvalidArgument, "bootstrap: nranks %d is out of range 1..%d", nranks,
                wire::kMaxRanks);
  }
  if (rank < 0 || rank >= nranks) {
    return Fail(xcclInvalidArgument, "bootstrap: rank %d is out of range for nranks %d", rank,
                nranks);
  }
  if (timeout_ms < 1) {
    return Fail(xcclInvalidArgument, "bootstrap: timeout %lld ms must be positive",
                static_cast<long long>(timeout_ms));
  }
  UniqueIdContents contents;
  XCCL_TRY(DecodeUniqueId(id, &contents));
  JoinContext c{
      ToSecret(contents.secret),         rank,         nranks, timeout_ms, Deadline(timeout_ms),
      FormatAddress(contents.root_addr), socket_ifname};
  XCCL_TRY(ClaimId(c.secret, rank));

  if (contents.rank0_is_root) {
    // Nobody to meet: XCCL_COMM_ID's root would only serve this rank.
    if (nranks == 1) {
      *out = std::make_unique<RingBootstrap>(c.secret, 0, 1, timeout_ms, Socket(), Socket());
      return xcclSuccess;
    }
    if (rank == 0) {
      Socket listener;
      IoStatus st = Socket::TryListen(contents.root_addr, &listener);
      if (!st.ok() && st.err == EADDRNOTAVAIL) {
        // The name resolves to an address this host does not hold (NAT, a hosts-file alias):
        // serve on every local address of that family, same port.
        sockaddr_storage any{};
        any.ss_family = contents.root_addr.ss_family;
        if (any.ss_family == AF_INET) {
          reinterpret_cast<sockaddr_in&>(any).sin_port =
              reinterpret_cast<sockaddr_in&>(contents.root_addr).sin_port;
        } else {
          reinterpret_cast<sockaddr_in6&>(any).sin6_port =
              reinterpret_cast<sockaddr_in6&>(contents.root_addr).sin6_port;
        }
        XCCL_INFO(kLogBootstrap, "bootstrap: %s is not a local address; serving on port %s",
                  c.root.c_str(), FormatAddress(any).c_str());
        st = Socket::TryListen(any, &listener);
      }
      if (!st.ok()) {
        return Fail(xcclSystemError,
                    "bootstrap: rank 0 cannot serve the rendezvous at %s (XCCL_COMM_ID): %s",
                    c.root.c_str(), st.Describe().c_str());
      }
      XCCL_TRY(StartRoot(std::move(listener), c.secret, c.deadline));
    }
  }

  Socket listener;
  sockaddr_storage next_addr{};
  XCCL_TRY(JoinRoot(c, contents.root_addr, &listener, &next_addr));
  if (nranks == 1) {
    *out = std::make_unique<RingBootstrap>(c.secret, 0, 1, timeout_ms, Socket(), Socket());
    return xcclSuccess;
  }
  // Connecting first cannot deadlock: the kernel completes it from the listen backlog before
  // rank+1 reaches accept().
  Socket next, prev;
  XCCL_TRY(ConnectNext(c, next_addr, &next));
  XCCL_TRY(AcceptPrev(c, &listener, &prev));
  XCCL_TRY(WaitAck(c, &next));
  auto boot = std::make_unique<RingBootstrap>(c.secret, rank, nranks, timeout_ms, std::move(next),
                                              std::move(prev));
  // The ring listener stays open for point-to-point connections.
  XCCL_TRY(boot->StartPeerMessages(std::move(listener), c.deadline));
  XCCL_INFO(kLogBootstrap, "bootstrap: rank %d of %d joined the rendezvous at %s; ring to %s", rank,
            nranks, c.root.c_str(), FormatAddress(next_addr).c_str());
  *out = std::move(boot);
  return xcclSuccess;
}

}  // namespace bootstrap_internal
}  // namespace xccl
