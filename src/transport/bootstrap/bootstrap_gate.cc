// The listener gate: FrameReader, Gate and PollOnce, shared by the root, the ring's join and
// the point-to-point listener.
#include "transport/bootstrap/bootstrap_gate.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/logging.h"

namespace xccl {
namespace bootstrap_internal {

namespace {

// Past this many unauthenticated connections the oldest is dropped: a flood cannot grow the
// root's memory or descriptors without bound.
constexpr size_t kMaxPending = 1024;
// ... once it has waited this long; younger, accepting pauses for kFullPauseMs instead.
constexpr int64_t kEvictAfterMs = 1000;
constexpr int64_t kFullPauseMs = 5;
// Listener pause after accept() fails for lack of descriptors (the listener stays readable).
constexpr int64_t kAcceptPauseMs = 100;

}  // namespace

FrameReader::State FrameReader::Read(Socket& sock, std::string* why) {
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

void Gate::AddPollFds(std::vector<pollfd>* fds, Deadline* wake) {
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

void Gate::Service(const std::vector<pollfd>& fds, std::vector<Arrival>* ready) {
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
      Refuse(p.peer, "sent no complete message within " + std::to_string(kConnDeadlineMs) + " ms");
      continue;
    }
    keep.push_back(std::move(p));
  }
  pending_ = std::move(keep);
  if (accept_ready) AcceptAll();
}

void Gate::Refuse(const std::string& peer, const std::string& why) {
  uint64_t dropped = 0;
  if (!refusals_.Admit(&dropped)) return;
  if (dropped == 0) {
    XCCL_WARN(kLogBootstrap, "bootstrap %s: refused connection from %s: %s", owner_.c_str(),
              peer.c_str(), why.c_str());
  } else {
    XCCL_WARN(kLogBootstrap,
              "bootstrap %s: refused connection from %s: %s (and %llu more refused since the "
              "last such line)",
              owner_.c_str(), peer.c_str(), why.c_str(), static_cast<unsigned long long>(dropped));
  }
}

Gate::~Gate() {
  const uint64_t left = refusals_.Remaining();
  if (left > 0)
    XCCL_WARN(kLogBootstrap, "bootstrap %s: %llu more connections refused, not logged one by one",
              owner_.c_str(), static_cast<unsigned long long>(left));
}

void Gate::AcceptAll() {
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

xcclResult_t PollOnce(std::vector<pollfd>* fds, const Deadline& wake) {
  int n = poll(fds->data(), fds->size(), wake.PollTimeoutMs());
  if (n < 0 && errno != EINTR) return Fail(xcclSystemError, "bootstrap: poll: %s", strerror(errno));
  if (n < 0) {
    for (pollfd& f : *fds) f.revents = 0;
  }
  return xcclSuccess;
}

}  // namespace bootstrap_internal
}  // namespace xccl
