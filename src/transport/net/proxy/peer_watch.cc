#include "transport/net/proxy/peer_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/deadline.h"
#include "base/error.h"
#include "base/logging.h"
#include "base/process_alive.h"
#include "base/repeat_limiter.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"

namespace xccl {

namespace {

constexpr uint32_t kHelloMagic = 0x78776174;  // "xwat"

// A rank's listener, published over the bootstrap; key 0: it does not listen.
struct ListenerName {
  uint64_t token;
  uint64_t key;
};

// What a connecting rank says first: its rank, and the listener's key, which only a rank of
// this communicator learned (over the bootstrap).
struct Hello {
  uint32_t magic;
  int32_t rank;
  uint64_t key;
};

// What a rank says last: kBye, or kAbort and the rank it saw fail.
struct Word {
  uint32_t kind;
  int32_t blamed;
};
static_assert(sizeof(Word) == 8, "the partial buffer holds one word");

sockaddr_storage AddressOf(const ListenerName& name) {
  char text[64];
  snprintf(text, sizeof(text), "xccl-watch-%016llx-%016llx",
           static_cast<unsigned long long>(name.token), static_cast<unsigned long long>(name.key));
  return AbstractUnixAddress(text);
}

int OpenPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  if (pid <= 0) return -1;
  const long fd = syscall(SYS_pidfd_open, pid, 0);
  return fd >= 0 ? static_cast<int>(fd) : -1;
#else
  (void)pid;
  return -1;
#endif
}

// The peer's pid as this process's namespace sees it; 0 where it cannot.
pid_t PeerPid(int socket) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
  return cred.pid;
}

RepeatLimiter& RefusedHellos() {
  static RepeatLimiter* limiter = new RepeatLimiter();  // outlives exit
  return *limiter;
}

}  // namespace

xcclResult_t PeerWatch::Start(Bootstrap* bootstrap, const Topology& topology, int64_t timeout_ms,
                              OnLoss on_loss) {
  topology_ = topology;
  on_loss_ = std::move(on_loss);
  for (int r : topology_.local_ranks) {
    if (topology_.SameProcess(r)) continue;
    peers_.emplace_back();
    peers_.back().rank = r;
  }
  const xcclResult_t connected = Connect(bootstrap, timeout_ms);
  int failed = -1;
  XCCL_TRY(ExchangeVerdicts(bootstrap, connected == xcclSuccess, &failed));
  XCCL_TRY(connected);
  if (failed >= 0) return Fail(xcclRemoteError, "rank %d could not set up its peer watch", failed);
  if (peers_.empty()) return xcclSuccess;
  for (Peer& peer : peers_) {
    peer.pid = PeerPid(peer.socket.fd());
    peer.pidfd = OpenPidfd(peer.pid);
  }
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_ < 0) return Fail(xcclSystemError, "eventfd for the peer watch: %s", strerror(errno));
  thread_ = std::thread(&PeerWatch::Run, this);
  return xcclSuccess;
}

// The higher rank of each pair listens, the lower one connects: every listener exists before
// the names are gathered, so the connects (into the backlog) go first and the accepts after
// them cannot deadlock.
xcclResult_t PeerWatch::Connect(Bootstrap* bootstrap, int64_t timeout_ms) {
  const int rank = topology_.rank;
  const bool listens =
      std::any_of(peers_.begin(), peers_.end(), [rank](const Peer& p) { return p.rank < rank; });
  std::vector<ListenerName> names(topology_.nranks, ListenerName{0, 0});
  Socket listener;
  xcclResult_t mine = xcclSuccess;
  if (listens) {
    std::random_device entropy;
    names[rank] = {ProcessToken(), (static_cast<uint64_t>(entropy()) << 32) | entropy() | 1u};
    const IoStatus st = Socket::TryListen(AddressOf(names[rank]), &listener);
    if (!st.ok()) {
      mine = Fail(xcclSystemError, "the peer watch cannot listen: %s", st.Describe().c_str());
      names[rank].key = 0;
    }
  }
  XCCL_TRY(bootstrap->AllGather(names.data(), sizeof(ListenerName)));
  if (mine != xcclSuccess) return mine;
  const Deadline deadline(timeout_ms);
  for (Peer& peer : peers_) {
    if (peer.rank < rank) continue;
    const ListenerName& name = names[peer.rank];
    if (name.key == 0) return Fail(xcclRemoteError, "rank %d has no peer watch", peer.rank);
    const Hello hello{kHelloMagic, rank, name.key};
    IoStatus st = Socket::Connect(AddressOf(name), deadline, &peer.socket);
    if (st.ok()) st = peer.socket.SendAll(&hello, sizeof(hello), deadline);
    if (!st.ok())
      return Fail(xcclSystemError, "the peer watch cannot reach rank %d: %s", peer.rank,
                  st.Describe().c_str());
  }
  for (;;) {
    auto waiting = std::find_if(peers_.begin(), peers_.end(), [rank](const Peer& p) {
      return p.rank < rank && !p.socket.valid();
    });
    if (waiting == peers_.end()) return xcclSuccess;
    Socket s;
    IoStatus st = listener.Accept(deadline, &s, nullptr);
    if (!st.ok())
      return Fail(st.code == IoStatus::kTimeout ? xcclTimeout : xcclSystemError,
                  "the peer watch waited for rank %d to connect: %s", waiting->rank,
                  st.Describe().c_str());
    Hello hello{};
    st = s.RecvAll(&hello, sizeof(hello), Deadline(std::min<int64_t>(timeout_ms, 2000)));
    auto from = std::find_if(peers_.begin(), peers_.end(), [&hello, rank](const Peer& p) {
      return p.rank == hello.rank && p.rank < rank && !p.socket.valid();
    });
    if (st.ok() && hello.magic == kHelloMagic && hello.key == names[rank].key &&
        from != peers_.end()) {
      from->socket = std::move(s);
      continue;
    }
    uint64_t dropped = 0;
    if (RefusedHellos().Admit(&dropped))
      XCCL_WARN(kLogPlatform, "peer watch of rank %d: refused a connection (%s)%s", rank,
                st.ok() ? "not a rank of this communicator" : st.Describe().c_str(),
                dropped > 0 ? (", " + std::to_string(dropped) + " more not shown").c_str() : "");
  }
}

