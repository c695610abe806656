#include "transport/bootstrap/bootstrap.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "base/repeat_limiter.h"
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
// ... once it has waited this long; younger, accepting pauses for kFullPauseMs instead.
constexpr int64_t kEvictAfterMs = 1000;
constexpr int64_t kFullPauseMs = 5;
// Listener pause after accept() fails for lack of descriptors (the listener stays readable).
constexpr int64_t kAcceptPauseMs = 100;

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
    listener_polled_ = accept_paused_until_.Expired();
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
    const Deadline::Clock::time_point now = Deadline::Clock::now();
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
      if (now >= p.deadline.end()) {
        Refuse(p.peer,
               "sent no complete message within " + std::to_string(kConnDeadlineMs) + " ms");
        continue;
      }
      keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
    if (accept_ready) AcceptAll();
  }

  // A scan or a flood can refuse thousands of connections a second: the first few are logged,
  // then one line a second with the count, and what is left when the gate goes.
  void Refuse(const std::string& peer, const std::string& why) {
    uint64_t dropped = 0;
    if (!refusals_.Admit(&dropped)) return;
    if (dropped == 0) {
      XCCL_WARN(kLogBootstrap, "bootstrap %s: refused connection from %s: %s", owner_.c_str(),
                peer.c_str(), why.c_str());
    } else {
      XCCL_WARN(kLogBootstrap,
                "bootstrap %s: refused connection from %s: %s (and %llu more refused since the "
                "last such line)",
                owner_.c_str(), peer.c_str(), why.c_str(),
                static_cast<unsigned long long>(dropped));
    }
  }

  ~Gate() {
    const uint64_t left = refusals_.Remaining();
    if (left > 0)
      XCCL_WARN(kLogBootstrap, "bootstrap %s: %llu more connections refused, not logged one by one",
                owner_.c_str(), static_cast<unsigned long long>(left));
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
      if (pending_.size() >= kMaxPending) {
        // Full. The oldest goes only once it has had kEvictAfterMs to speak: a younger one may
        // be a rank whose hello waits unread in its socket (a flood of garbage evicted ranks
        // that way). Otherwise accepting pauses briefly, the backlog holds the rest, and the
        // pending ones are read first.
        if (pending_.front().deadline.RemainingMs() > kConnDeadlineMs - kEvictAfterMs) {
          accept_paused_until_ = Deadline(kFullPauseMs);
          return;
        }
        Refuse(pending_.front().peer, "dropped: too many connections waiting to identify");
        pending_.erase(pending_.begin());
      }
      Socket sock;
      sockaddr_storage peer{};
      IoStatus st = listener_->Accept(Deadline(), &sock, &peer);  // already passed: no wait
      if (st.code == IoStatus::kTimeout) return;                  // nothing more queued
      if (!st.ok()) {
        XCCL_WARN(kLogBootstrap, "bootstrap %s: accept failed: %s%s", owner_.c_str(),
                  st.Describe().c_str(),
                  st.err == EMFILE || st.err == ENFILE ? " (raise the open-file limit)" : "");
        accept_paused_until_ = Deadline(kAcceptPauseMs);
        return;
      }
      XCCL_TRACE(kLogBootstrap, "bootstrap %s: connection from %s", owner_.c_str(),
                 FormatAddress(peer).c_str());
      pending_.push_back({std::move(sock), FormatAddress(peer), FrameReader(expected_type_),
                          Deadline(kConnDeadlineMs)});
    }
  }

  Socket* listener_;
  uint32_t expected_type_;
  std::string owner_;
  std::vector<Pending> pending_;
  size_t start_ = 0;
  bool listener_polled_ = false;
  Deadline accept_paused_until_{};
  RepeatLimiter refusals_;
};

