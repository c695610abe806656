// The rendezvous root: takes every rank's hello, then tells each the address of rank+1 (or
// every rank why the rendezvous failed). Serves one rendezvous in a detached thread.
#include "transport/bootstrap/bootstrap_root.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/bootstrap_gate.h"
#include "transport/bootstrap/bootstrap_wire.h"

namespace xccl {
namespace bootstrap_internal {

namespace {

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

}  // namespace

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

}  // namespace bootstrap_internal
}  // namespace xccl