void PeerWatch::Run() {
  std::vector<pollfd> fds;
  std::vector<Peer*> owner;  // fds[i]'s peer (nullptr: the wake)
  for (;;) {
    fds.assign(1, pollfd{wake_, POLLIN, 0});
    owner.assign(1, nullptr);
    bool slow = false;  // a peer without a pidfd: /proc is looked at every 100 ms
    for (Peer& peer : peers_) {
      if (peer.done) continue;
      fds.push_back(pollfd{peer.socket.fd(), POLLIN | POLLRDHUP, 0});
      owner.push_back(&peer);
      if (peer.pidfd >= 0) {
        fds.push_back(pollfd{peer.pidfd, POLLIN, 0});
        owner.push_back(&peer);
      } else {
        slow = slow || peer.pid > 0;
      }
    }
    const int ready = poll(fds.data(), fds.size(), slow ? 100 : -1);  // the wake ends it
    if (ready < 0 && errno != EINTR) {
      XCCL_WARN(kLogPlatform, "peer watch: poll failed (%s); peers now found at the deadline",
                strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      Peer& peer = *owner[i];
      if (peer.done) continue;
      const bool process_gone = fds[i].fd == peer.pidfd && fds[i].revents != 0;
      const bool socket_ended = fds[i].fd == peer.socket.fd() && fds[i].revents != 0 && Drain(peer);
      if (process_gone || socket_ended) Ended(peer);
    }
    for (Peer& peer : peers_)
      if (!peer.done && peer.pidfd < 0 && peer.pid > 0 && !ProcessAlive(peer.pid)) Ended(peer);
  }
}

bool PeerWatch::Drain(Peer& peer) {
  for (;;) {
    size_t got = 0;
    const IoStatus st = peer.socket.RecvSome(peer.partial + peer.partial_bytes,
                                             sizeof(peer.partial) - peer.partial_bytes, &got);
    if (!st.ok()) return true;
    if (got == 0) return false;
    peer.partial_bytes += got;
    if (peer.partial_bytes < sizeof(Word)) continue;
    Word word;
    memcpy(&word, peer.partial, sizeof(word));
    peer.partial_bytes = 0;
    if (word.kind == kBye) {
      peer.left = true;
    } else if (word.kind == kAbort && !peer.done) {
      PlatformFailure failure;
      const bool known = word.blamed >= 0 && word.blamed < topology_.nranks;
      if (known)
        SetFailure(&failure, xcclRemoteError, word.blamed,
                   "rank %d aborted its communicator after rank %d failed", peer.rank, word.blamed);
      else
        SetFailure(&failure, xcclRemoteError, peer.rank, "rank %d aborted its communicator",
                   peer.rank);
      Lose(peer, failure);
    }
  }
}

// The connection closed or the process exited: whatever it said before is in the socket.
void PeerWatch::Ended(Peer& peer) {
  (void)Drain(peer);
  if (peer.done) return;
  if (peer.left) {
    peer.done = true;
    return;
  }
  const RankInfo& info = topology_.ranks[peer.rank];
  PlatformFailure failure;
  SetFailure(&failure, xcclRemoteError, peer.rank, "rank %d (pid %d on %s) died", peer.rank,
             static_cast<int>(info.pid), info.hostname);
  Lose(peer, failure);
}

void PeerWatch::Lose(Peer& peer, const PlatformFailure& failure) {
  peer.done = true;
  XCCL_WARN(kLogPlatform, "rank %d: %s", topology_.rank, failure.message.c_str());
  if (on_loss_) on_loss_(peer.rank, failure);
}

void PeerWatch::Stop(WordKind last, int blamed) {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
    thread_.join();
  }
  const Word word{last, blamed};
  for (Peer& peer : peers_) {
    size_t sent = 0;
    // Eight bytes into a connection nobody else writes: the socket buffer takes them at once.
    if (peer.socket.valid() && !peer.done) (void)peer.socket.SendSome(&word, sizeof(word), &sent);
    peer.socket.Close();
    if (peer.pidfd >= 0) close(peer.pidfd);
    peer.pidfd = -1;
  }
  peers_.clear();
  if (wake_ >= 0) close(wake_);
  wake_ = -1;
}

}  // namespace xccl