xcclResult_t PollOnce(std::vector<pollfd>* fds, const Deadline& wake) {
  int n = poll(fds->data(), fds->size(), wake.PollTimeoutMs());
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
  Root(Socket listener, const Secret& secret, const Deadline& deadline)
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
      const Deadline::Clock::time_point now = Deadline::Clock::now();
      if (failed_) {
        if (now >= linger_until_.end() || AllAnswered()) return;
      } else {
        if (now >= Limit().end()) {
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
    Deadline give_up(static_cast<int64_t>(std::min<uint64_t>(hello.wait_ms, INT64_MAX)) - margin);
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
    Deadline earliest = Deadline::Never();
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
    linger_until_ = Deadline::At(Deadline::Clock::now());
    XCCL_WARN(kLogBootstrap, "bootstrap %s: rendezvous failed: %s", name_.c_str(), text.c_str());
    for (size_t r = 0; r < members_.size(); ++r) {
      Member& m = members_[r];
      if (m.sock.valid()) Answer(&m.sock, m.peer, static_cast<uint32_t>(r), m.give_up);
    }
  }

  void Answer(Socket* sock, const std::string& peer, uint32_t rank, const Deadline& give_up) {
    std::vector<uint8_t> frame = ErrorFrame(secret_, fail_code_, fail_text_);
    IoStatus st = sock->SendAll(frame.data(), frame.size(), Deadline(kConnDeadlineMs));
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
    const Deadline send_deadline(kConnDeadlineMs);
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

xcclResult_t StartRoot(Socket listener, const Secret& secret, const Deadline& deadline) {
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
// The ring, after the rendezvous, and the point-to-point messages beside it.

// Abort()'s doorbell: a blocked Send/Recv polls it with its sockets, so another thread can
// wake that call without touching the connection tables the call is using.
class Doorbell {
 public:
  Doorbell() = default;
  ~Doorbell() {
    if (fd_ >= 0) close(fd_);
  }
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  xcclResult_t Open() {
    fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) return Fail(xcclSystemError, "bootstrap: eventfd: %s", strerror(errno));
    return xcclSuccess;
  }
  void Ring() {
    if (fd_ < 0) return;
    uint64_t one = 1;
    ssize_t n = write(fd_, &one, sizeof(one));  // fails only when already rung 2^64-2 times
    (void)n;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::vector<uint8_t> HandshakeFrame(const Secret& secret, int rank, int nranks, uint32_t type) {
  wire::RingHelloMsg m{};
  memcpy(m.secret, secret.data(), secret.size());
  m.rank = static_cast<uint32_t>(rank);
  m.nranks = static_cast<uint32_t>(nranks);
  return wire::Frame(type, wire::EncodeRingHello(m));
}

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

class RingBootstrap final : public Bootstrap {
 public:
  RingBootstrap(const Secret& secret, int rank, int nranks, int64_t timeout_ms, Socket next,
                Socket prev)
      : secret_(secret),
        rank_(rank),
        nranks_(nranks),
        timeout_ms_(timeout_ms),
        next_(std::move(next)),
        prev_(std::move(prev)) {}

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  xcclResult_t AllGather(void* data, size_t block_bytes) override {
    return Exchange(data, block_bytes, wire::kOpAllGather);
  }

  xcclResult_t Barrier() override {
    // Every rank's byte reaches every other rank only after all have entered.
    std::vector<uint8_t> bytes(static_cast<size_t>(nranks_), 0);
    return Exchange(bytes.data(), 1, wire::kOpBarrier);
  }

  void Abort() override {
    aborted_.store(true);
    next_.Shutdown();
    prev_.Shutdown();
    // The point-to-point sockets belong to the calling thread's tables: a call in flight
    // shuts them itself when the doorbell wakes it, and a later call finds aborted_ set.
    doorbell_.Ring();
  }

  // The last step of Init (nranks > 1): keeps `listener` for point-to-point connections and
  // gathers every rank's listen address over the ring, within Init's deadline.
  xcclResult_t StartPeerMessages(Socket listener, const Deadline& deadline) {
    listener_ = std::move(listener);
    XCCL_TRY(doorbell_.Open());
    gate_ = std::make_unique<Gate>(&listener_, wire::kP2pHello,
                                   "rank " + std::to_string(rank_) + " listener");
    sockaddr_storage mine{};
    XCCL_TRY(listener_.LocalAddress(&mine));
    addresses_.assign(static_cast<size_t>(nranks_) * kWireAddressBytes, 0);
    PackAddress(mine, &addresses_[static_cast<size_t>(rank_) * kWireAddressBytes]);
    XCCL_TRY(
        ExchangeWithSeq(addresses_.data(), kWireAddressBytes, wire::kOpAddressTable, 0, deadline));
    for (int r = 0; r < nranks_; ++r) {
      sockaddr_storage addr{};
      if (!UnpackAddress(&addresses_[static_cast<size_t>(r) * kWireAddressBytes], &addr)) {
        return Fail(xcclRemoteError, "bootstrap: rank %d: rank %d sent no usable listen address",
                    rank_, r);
      }
    }
    return xcclSuccess;
  }

  xcclResult_t Send(int peer, uint32_t tag, const void* data, size_t bytes) override {
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

  xcclResult_t Recv(int peer, uint32_t tag, void* data, size_t bytes) override {
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

  // A ring over the members: in step k each passes on the block it received in step k-1.
  xcclResult_t GroupAllGather(const std::vector<int>& ranks, void* data,
                              size_t block_bytes) override {
    try {
      size_t me = 0;
      XCCL_TRY(CheckGroup("GroupAllGather", ranks, &me));
      std::string what = "GroupAllGather over " + GroupText(ranks);
      if (data == nullptr && block_bytes > 0) {
        return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s of a null buffer", rank_,
                    what.c_str());
      }
      if (block_bytes > kMaxMessageBytes) {
        return Fail(xcclInvalidArgument,
                    "bootstrap: rank %d: %s: blocks of %zu bytes, at most %zu supported", rank_,
                    what.c_str(), block_bytes, kMaxMessageBytes);
      }
      const size_t g = ranks.size();
      if (g == 1) return xcclSuccess;
      const uint32_t tag = GroupTag(kGroupAllGather, ranks);
      const int next = ranks[(me + 1) % g];
      const int prev = ranks[(me + g - 1) % g];
      uint8_t* base = static_cast<uint8_t*>(data);
      const Deadline deadline(timeout_ms_);
      for (size_t step = 0; step + 1 < g; ++step) {
        size_t send_block = (me + g - step) % g;
        size_t recv_block = (me + g - step - 1) % g;
        PostedSend s(next, tag, base + send_block * block_bytes, block_bytes);
        PostedRecv r(prev, tag, base + recv_block * block_bytes, block_bytes);
        XCCL_TRY(Progress(&s, &r, deadline, what));
      }
      return xcclSuccess;
    } catch (const std::exception& e) {
      return Fail(xcclSystemError, "bootstrap: rank %d: GroupAllGather: %s", rank_, e.what());
    }
  }

  // Dissemination: in round k each member signals the one 2^k after it and waits for the one
  // 2^k before it; after ceil(log2 g) rounds every member has heard, indirectly, from all.
  xcclResult_t GroupBarrier(const std::vector<int>& ranks) override {
    try {
      size_t me = 0;
      XCCL_TRY(CheckGroup("GroupBarrier", ranks, &me));
      const size_t g = ranks.size();
      if (g == 1) return xcclSuccess;
      std::string what = "GroupBarrier over " + GroupText(ranks);
      const uint32_t tag = GroupTag(kGroupBarrier, ranks);
      const Deadline deadline(timeout_ms_);
      for (size_t dist = 1; dist < g; dist *= 2) {
        PostedSend s(ranks[(me + dist) % g], tag, nullptr, 0);
        PostedRecv r(ranks[(me + g - dist) % g], tag, nullptr, 0);
        XCCL_TRY(Progress(&s, &r, deadline, what));
      }
      return xcclSuccess;
    } catch (const std::exception& e) {
      return Fail(xcclSystemError, "bootstrap: rank %d: GroupBarrier: %s", rank_, e.what());
    }
  }

 private:
  int Next() const { return (rank_ + 1) % nranks_; }
  int Prev() const { return (rank_ + nranks_ - 1) % nranks_; }

  static const char* OpName(uint32_t op) {
    switch (op) {
      case wire::kOpAllGather:
        return "AllGather";
      case wire::kOpBarrier:
        return "Barrier";
      case wire::kOpAddressTable:
        return "Init's address exchange";
      default:
        return "an unknown call";
    }
  }

  xcclResult_t Exchange(void* data, size_t block_bytes, uint32_t op) {
    // Numbered from 1: call #0 is Init's address exchange.
    return ExchangeWithSeq(data, block_bytes, op, seq_ + 1, Deadline(timeout_ms_));
  }

  xcclResult_t ExchangeWithSeq(void* data, size_t block_bytes, uint32_t op, uint64_t seq,
                               const Deadline& deadline) {
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
    seq_ = seq;

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

  enum GroupOp : uint32_t { kGroupAllGather = 1, kGroupBarrier = 2 };

  xcclResult_t CheckPeerCall(const char* call, int peer, uint32_t tag, const void* data,
                             size_t bytes) {
    if (aborted_.load()) {
      return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s after Abort()", rank_, call);
    }
    if (peer < 0 || peer >= nranks_) {
      return Fail(xcclInvalidArgument,
                  "bootstrap: rank %d: %s with peer %d, out of range for %d ranks", rank_, call,
                  peer, nranks_);
    }
    if (peer == rank_) {
      return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s with itself as the peer", rank_,
                  call);
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

  xcclResult_t CheckGroup(const char* call, const std::vector<int>& ranks, size_t* me) {
    if (aborted_.load()) {
      return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s after Abort()", rank_, call);
    }
    if (ranks.empty()) {
      return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s with an empty rank list", rank_,
                  call);
    }
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] < 0 || ranks[i] >= nranks_) {
        return Fail(xcclInvalidArgument,
                    "bootstrap: rank %d: %s: ranks[%zu] = %d is out of range for %d ranks", rank_,
                    call, i, ranks[i], nranks_);
      }
      if (i > 0 && ranks[i] <= ranks[i - 1]) {
        return Fail(xcclInvalidArgument,
                    "bootstrap: rank %d: %s: the rank list must be sorted and distinct, but "
                    "ranks[%zu] = %d follows ranks[%zu] = %d",
                    rank_, call, i, ranks[i], i - 1, ranks[i - 1]);
      }
    }
    auto it = std::lower_bound(ranks.begin(), ranks.end(), rank_);
    if (it == ranks.end() || *it != rank_) {
      return Fail(xcclInvalidArgument,
                  "bootstrap: rank %d: %s: the rank list (%s) does not contain this rank", rank_,
                  call, GroupText(ranks).c_str());
    }
    *me = static_cast<size_t>(it - ranks.begin());
    return xcclSuccess;
  }

  static std::string GroupText(const std::vector<int>& ranks) {
    std::string text = "ranks {";
    for (size_t i = 0; i < ranks.size() && i < 16; ++i) {
      text += (i ? "," : "") + std::to_string(ranks[i]);
    }
    if (ranks.size() > 16) text += ",... (" + std::to_string(ranks.size()) + " ranks)";
    return text + "}";
  }

  // The reserved bit, the op, and a hash of the member list: members that disagree on the
  // list wait for tags the others never send, and time out naming a peer, rather than pair
  // up messages of different groups.
  static uint32_t GroupTag(GroupOp op, const std::vector<int>& ranks) {
    uint32_t h = 2166136261u;  // FNV-1a over the ranks' bytes
    for (int r : ranks) {
      for (int i = 0; i < 4; ++i) {
        h ^= static_cast<uint8_t>(static_cast<uint32_t>(r) >> (8 * i));
        h *= 16777619u;
      }
    }
    return kReservedTagBit | (static_cast<uint32_t>(op) << 29) | (h & ((1u << 29) - 1));
  }

  // Runs the posted send and/or receive to completion, failure or the deadline. Never leaves
  // a connection pointing into the caller's buffer.
  xcclResult_t Progress(PostedSend* s, PostedRecv* r, const Deadline& deadline,
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

  xcclResult_t ProgressLoop(PostedSend* s, PostedRecv* r, const Deadline& deadline,
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

  xcclResult_t PeerFailed(int peer) {
    auto f = failed_.find(peer);
    if (f == failed_.end()) return xcclSuccess;
    return Fail(f->second.code, "%s", f->second.message.c_str());
  }

  // The first failure of a pair is the one reported, by every later call with that peer.
  void MarkFailed(int peer, xcclResult_t code, const std::string& message) {
    if (failed_.emplace(peer, PeerFailure{code, message}).second) {
      XCCL_INFO(kLogBootstrap, "%s", message.c_str());
    }
  }

  xcclResult_t TryFinishRecv(PostedRecv* r, const std::string& what) {
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
  void RefuseMessage(int peer, uint32_t tag, uint64_t sent, uint64_t expected) {
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
  xcclResult_t PushSend(PostedSend* s, const Deadline& deadline, bool* retry_soon) {
    XCCL_TRY(PeerFailed(s->peer));
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
                       std::to_string(s->peer) + " at " + FormatAddress(addr) + ": " +
                       st.Describe());
        return PeerFailed(s->peer);
      }
      std::vector<uint8_t> hello = HandshakeFrame(secret_, rank_, nranks_, wire::kP2pHello);
      st = c.sock.SendAll(hello.data(), hello.size(), deadline);
      if (!st.ok()) {
        c.sock.Close();
        c.state = OutConn::kDead;
        MarkFailed(s->peer, st.code == IoStatus::kTimeout ? xcclTimeout : xcclRemoteError,
                   "bootstrap: rank " + std::to_string(rank_) + ": sending the hello to rank " +
                       std::to_string(s->peer) + " at " + FormatAddress(addr) + ": " +
                       st.Describe());
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
                   "bootstrap: rank " + std::to_string(rank_) + ": rank " +
                       std::to_string(s->peer) + " closed its connection (" + st.Describe() +
                       "; did it exit or abort?)");
        return PeerFailed(s->peer);
      }
      if (sent == 0) return xcclSuccess;  // full: PollPeers waits for room
      s->done += sent;
    }
    s->finished = true;
    return xcclSuccess;
  }

  xcclResult_t TimeoutFailure(const PostedRecv* r, const PostedSend* s, const std::string& what) {
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
  xcclResult_t PollPeers(const PostedSend* s, const Deadline& until) {
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
  void AdmitPeer(Arrival a) {
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
                                std::to_string(m.nranks) + " (this is rank " +
                                std::to_string(rank_) + " of " + std::to_string(nranks_) + ")");
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
    XCCL_TRACE(kLogBootstrap, "bootstrap: rank %d: rank %d (%s) connected for messages", rank_,
               peer, a.peer.c_str());
    InConn c;
    c.sock = std::move(a.sock);
    in_.emplace(peer, std::move(c));
  }

  // Reads whatever the peer's connection holds now, message by message: into the posted
  // Recv's buffer when it waits for exactly this message, else into a buffer of its own.
  void ReadInbound(int peer) {
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

  void InboundEnded(int peer, InConn* c, const IoStatus& st) {
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
  void ReadOutbound(int peer) {
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
        MarkFailed(peer, xcclRemoteError,
                   who +
                       (acked ? " closed its connection ("
                              : " closed the connection without accepting it (") +
                       st.Describe() + "; did it exit or abort?)");
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
  bool AllocateBuffer(int peer, InConn* c) {
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
  void DetachRecv(const PostedRecv& r) {
    auto in = in_.find(r.peer);
    if (in == in_.end() || !in->second.direct) return;
    InConn& c = in->second;
    if (AllocateBuffer(r.peer, &c) && c.got > 0) memcpy(c.dest, r.data, c.got);
  }

  void ShutdownPeerSockets() {
    listener_.Shutdown();
    for (auto& [peer, c] : in_) c.sock.Shutdown();
    for (auto& [peer, c] : out_) c.sock.Shutdown();
  }

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
  PostedRecv* recv_ = nullptr;  // the Recv in flight, for direct delivery
};

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

}  // namespace

xcclResult_t Bootstrap::CreateUniqueId(xcclUniqueId* id, const Params& params) {
  if (id == nullptr) return Fail(xcclInvalidArgument, "xcclGetUniqueId: null id");
  try {
    UniqueIdContents contents{};
    XCCL_TRY(RandomBytes(contents.secret, sizeof(contents.secret)));
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
    XCCL_TRY(
        StartRoot(std::move(listener), ToSecret(contents.secret), Deadline(params.timeout_ms)));
    EncodeUniqueId(contents, id);
    return xcclSuccess;
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "xcclGetUniqueId: %s", e.what());
  }
}

xcclResult_t Bootstrap::Init(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                             std::unique_ptr<Bootstrap>* out, const std::string& socket_ifname) {
  try {
    return InitImpl(id, rank, nranks, timeout_ms, socket_ifname, out);
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: %s", rank, e.what());
  }
}

}  // namespace xccl
