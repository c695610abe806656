#include "transport/bootstrap/bootstrap.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/logging.h"
#include "core/params.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace xccl {

namespace {

using Secret = std::array<uint8_t, wire::kSecretBytes>;

// An unauthenticated connection gets this long to deliver its one frame. The deadline runs
// from accept(), not from the last byte, so a client trickling bytes cannot hold a slot.
constexpr int64_t kConnDeadlineMs = 5000;
// Past this many unauthenticated connections the oldest is dropped: a flood cannot grow the
// root's memory or descriptors without bound.
constexpr size_t kMaxPending = 1024;
// Listener pause after accept() fails for lack of descriptors (the listener stays readable).
constexpr int64_t kAcceptPauseMs = 100;

enum CollOp : uint32_t { kOpAllGather = 1, kOpBarrier = 2 };

Secret ToSecret(const uint8_t* p) {
  Secret s;
  memcpy(s.data(), p, s.size());
  return s;
}

// Compares without an early exit, so response timing says nothing about a guessed prefix.
bool SecretEquals(const Secret& a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

xcclResult_t RandomBytes(void* out, size_t bytes) {
  uint8_t* p = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    ssize_t n = getrandom(p, bytes, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(xcclSystemError, "getrandom: %s", strerror(errno));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return xcclSuccess;
}

int64_t MsUntil(Deadline deadline) {
  auto left = deadline - SteadyClock::now();
  if (left <= SteadyClock::duration::zero()) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(left).count();
}

// ---------------------------------------------------------------------------------------------
// Ids used in this process: a second Init of one (id, rank) must fail at once rather than
// confuse a rendezvous, and an id whose root has finished can never complete again.

struct IdRegistry {
  std::mutex mu;
  std::set<std::pair<Secret, int>> claimed;
  std::set<Secret> consumed;
};

// Leaked on purpose: detached root threads may still touch it while the process exits.
IdRegistry& Registry() {
  static IdRegistry* registry = new IdRegistry();
  return *registry;
}

xcclResult_t ClaimId(const Secret& secret, int rank) {
  IdRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.consumed.count(secret) != 0) {
    return Fail(
        xcclInvalidUsage,
        "bootstrap: unique id already used (its rendezvous root in this process has finished or "
        "given up); every "
        "communicator needs a fresh id from xcclGetUniqueId");
  }
  if (!r.claimed.insert({secret, rank}).second) {
    return Fail(xcclInvalidUsage,
                "bootstrap: unique id already used by rank %d in this process; every "
                "communicator needs a fresh id from xcclGetUniqueId",
                rank);
  }
  return xcclSuccess;
}

void MarkConsumed(const Secret& secret) {
  IdRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.consumed.insert(secret);
}

// ---------------------------------------------------------------------------------------------
// Reading one frame from an untrusted connection without ever blocking on it.

class FrameReader {
 public:
  enum class State { kPartial, kDone, kBad };

  explicit FrameReader(uint32_t expected_type) : expected_type_(expected_type) {}

  // Reads what the socket has; on kBad, *why says what was wrong with the sender.
  State Read(Socket& sock, std::string* why) {
    for (;;) {
      size_t got = 0;
      IoStatus st;
      if (have_ < wire::kHeaderBytes) {
        st = sock.RecvSome(header_ + have_, wire::kHeaderBytes - have_, &got);
      } else {
        size_t off = have_ - wire::kHeaderBytes;
        st = sock.RecvSome(payload_.data() + off, payload_.size() - off, &got);
      }
      if (!st.ok()) {
        *why = have_ == 0 ? "closed without sending anything (" + st.Describe() + ")"
                          : "truncated message: " + std::to_string(have_) + " of " +
                                std::to_string(expected_total()) + " bytes, then " + st.Describe();
        return State::kBad;
      }
      if (got == 0) return State::kPartial;
      bool header_was_partial = have_ < wire::kHeaderBytes;
      have_ += got;
      if (header_was_partial && have_ == wire::kHeaderBytes) {
        uint32_t magic = wire::GetU32(header_);
        uint32_t type = wire::GetU32(header_ + 4);
        uint32_t length = wire::GetU32(header_ + 8);
        char text[160];
        if (magic != wire::kMagic) {
          snprintf(text, sizeof(text), "garbage (magic 0x%08x, not an xccl bootstrap message)",
                   magic);
          *why = text;
          return State::kBad;
        }
        if (type != expected_type_) {
          snprintf(text, sizeof(text), "unexpected message type %u (expected %u)", type,
                   expected_type_);
          *why = text;
          return State::kBad;
        }
        if (length > wire::kMaxRequestBytes) {
          snprintf(text, sizeof(text), "oversized message (%u bytes, at most %u accepted)", length,
                   wire::kMaxRequestBytes);
          *why = text;
          return State::kBad;
        }
        payload_.resize(length);
      }
      if (have_ == expected_total()) return State::kDone;
    }
  }

  const std::vector<uint8_t>& payload() const { return payload_; }

 private:
  size_t expected_total() const {
    return have_ < wire::kHeaderBytes ? wire::kHeaderBytes : wire::kHeaderBytes + payload_.size();
  }

  uint32_t expected_type_;
  uint8_t header_[wire::kHeaderBytes] = {};
  size_t have_ = 0;
  std::vector<uint8_t> payload_;
};

// A connection that delivered its one frame; not yet vetted beyond framing.
struct Arrival {
  Socket sock;
  std::string peer;
  std::vector<uint8_t> payload;
};

// The listener plus every connection that has not yet delivered its frame. Shared by the root
// and by each rank's ring listener: neither may be stalled or exhausted by a client that is
// slow, silent, or hostile.
class Gate {
 public:
  Gate(Socket* listener, uint32_t expected_type, std::string owner)
      : listener_(listener), expected_type_(expected_type), owner_(std::move(owner)) {}

  // Appends the listener and pending connections to `fds`; folds their deadlines into *wake.
  void AddPollFds(std::vector<pollfd>* fds, Deadline* wake) {
    start_ = fds->size();
    listener_polled_ = SteadyClock::now() >= accept_paused_until_;
    if (listener_polled_) {
      fds->push_back({listener_->fd(), POLLIN, 0});
    } else {
      *wake = std::min(*wake, accept_paused_until_);
    }
    for (const Pending& p : pending_) {
      fds->push_back({p.sock.fd(), POLLIN, 0});
      *wake = std::min(*wake, p.deadline);
    }
  }

  // After poll(): reads what is ready, accepts new connections, drops bad or expired ones
  // (logged with the peer's address), moves complete frames to *ready.
  void Service(const std::vector<pollfd>& fds, std::vector<Arrival>* ready) {
    size_t i = start_;
    bool accept_ready = false;
    if (listener_polled_) accept_ready = fds[i++].revents != 0;
    Deadline now = SteadyClock::now();
    std::vector<Pending> keep;
    keep.reserve(pending_.size());
    for (Pending& p : pending_) {
      short revents = fds[i++].revents;
      if (revents != 0) {
        std::string why;
        FrameReader::State state = p.reader.Read(p.sock, &why);
        if (state == FrameReader::State::kDone) {
          ready->push_back({std::move(p.sock), p.peer, p.reader.payload()});
          continue;
        }
        if (state == FrameReader::State::kBad) {
          Refuse(p.peer, why);
          continue;
        }
      }
      if (now >= p.deadline) {
        Refuse(p.peer,
               "sent no complete message within " + std::to_string(kConnDeadlineMs) + " ms");
        continue;
      }
      keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
    if (accept_ready) AcceptAll();
  }

  void Refuse(const std::string& peer, const std::string& why) {
    XCCL_WARN(kLogBootstrap, "bootstrap %s: refused connection from %s: %s", owner_.c_str(),
              peer.c_str(), why.c_str());
  }

 private:
  struct Pending {
    Socket sock;
    std::string peer;
    FrameReader reader;
    Deadline deadline;
  };

  void AcceptAll() {
    for (;;) {
      Socket sock;
      sockaddr_storage peer{};
      IoStatus st = listener_->Accept(Deadline(), &sock, &peer);
      if (st.code == IoStatus::kTimeout) return;  // nothing more queued
      if (!st.ok()) {
        XCCL_WARN(kLogBootstrap, "bootstrap %s: accept failed: %s%s", owner_.c_str(),
                  st.Describe().c_str(),
                  st.err == EMFILE || st.err == ENFILE ? " (raise the open-file limit)" : "");
        accept_paused_until_ = DeadlineAfter(kAcceptPauseMs);
        return;
      }
      if (pending_.size() >= kMaxPending) {
        Refuse(pending_.front().peer, "dropped: too many connections waiting to identify");
        pending_.erase(pending_.begin());
      }
      XCCL_TRACE(kLogBootstrap, "bootstrap %s: connection from %s", owner_.c_str(),
                 FormatAddress(peer).c_str());
      pending_.push_back({std::move(sock), FormatAddress(peer), FrameReader(expected_type_),
                          DeadlineAfter(kConnDeadlineMs)});
    }
  }

  Socket* listener_;
  uint32_t expected_type_;
  std::string owner_;
  std::vector<Pending> pending_;
  size_t start_ = 0;
  bool listener_polled_ = false;
  Deadline accept_paused_until_{};
};

xcclResult_t PollOnce(std::vector<pollfd>* fds, Deadline wake) {
  int n = poll(fds->data(), fds->size(), PollTimeoutMs(wake));
  if (n < 0 && errno != EINTR) return Fail(xcclSystemError, "bootstrap: poll: %s", strerror(errno));
  if (n < 0) {
    for (pollfd& f : *fds) f.revents = 0;
  }
  return xcclSuccess;
}

std::vector<uint8_t> ErrorFrame(const Secret& secret, xcclResult_t code, const std::string& text) {
  std::string clipped = text.substr(0, wire::kMaxErrorText);
  std::vector<uint8_t> payload(wire::kSecretBytes + 4 + clipped.size());
  memcpy(payload.data(), secret.data(), secret.size());
  wire::PutU32(payload.data() + wire::kSecretBytes, static_cast<uint32_t>(code));
  memcpy(payload.data() + wire::kSecretBytes + 4, clipped.data(), clipped.size());
  return wire::Frame(wire::kError, payload);
}

// ---------------------------------------------------------------------------------------------
// The root: serves one rendezvous, then exits. Runs in a detached thread and owns all it uses.

class Root {
 public:
  Root(Socket listener, const Secret& secret, Deadline deadline)
      : listener_(std::move(listener)), secret_(secret), deadline_(deadline) {
    sockaddr_storage addr{};
    if (listener_.LocalAddress(&addr) == xcclSuccess) name_ = "root at " + FormatAddress(addr);
    gate_ = std::make_unique<Gate>(&listener_, wire::kHello, name_);
  }

  void Run() {
    XCCL_INFO(kLogBootstrap, "bootstrap %s: serving one rendezvous", name_.c_str());
    try {
      Serve();
    } catch (const std::exception& e) {
      // Only allocation can throw here; the ranks see their connections close.
      XCCL_WARN(kLogBootstrap, "bootstrap %s: stopped: %s", name_.c_str(), e.what());
    }
    MarkConsumed(secret_);
  }

 private:
  struct Member {
    Socket sock;
    std::string peer;
    Deadline give_up{};
    uint64_t timeout_ms = 0;
    uint8_t listen_addr[kWireAddressBytes] = {};
  };

  void Serve() {
    for (;;) {
      Deadline now = SteadyClock::now();
      if (failed_) {
        if (now >= linger_until_ || AllAnswered()) return;
      } else {
        if (now >= Limit()) {
          GiveUp();
          return;
        }
      }
      std::vector<pollfd> fds;
      Deadline wake = failed_ ? linger_until_ : Limit();
      gate_->AddPollFds(&fds, &wake);
      size_t member_start = fds.size();
      std::vector<int> member_ranks;
      for (size_t r = 0; r < members_.size(); ++r) {
        if (!members_[r].sock.valid()) continue;
        fds.push_back({members_[r].sock.fd(), POLLIN, 0});
        member_ranks.push_back(static_cast<int>(r));
      }
      if (PollOnce(&fds, wake) != xcclSuccess) return;

      // A rank that joined sends nothing more until it has its answer: readable means it
      // died or gave up, and then this rendezvous can never complete.
      for (size_t i = 0; i < member_ranks.size() && !failed_; ++i) {
        if (fds[member_start + i].revents == 0) continue;
        int r = member_ranks[i];
        EnterFailed(xcclRemoteError, "rank " + std::to_string(r) + " (" + members_[r].peer +
                                         ") left the rendezvous before it completed");
      }
      std::vector<Arrival> ready;
      gate_->Service(fds, &ready);
      for (Arrival& a : ready) HandleHello(std::move(a));

      if (!failed_ && nranks_ > 0 && joined_ == nranks_) {
        Complete();
        return;
      }
    }
  }

  void HandleHello(Arrival a) {
    wire::HelloMsg hello;
    if (!wire::DecodeHello(a.payload, &hello)) {
      gate_->Refuse(a.peer, "malformed hello (" + std::to_string(a.payload.size()) + " bytes)");
      return;
    }
    if (!SecretEquals(secret_, hello.secret)) {
      gate_->Refuse(a.peer, "wrong secret (a different unique id, or a stray client)");
      return;
    }
    // Authenticated: this is a rank of this rendezvous, right or wrong about its place in it.
    int64_t margin = std::min<int64_t>(static_cast<int64_t>(hello.wait_ms / 10), 200);
    Deadline give_up =
        DeadlineAfter(static_cast<int64_t>(std::min<uint64_t>(hello.wait_ms, INT64_MAX)) - margin);
    uint32_t rank = hello.rank, nranks = hello.nranks;
    max_nranks_ = std::max<uint32_t>(max_nranks_, std::min<uint32_t>(nranks, wire::kMaxRanks));
    if (failed_) {
      Answer(&a.sock, a.peer, rank, give_up);
      return;
    }
    std::string who = "rank " + std::to_string(rank) + " (" + a.peer + ")";
    if (nranks < 1 || nranks > static_cast<uint32_t>(wire::kMaxRanks) || rank >= nranks) {
      EnterFailed(xcclInvalidUsage, who + " claims to be rank " + std::to_string(rank) + " of " +
                                        std::to_string(nranks) + ", which is out of range");
      Answer(&a.sock, a.peer, rank, give_up);
      return;
    }
    if (nranks_ == 0) {
      nranks_ = static_cast<int>(nranks);
      first_peer_ = who;
      members_.resize(nranks);
    } else if (static_cast<int>(nranks) != nranks_) {
      EnterFailed(xcclInvalidUsage, "ranks disagree on nranks: " + who + " says " +
                                        std::to_string(nranks) + ", " + first_peer_ + " said " +
                                        std::to_string(nranks_));
      Answer(&a.sock, a.peer, rank, give_up);
      return;
    }
    if (members_[rank].sock.valid()) {
      EnterFailed(xcclInvalidUsage, "two ranks claim rank " + std::to_string(rank) + ": " +
                                        members_[rank].peer + " and " + a.peer);
      Answer(&a.sock, a.peer, rank, give_up);
      return;
    }
    Member& m = members_[rank];
    m.sock = std::move(a.sock);
    m.peer = a.peer;
    m.give_up = give_up;
    m.timeout_ms = hello.timeout_ms;
    memcpy(m.listen_addr, hello.listen_addr, kWireAddressBytes);
    ++joined_;
    XCCL_TRACE(kLogBootstrap, "bootstrap %s: rank %u of %u joined from %s (%d/%d)", name_.c_str(),
               rank, nranks, a.peer.c_str(), joined_, nranks_);
  }

  // Before anyone joins, the root waits as long as a rank would; afterwards, until the first
  // joined rank gives up, since the rendezvous can no longer complete without it.
  Deadline Limit() const { return joined_ > 0 ? EarliestGiveUp() : deadline_; }

  Deadline EarliestGiveUp() const {
    Deadline earliest = Deadline::max();
    for (const Member& m : members_) {
      if (m.sock.valid()) earliest = std::min(earliest, m.give_up);
    }
    return earliest;
  }

  // Every rank that has joined (and any that joins later, while the root lingers) is told
  // what went wrong; none is left to wait for its deadline.
  void EnterFailed(xcclResult_t code, const std::string& text) {
    failed_ = true;
    fail_code_ = code;
    fail_text_ = text;
    linger_until_ = SteadyClock::now();
    XCCL_WARN(kLogBootstrap, "bootstrap %s: rendezvous failed: %s", name_.c_str(), text.c_str());
    for (size_t r = 0; r < members_.size(); ++r) {
      Member& m = members_[r];
      if (m.sock.valid()) Answer(&m.sock, m.peer, static_cast<uint32_t>(r), m.give_up);
    }
  }

  void Answer(Socket* sock, const std::string& peer, uint32_t rank, Deadline give_up) {
    std::vector<uint8_t> frame = ErrorFrame(secret_, fail_code_, fail_text_);
    IoStatus st = sock->SendAll(frame.data(), frame.size(), DeadlineAfter(kConnDeadlineMs));
    if (!st.ok()) {
      XCCL_WARN(kLogBootstrap, "bootstrap %s: could not tell rank %u (%s) of the failure: %s",
                name_.c_str(), rank, peer.c_str(), st.Describe().c_str());
    }
    sock->Close();
    answered_.insert(rank);
    // Linger while some rank that has heard from us could still be joined by its peers.
    linger_until_ = std::max(linger_until_, give_up);
  }

  bool AllAnswered() const {
    auto end = answered_.lower_bound(max_nranks_);
    return static_cast<uint32_t>(std::distance(answered_.begin(), end)) >= max_nranks_;
  }

  void GiveUp() {
    if (joined_ == 0) {
      XCCL_WARN(kLogBootstrap, "bootstrap %s: no rank joined before the deadline; giving up",
                name_.c_str());
      return;
    }
    std::string missing;
    int count = 0;
    size_t first_to_quit = 0;
    for (size_t r = 0; r < members_.size(); ++r) {
      const Member& m = members_[r];
      if (m.sock.valid()) {
        if (m.give_up < members_[first_to_quit].give_up || !members_[first_to_quit].sock.valid()) {
          first_to_quit = r;
        }
        continue;
      }
      if (++count <= 32) missing += (missing.empty() ? "" : ",") + std::to_string(r);
    }
    if (count > 32) missing += ",...";
    // Every joined rank gets the same words, so they name whose deadline ended the wait.
    std::string text = "did not complete within " +
                       std::to_string(members_[first_to_quit].timeout_ms) + " ms (rank " +
                       std::to_string(first_to_quit) + "'s timeout): " + std::to_string(count) +
                       " of " + std::to_string(nranks_) +
                       " ranks never joined: " + (count == 1 ? "rank " : "ranks ") + missing;
    fail_code_ = xcclTimeout;
    fail_text_ = text;
    XCCL_WARN(kLogBootstrap, "bootstrap %s: the rendezvous %s", name_.c_str(), text.c_str());
    for (size_t r = 0; r < members_.size(); ++r) {
      Member& m = members_[r];
      if (m.sock.valid()) Answer(&m.sock, m.peer, static_cast<uint32_t>(r), m.give_up);
    }
  }

  void Complete() {
    // Consumed before anyone is answered: once a rank returns from Init, a later Init with
    // this id in this process is refused at once.
    MarkConsumed(secret_);
    Deadline send_deadline = DeadlineAfter(kConnDeadlineMs);
    for (int r = 0; r < nranks_; ++r) {
      std::vector<uint8_t> payload(wire::kSecretBytes + 4 + kWireAddressBytes);
      memcpy(payload.data(), secret_.data(), secret_.size());
      wire::PutU32(payload.data() + wire::kSecretBytes, static_cast<uint32_t>(nranks_));
      memcpy(payload.data() + wire::kSecretBytes + 4, members_[(r + 1) % nranks_].listen_addr,
             kWireAddressBytes);
      std::vector<uint8_t> frame = wire::Frame(wire::kNextAddress, payload);
      Member& m = members_[r];
      IoStatus st = m.sock.SendAll(frame.data(), frame.size(), send_deadline);
      if (!st.ok()) {
        XCCL_WARN(kLogBootstrap, "bootstrap %s: could not answer rank %d (%s): %s", name_.c_str(),
                  r, m.peer.c_str(), st.Describe().c_str());
      }
      m.sock.Close();
    }
    XCCL_INFO(kLogBootstrap, "bootstrap %s: rendezvous of %d ranks complete", name_.c_str(),
              nranks_);
  }

  Socket listener_;
  Secret secret_;
  Deadline deadline_;
  std::string name_ = "root";
  std::unique_ptr<Gate> gate_;

  int nranks_ = 0;  // set by the first authenticated hello
  std::string first_peer_;
  std::vector<Member> members_;
  int joined_ = 0;

  bool failed_ = false;
  xcclResult_t fail_code_ = xcclInternalError;
  std::string fail_text_;
  std::set<uint32_t> answered_;
  uint32_t max_nranks_ = 0;
  Deadline linger_until_{};
};

xcclResult_t StartRoot(Socket listener, const Secret& secret, Deadline deadline) {
  try {
    auto root = std::make_shared<Root>(std::move(listener), secret, deadline);
    std::thread([root] { root->Run(); }).detach();
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: cannot start the rendezvous root thread: %s",
                e.what());
  }
  return xcclSuccess;
}

// ---------------------------------------------------------------------------------------------
// The ring, after the rendezvous.

class RingBootstrap final : public Bootstrap {
 public:
  RingBootstrap(int rank, int nranks, int64_t timeout_ms, Socket next, Socket prev)
      : rank_(rank),
        nranks_(nranks),
        timeout_ms_(timeout_ms),
        next_(std::move(next)),
        prev_(std::move(prev)) {}

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  xcclResult_t AllGather(void* data, size_t block_bytes) override {
    return Exchange(data, block_bytes, kOpAllGather);
  }

  xcclResult_t Barrier() override {
    // Every rank's byte reaches every other rank only after all have entered.
    std::vector<uint8_t> bytes(static_cast<size_t>(nranks_), 0);
    return Exchange(bytes.data(), 1, kOpBarrier);
  }

  void Abort() override {
    aborted_.store(true);
    next_.Shutdown();
    prev_.Shutdown();
  }

 private:
  int Next() const { return (rank_ + 1) % nranks_; }
  int Prev() const { return (rank_ + nranks_ - 1) % nranks_; }

  static const char* OpName(uint32_t op) {
    return op == kOpAllGather ? "AllGather" : op == kOpBarrier ? "Barrier" : "an unknown call";
  }

  xcclResult_t Exchange(void* data, size_t block_bytes, uint32_t op) {
    const char* what = OpName(op);
    if (aborted_.load()) {
      return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s after Abort()", rank_, what);
    }
    if (broken_) {
      return Fail(xcclInvalidUsage,
                  "bootstrap: rank %d: %s after an earlier bootstrap call failed (the ring is "
                  "out of step)",
                  rank_, what);
    }
    if (nranks_ == 1) return xcclSuccess;
    if (data == nullptr && block_bytes > 0) {
      return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s of a null buffer", rank_, what);
    }
    Deadline deadline = DeadlineAfter(timeout_ms_);
    ++seq_;

    // A header first, so that ranks calling different things, or different sizes, fail with
    // a message instead of reading each other's bytes as data.
    uint8_t mine[wire::kHeaderBytes + wire::kCollHeaderBytes];
    uint8_t theirs[sizeof(mine)];
    wire::PutHeader(mine, wire::kCollHeader, wire::kCollHeaderBytes);
    wire::PutU64(mine + wire::kHeaderBytes, seq_);
    wire::PutU64(mine + wire::kHeaderBytes + 8, block_bytes);
    wire::PutU32(mine + wire::kHeaderBytes + 16, op);
    bool on_send = false;
    IoStatus st =
        SendRecv(next_, mine, sizeof(mine), prev_, theirs, sizeof(theirs), deadline, &on_send);
    if (!st.ok()) return IoFailure(st, on_send, what);
    XCCL_TRY(CheckHeader(theirs, block_bytes, op));

    uint8_t* base = static_cast<uint8_t*>(data);
    for (int step = 0; step < nranks_ - 1; ++step) {
      int send_block = (rank_ - step + nranks_) % nranks_;
      int recv_block = (rank_ - step - 1 + nranks_) % nranks_;
      st = SendRecv(next_, base + static_cast<size_t>(send_block) * block_bytes, block_bytes, prev_,
                    base + static_cast<size_t>(recv_block) * block_bytes, block_bytes, deadline,
                    &on_send);
      if (!st.ok()) return IoFailure(st, on_send, what);
    }
    return xcclSuccess;
  }

  xcclResult_t CheckHeader(const uint8_t* h, size_t block_bytes, uint32_t op) {
    const uint8_t* p = h + wire::kHeaderBytes;
    if (wire::GetU32(h) != wire::kMagic || wire::GetU32(h + 4) != wire::kCollHeader ||
        wire::GetU32(h + 8) != wire::kCollHeaderBytes) {
      broken_ = true;
      return Fail(xcclRemoteError, "bootstrap: rank %d: rank %d sent a malformed call header",
                  rank_, Prev());
    }
    uint64_t seq = wire::GetU64(p);
    uint64_t bytes = wire::GetU64(p + 8);
    uint32_t their_op = wire::GetU32(p + 16);
    if (seq != seq_ || their_op != op || bytes != block_bytes) {
      broken_ = true;
      return Fail(xcclInvalidUsage,
                  "bootstrap: calls out of step: rank %d is in call #%llu, %s of %llu-byte "
                  "blocks; rank %d in call #%llu, %s of %llu-byte blocks",
                  rank_, static_cast<unsigned long long>(seq_), OpName(op),
                  static_cast<unsigned long long>(block_bytes), Prev(),
                  static_cast<unsigned long long>(seq), OpName(their_op),
                  static_cast<unsigned long long>(bytes));
    }
    return xcclSuccess;
  }

  xcclResult_t IoFailure(const IoStatus& st, bool on_send, const char* what) {
    broken_ = true;
    if (aborted_.load()) {
      return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s interrupted by Abort()", rank_, what);
    }
    int peer = on_send ? Next() : Prev();
    switch (st.code) {
      case IoStatus::kTimeout:
        return Fail(xcclTimeout, "bootstrap: rank %d: %s: rank %d %s within %lld ms", rank_, what,
                    peer, on_send ? "accepted no data" : "sent no data",
                    static_cast<long long>(timeout_ms_));
      case IoStatus::kClosed:
        return Fail(xcclRemoteError,
                    "bootstrap: rank %d: %s: rank %d closed its connection (%s; did it exit or "
                    "abort?)",
                    rank_, what, peer, st.Describe().c_str());
      default:
        return Fail(xcclSystemError, "bootstrap: rank %d: %s: socket error with rank %d: %s", rank_,
                    what, peer, st.Describe().c_str());
    }
  }

  int rank_;
  int nranks_;
  int64_t timeout_ms_;
  Socket next_;
  Socket prev_;
  uint64_t seq_ = 0;
  bool broken_ = false;
  std::atomic<bool> aborted_{false};
};

// ---------------------------------------------------------------------------------------------
// A rank's side of Init.

struct JoinContext {
  Secret secret;
  int rank;
  int nranks;
  int64_t timeout_ms;
  Deadline deadline;
  std::string root;  // for messages
};

xcclResult_t RendezvousTimeout(const JoinContext& c, const std::string& detail) {
  return Fail(xcclTimeout,
              "bootstrap: rank %d: the rendezvous at %s did not complete within %lld ms%s%s",
              c.rank, c.root.c_str(), static_cast<long long>(c.timeout_ms),
              detail.empty() ? "" : ": ", detail.c_str());
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
  hello.wait_ms = static_cast<uint64_t>(MsUntil(c.deadline));
  if (c.nranks > 1) {
    // Without XCCL_SOCKET_IFNAME, listen where this host reached the root: the interface that
    // routes to the root is the one the other ranks can most likely reach too.
    sockaddr_storage local{};
    const std::string& ifname = GetParams().socket_ifname;
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

  uint8_t header[wire::kHeaderBytes];
  st = sock.RecvAll(header, sizeof(header), c.deadline);
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
  if (sane) st = sock.RecvAll(payload.data(), payload.size(), c.deadline);
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

std::vector<uint8_t> RingHelloFrame(const JoinContext& c, uint32_t type) {
  wire::RingHelloMsg m{};
  memcpy(m.secret, c.secret.data(), c.secret.size());
  m.rank = static_cast<uint32_t>(c.rank);
  m.nranks = static_cast<uint32_t>(c.nranks);
  return wire::Frame(type, wire::EncodeRingHello(m));
}

// Accepts rank-1's connection; anything else that connects is refused and logged.
xcclResult_t AcceptPrev(const JoinContext& c, Socket* listener, Socket* out) {
  int prev = (c.rank + c.nranks - 1) % c.nranks;
  Gate gate(listener, wire::kRingHello, "rank " + std::to_string(c.rank) + " ring listener");
  for (;;) {
    if (SteadyClock::now() >= c.deadline) {
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

xcclResult_t InitImpl(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                      std::unique_ptr<Bootstrap>* out) {
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
      ToSecret(contents.secret),        rank, nranks, timeout_ms, DeadlineAfter(timeout_ms),
      FormatAddress(contents.root_addr)};
  XCCL_TRY(ClaimId(c.secret, rank));

  if (contents.rank0_is_root) {
    // Nobody to meet: XCCL_COMM_ID's root would only serve this rank.
    if (nranks == 1) {
      *out = std::make_unique<RingBootstrap>(0, 1, timeout_ms, Socket(), Socket());
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
    *out = std::make_unique<RingBootstrap>(0, 1, timeout_ms, Socket(), Socket());
    return xcclSuccess;
  }
  // Connecting first cannot deadlock: the kernel completes it from the listen backlog before
  // rank+1 reaches accept().
  Socket next, prev;
  XCCL_TRY(ConnectNext(c, next_addr, &next));
  XCCL_TRY(AcceptPrev(c, &listener, &prev));
  XCCL_TRY(WaitAck(c, &next));
  listener.Close();
  XCCL_INFO(kLogBootstrap, "bootstrap: rank %d of %d joined the rendezvous at %s; ring to %s", rank,
            nranks, c.root.c_str(), FormatAddress(next_addr).c_str());
  *out =
      std::make_unique<RingBootstrap>(rank, nranks, timeout_ms, std::move(next), std::move(prev));
  return xcclSuccess;
}

}  // namespace

xcclResult_t Bootstrap::CreateUniqueId(xcclUniqueId* id) {
  if (id == nullptr) return Fail(xcclInvalidArgument, "xcclGetUniqueId: null id");
  try {
    UniqueIdContents contents{};
    XCCL_TRY(RandomBytes(contents.secret, sizeof(contents.secret)));
    const Params& params = GetParams();
    if (!params.comm_id.empty()) {
      if (ParseHostPort(params.comm_id, &contents.root_addr) != xcclSuccess) {
        return Fail(xcclInvalidArgument, "XCCL_COMM_ID=%s: %s", params.comm_id.c_str(),
                    ThreadLastError().c_str());
      }
      contents.rank0_is_root = true;
      EncodeUniqueId(contents, id);
      return xcclSuccess;
    }
    sockaddr_storage addr{};
    std::string ifname;
    XCCL_TRY(FindInterfaceAddress(params.socket_ifname, &addr, &ifname));
    Socket listener;
    XCCL_TRY(Socket::Listen(addr, &listener));
    XCCL_TRY(listener.LocalAddress(&contents.root_addr));
    XCCL_INFO(kLogBootstrap, "bootstrap: unique id with root at %s (interface %s)",
              FormatAddress(contents.root_addr).c_str(), ifname.c_str());
    // Until the first rank arrives, the root can only wait as long as any rank would.
    XCCL_TRY(StartRoot(std::move(listener), ToSecret(contents.secret),
                       DeadlineAfter(params.timeout_ms)));
    EncodeUniqueId(contents, id);
    return xcclSuccess;
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "xcclGetUniqueId: %s", e.what());
  }
}

xcclResult_t Bootstrap::Init(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                             std::unique_ptr<Bootstrap>* out) {
  try {
    return InitImpl(id, rank, nranks, timeout_ms, out);
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: %s", rank, e.what());
  }
}

}  // namespace xccl
