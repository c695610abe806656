#include "transport/net/proxy/proxy.h"

#include <pthread.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/net/proxy/watch_overlay.h"
#include "transport/window.h"

namespace xccl {

namespace {

constexpr uint32_t kTagIdentity = 3;
constexpr uint32_t kTagHeader = 1;
constexpr uint32_t kTagData = 2;
constexpr uint32_t kTagBeat = 4;
const uint64_t kIdentityMagic = 0x5949544e45444958ull;  // also the heartbeat's word

}  // namespace

xcclResult_t CheckWireOp(int peer, const NetOp& op, int signalled_slots, PlatformFailure* failure) {
  // The transport's own words (below kFirstOpSlot) are never raised from the wire.
  if (op.slot != ControlLayout::kNoSignal &&
      (op.slot < ControlLayout::kFirstOpSlot || op.slot >= signalled_slots))
    return SetFailure(failure, xcclRemoteError, peer, "rank %d sent an op for slot %d", peer,
                      op.slot);
  if (op.kind == NetOp::kSignal && op.bytes != 0)
    return SetFailure(failure, xcclRemoteError, peer, "rank %d sent a signal with %llu bytes", peer,
                      static_cast<unsigned long long>(op.bytes));
  return xcclSuccess;
}

Proxy::Proxy(const Topology& topology, NetLanding* landing, int64_t timeout_ms)
    : topology_(topology), landing_(landing), timeout_ms_(timeout_ms) {}

Proxy::~Proxy() {
  bool orderly = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    orderly = !stop_.load();  // not aborted
    stop_.store(true);
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!orderly) return;
  // The thread is gone. A link with ops still queued or in flight gets no kClose: its peer sees
  // a plain close, a failure, since what it may wait for never comes.
  std::vector<bool> healthy(links_.size(), false);
  for (size_t i = 0; i < links_.size(); ++i)
    healthy[i] = links_[i] && !links_[i]->failed && links_[i]->send.ready && !links_[i]->told &&
                 !links_[i]->sending && links_[i]->queue.empty();
  NetOp last;
  last.kind = NetOp::kClose;
  SendLastWords(last, std::move(healthy));
}

Proxy::Link* Proxy::LinkOf(int peer) {
  return peer >= 0 && peer < static_cast<int>(links_.size()) ? links_[peer].get() : nullptr;
}
const Proxy::Link* Proxy::LinkOf(int peer) const {
  return peer >= 0 && peer < static_cast<int>(links_.size()) ? links_[peer].get() : nullptr;
}

Proxy::Link* Proxy::LinkForLocked(int peer) {
  if (!links_[peer]) {
    links_[peer] = std::make_unique<Link>();
    links_[peer]->peer = peer;
    links_[peer]->last_beat = links_[peer]->last_heard = std::chrono::steady_clock::now();
    fresh_.push_back(links_[peer].get());
  }
  return links_[peer].get();
}

xcclResult_t Proxy::Connect(Bootstrap* bootstrap, std::unique_ptr<NetBackend> net,
                            std::unique_ptr<NetBackend> beats) {
  net_ = std::move(net);
  beats_ = std::move(beats);
  links_.resize(topology_.nranks);
  identity_ = Identity{kIdentityMagic, topology_.rank};
  XCCL_TRY(ListenAll(bootstrap, net_.get(), &net_listener_, &net_handles_));
  XCCL_TRY(ListenAll(bootstrap, beats_.get(), &beat_listener_, &beat_handles_));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int peer : WatchTargets(topology_)) LinkForLocked(peer)->watched = true;
  }
  thread_ = std::thread([this] { Run(); });
  // Named, so that a profiler or perf/proxy_cpu.sh tells its CPU time from the rank's.
  pthread_setname_np(thread_.native_handle(), "xccl-proxy");
  return xcclSuccess;
}

xcclResult_t Proxy::ListenAll(Bootstrap* bootstrap, NetBackend* net,
                              std::unique_ptr<NetListenComm>* listener,
                              std::vector<NetHandle>* handles) {
  // Every rank listens and publishes its handle, so that the exchange is one collective round.
  handles->assign(topology_.nranks, NetHandle{});
  const xcclResult_t listened = net->Listen(0, &(*handles)[topology_.rank], listener);
  XCCL_TRY(bootstrap->AllGather(handles->data(), sizeof(NetHandle)));
  return listened;
}

bool Proxy::Open(Link& link, Outbound& out, NetBackend* net, const NetHandle& handle, bool* moved) {
  if (out.ready) return true;
  // A refused connection is a peer whose listener is gone: dead, or closed in order while this
  // rank answered its link. Like a broken send it is reported after 200 ms, unless the peer's
  // own last words (kClose, kAbort) fail the link first.
  auto refused = [&] {
    out = Outbound{};
    if (&out == &link.beat_send) {
      link.beats_closed = true;  // the data link says whether the peer is gone
      return false;
    }
    link.send_broken = true;
    link.send_broken_at = std::chrono::steady_clock::now();
    link.send_error = "could not connect: " + ThreadLastError();
    return false;
  };
  if (!out.comm) {
    if (net->Connect(0, handle, &out.comm) != xcclSuccess || !out.comm) return refused();
    *moved = true;
  }
  if (out.said == nullptr) {
    bool ready = false;
    if (out.comm->Ready(&ready) != xcclSuccess ||
        (ready && out.comm->Isend(&identity_, sizeof(identity_), kTagIdentity, nullptr,
                                  &out.said) != xcclSuccess))
      return refused();
    if (out.said == nullptr) return true;
    *moved = true;
  }
  bool done = false;
  size_t bytes = 0;
  if (out.comm->Test(out.said, &done, &bytes) != xcclSuccess) return refused();
  out.ready = done;
  *moved |= done;
  return true;
}

bool Proxy::OpenLink(Link& link) {
  if (link.send_broken) return false;
  bool moved = false;
  if (!Open(link, link.send, net_.get(), net_handles_[link.peer], &moved)) return true;
  if (link.watched && !link.beats_closed)
    Open(link, link.beat_send, beats_.get(), beat_handles_[link.peer], &moved);
  return moved;
}

bool Proxy::AcceptIncoming() {
  bool moved = false;
  for (bool beats : {false, true}) {
    std::unique_ptr<NetRecvComm> comm;
    if ((beats ? beats_ : net_)->Accept((beats ? beat_listener_ : net_listener_).get(), &comm) !=
        xcclSuccess) {
      // Once: the thread asks again every pass, and a broken listener would fill the log.
      if (!accept_warned_)
        XCCL_WARN(kLogInit, "net: accepting a connection failed: %s", ThreadLastError().c_str());
      accept_warned_ = true;
      continue;
    }
    if (!comm) continue;
    unidentified_.push_back(std::make_unique<Unidentified>());
    unidentified_.back()->comm = std::move(comm);
    unidentified_.back()->beats = beats;
    moved = true;
  }
  for (size_t i = 0; i < unidentified_.size();) {
    Unidentified& u = *unidentified_[i];
    bool done = false, drop = false;
    size_t bytes = 0;
    if (u.request == nullptr)
      drop = u.comm->Irecv(&u.heard, sizeof(u.heard), kTagIdentity, nullptr, &u.request) !=
             xcclSuccess;
    if (!drop && u.request != nullptr) drop = u.comm->Test(u.request, &done, &bytes) != xcclSuccess;
    if (!drop && !done) {
      ++i;
      continue;
    }
    moved = true;
    const int from = static_cast<int>(u.heard.rank);
    const bool valid = !drop && u.heard.magic == kIdentityMagic && bytes == sizeof(u.heard) &&
                       from >= 0 && from < topology_.nranks &&
                       topology_.node_of_rank[from] != topology_.node_of_rank[topology_.rank];
    Link* link = nullptr;
    if (valid) {
      std::lock_guard<std::mutex> lock(mutex_);
      link = LinkForLocked(from);
    }
    if (link != nullptr && !(u.beats ? link->beat_recv : link->recv)) {
      // The peer linked to this rank: answer with a send comm (and heartbeats) of this rank's.
      if (u.beats) {
        link->beat_recv = std::move(u.comm);
        link->watched = true;
        link->last_heard = std::chrono::steady_clock::now();
      } else {
        link->recv = std::move(u.comm);
      }
    } else {
      XCCL_WARN(kLogInit,
                "net: dropped a connection that claimed to be rank %d (not a rank of another "
                "node, or linked twice)",
                from);
    }
    unidentified_.erase(unidentified_.begin() + i);
  }
  return moved;
}

void Proxy::Kick() {
  {
    std::lock_guard<std::mutex> lock(mutex_);  // so that Run cannot miss it between check and wait
    kicked_.store(true);
  }
  work_.notify_one();
}

void Proxy::Enqueue(int peer, const NetOp& op, const void* src) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Link* link = LinkForLocked(peer);  // the first op for a peer links it
    link->queue.push_back({op, src});
    ++link->queued;
  }
  Kick();
}

xcclResult_t Proxy::Flush(int peer, const Deadline& deadline, PlatformFailure* failure) {
  Kick();
  std::unique_lock<std::mutex> lock(mutex_);
  const Link* link = LinkOf(peer);
  if (link == nullptr) return xcclSuccess;  // never sent to
  const uint64_t target = link->queued;
  for (;;) {
    // Sent first: a peer that received everything may have closed since.
    if (link->sent >= target) return xcclSuccess;
    if (link->failed) {
      *failure = link->failure;
      return failure->result;
    }
    if (news_.load()) {  // this link's queue stopped when the news went out on it
      *failure = news_failure_;
      return failure->result;
    }
    if (deadline.Expired())
      return SetFailure(failure, xcclTimeout, peer,
                        "timed out sending to rank %d (host %s) over the network", peer,
                        topology_.ranks[peer].hostname);
    progress_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

void Proxy::NoteLanded(Link& link) {
  link.landed.fetch_add(1, std::memory_order_relaxed);
  link.last_landed.store(static_cast<int64_t>(link.incoming.slot) << 32 | link.incoming.epoch,
                         std::memory_order_relaxed);
}

std::string Proxy::Describe() const {
  std::string text;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& link : links_) {
    if (!link) continue;
    const int64_t last = link->last_landed.load(std::memory_order_relaxed);
    static const char* const kInNames[] = {"idle", "header", "destination", "data"};
    char line[300];
    snprintf(line, sizeof(line),
             "%srank %d: %llu ops queued, %llu sent%s, %llu landed (last: slot %d epoch %u), "
             "receive %s (%llu bytes), %llu bytes arrived%s",
             text.empty() ? "" : "; ", link->peer, static_cast<unsigned long long>(link->queued),
             static_cast<unsigned long long>(link->sent),
             link->sending.load() ? " (one sending)" : "",
             static_cast<unsigned long long>(link->landed.load(std::memory_order_relaxed)),
             last < 0 ? -1 : static_cast<int>(last >> 32), static_cast<uint32_t>(last),
             kInNames[static_cast<int>(link->in.load())],
             static_cast<unsigned long long>(link->incoming_shown.load()),
             static_cast<unsigned long long>(link->arrived.load()), link->failed ? " failed" : "");
    text += line;
  }
  return text;
}

bool Proxy::PeerFailed(int peer, PlatformFailure* failure) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // The first failure heard of names the root cause; a later link failure is often only a
  // peer that gave up because of it and closed.
  if (news_.load()) {
    *failure = news_failure_;
    return true;
  }
  const Link* link = LinkOf(peer);
  if (link == nullptr || !link->failed) return false;
  *failure = link->failure;  // an orderly close
  return true;
}

void Proxy::NoteNewsLocked(const PlatformFailure& failure) {
  if (news_.load()) return;
  news_failure_ = failure;
  news_op_ = NetOp{};
  news_op_.kind = NetOp::kAbort;
  news_op_.slot = failure.peer >= 0 ? failure.peer : topology_.rank;
  news_.store(true);
}

void Proxy::Abort(int failed_peer) {
  std::vector<bool> healthy(links_.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_.load()) return;  // aborted before
    for (size_t i = 0; i < links_.size(); ++i)
      healthy[i] = links_[i] && !links_[i]->failed && links_[i]->send.ready && !links_[i]->told;
    stop_.store(true);
  }
  work_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  // The thread is gone. Each healthy peer gets the cause behind whatever is still queued on
  // its connection, so that it names the rank that failed rather than this one.
  NetOp last;
  last.kind = NetOp::kAbort;
  last.slot = failed_peer;
  SendLastWords(last, std::move(healthy));
  for (auto& link : links_) {
    if (!link) continue;
    AbandonIncoming(*link);
    link->send = Outbound{};
    link->recv.reset();
    link->beat_send = Outbound{};
    link->beat_recv.reset();
  }
  unidentified_.clear();
  // Only now, with nothing left reading a caller's buffer, do waiters learn of the abort.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& link : links_) {
      if (!link || link->failed) continue;
      link->failed = true;
      SetFailure(&link->failure, xcclRemoteError, link->peer,
                 "communicator aborted while talking to rank %d", link->peer);
    }
  }
  progress_.notify_all();
}

void Proxy::SendLastWords(const NetOp& last, std::vector<bool> healthy) {
  std::vector<NetRequest*> requests(links_.size(), nullptr);
  const Deadline deadline(100);
  bool pending = true;
  while (pending && !deadline.Expired()) {
    pending = false;
    for (size_t i = 0; i < links_.size(); ++i) {
      if (!healthy[i]) continue;
      NetSendComm* send = links_[i]->send.comm.get();
      bool done = false;
      size_t bytes = 0;
      if ((requests[i] == nullptr &&
           (send->Isend(&last, sizeof(last), kTagHeader, nullptr, &requests[i]) != xcclSuccess ||
            requests[i] == nullptr)) ||
          send->Test(requests[i], &done, &bytes) != xcclSuccess || done) {
        healthy[i] = false;
        continue;
      }
      pending = true;
    }
    std::this_thread::yield();
  }
}

void Proxy::AbandonIncoming(Link& link) {
  if (link.in == Link::In::kData) landing_->Abandoned(link.peer, link.incoming);
  link.in = Link::In::kIdle;
}

void Proxy::FailLink(Link& link, xcclResult_t result, const std::string& what, int blamed,
                     bool orderly) {
  AbandonIncoming(link);  // no byte lands on a failed link any more
  bool first = false;
  PlatformFailure failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!link.failed) {
      link.failed = true;
      SetFailure(&link.failure, result, blamed >= 0 ? blamed : link.peer,
                 "rank %d (host %s) over the network: %s", link.peer,
                 topology_.ranks[link.peer].hostname, what.c_str());
      first = true;
      failure = link.failure;
      if (!orderly) NoteNewsLocked(failure);
    }
  }
  progress_.notify_all();
  if (first && !orderly) landing_->LinkFailed(link.peer, failure);  // outside the lock
}

bool Proxy::ProgressSend(Link& link) {
  if (link.send_broken) {
    if (std::chrono::steady_clock::now() - link.send_broken_at > std::chrono::milliseconds(200))
      FailLink(link, xcclRemoteError, link.send_error);
    return false;
  }
  if (!link.send.ready) return false;
  if (!link.sending) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (link.failed || link.told) return false;
    if (news_.load()) {
      // The news goes out as this link's last words, after the op on the wire, before the rest.
      link.current = {news_op_, nullptr};
      link.telling = true;
    } else {
      if (link.queue.empty()) return false;
      link.current = link.queue.front();
      link.queue.pop_front();
    }
    link.sending = true;
    link.header_request = link.data_request = nullptr;
    link.header_sent = false;
    link.data_sent = link.current.op.bytes == 0;
  }
  bool moved = false;
  // Posts the request if it is not yet, then tests it; false on a failure (recorded).
  auto step = [&](const void* data, size_t bytes, uint32_t tag, NetRequest** request, bool* sent) {
    if (*sent) return true;
    if (*request == nullptr) {
      if (link.send.comm->Isend(data, bytes, tag, nullptr, request) != xcclSuccess) return false;
      if (*request == nullptr) return true;
      moved = true;
    }
    size_t n = 0;
    if (link.send.comm->Test(*request, sent, &n) != xcclSuccess) return false;
    moved |= *sent;
    return true;
  };
  // The data is posted after its header, never before: the peer matches them in order.
  if (!step(&link.current.op, sizeof(NetOp), kTagHeader, &link.header_request, &link.header_sent) ||
      (link.header_request != nullptr && !step(link.current.src, link.current.op.bytes, kTagData,
                                               &link.data_request, &link.data_sent))) {
    // A peer that failed sends its cause, then closes: read that first (the receive side fails
    // the link in order), and fall back on this error only if nothing comes.
    link.send_broken = true;
    link.send_broken_at = std::chrono::steady_clock::now();
    link.send_error = ThreadLastError();
    return true;
  }
  if (link.header_sent && link.data_sent) {
    link.sending = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!link.telling) ++link.sent;
      link.told = link.telling;
      link.telling = false;
    }
    progress_.notify_all();
    return true;
  }
  return moved;
}

// A header in: an abort or a close ends the link; else the landing names where the bytes go
// (or not yet: asked again next pass), and their receive is posted.
bool Proxy::ProgressDestination(Link& link) {
  if (link.incoming.kind == NetOp::kAbort) {
    const int cause = link.incoming.slot;
    FailLink(link, xcclRemoteError, "it failed because of rank " + std::to_string(cause),
             cause >= 0 && cause < topology_.nranks ? cause : link.peer);
    return true;
  }
  if (link.incoming.kind == NetOp::kClose) {
    FailLink(link, xcclRemoteError, "it closed its communicator", -1, /*orderly=*/true);
    return true;
  }
  char* dst = nullptr;
  PlatformFailure refused;
  if (landing_->Destination(link.peer, link.incoming, &dst, &refused) != xcclSuccess) {
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!link.failed) {
        link.failed = true;
        link.failure = refused;
        first = true;
        NoteNewsLocked(refused);
      }
    }
    progress_.notify_all();
    if (first) landing_->LinkFailed(link.peer, refused);
    return true;
  }
  if (link.incoming.bytes == 0) {
    NoteLanded(link);
    landing_->Landed(link.peer, link.incoming);
    link.in = Link::In::kIdle;
    return true;
  }
  if (dst == nullptr) return false;  // not published yet
  // From here the landing holds what Destination took: it is given back on every way out.
  link.in = Link::In::kData;
  if (link.recv->Irecv(dst, link.incoming.bytes, kTagData, nullptr, &link.in_request) !=
      xcclSuccess) {
    FailLink(link, xcclRemoteError, ThreadLastError());
    return true;
  }
  if (link.in_request == nullptr) {  // no free slot: ask again next time
    landing_->Abandoned(link.peer, link.incoming);
    link.in = Link::In::kDestination;
    return false;
  }
  return true;
}

bool Proxy::ProgressRecv(Link& link) {
  if (!link.recv) return false;  // the peer has not linked to this rank (yet)
  bool done = false;
  size_t bytes = 0;
  switch (link.in.load()) {
    case Link::In::kIdle:
      if (link.recv->Irecv(&link.incoming, sizeof(NetOp), kTagHeader, nullptr, &link.in_request) !=
          xcclSuccess) {
        FailLink(link, xcclRemoteError, ThreadLastError());
        return true;
      }
      if (link.in_request == nullptr) return false;
      link.in = Link::In::kHeader;
      return true;
    case Link::In::kHeader:
      if (link.recv->Test(link.in_request, &done, &bytes) != xcclSuccess) {
        FailLink(link, xcclRemoteError, ThreadLastError());
        return true;
      }
      if (!done) return false;
      if (bytes != sizeof(NetOp)) {
        FailLink(link, xcclRemoteError, "a header of " + std::to_string(bytes) + " bytes");
        return true;
      }
      link.in = Link::In::kDestination;
      link.incoming_shown.store(link.incoming.bytes, std::memory_order_relaxed);
      return true;
    case Link::In::kDestination:
      return ProgressDestination(link);
    case Link::In::kData:
      if (link.recv->Test(link.in_request, &done, &bytes) != xcclSuccess) {
        FailLink(link, xcclRemoteError, ThreadLastError());
        return true;
      }
      if (!done) return false;
      NoteLanded(link);
      landing_->Landed(link.peer, link.incoming);
      link.in = Link::In::kIdle;
      return true;
  }
  return false;
}

// The heartbeats of a watched link: a beat out every kHeartbeatMs, a receive always posted.
// Anything from the peer (a beat, or data bytes) counts as heard. kSilenceMs of nothing fails
// the peer, unless its host acknowledged every beat this rank sent: on a loaded machine a live
// rank may be starved of CPU for longer, and silence alone is no death there; a cut path or a
// dead host acknowledges nothing.
bool Proxy::Beat(Link& link, std::chrono::steady_clock::time_point now) {
  if (!link.watched || link.beats_closed) return false;
  bool moved = false;
  bool done = false;
  size_t bytes = 0;
  // The peer closing its heartbeats is no failure by itself: a peer that is done closes them
  // while its last data may still be on the way; the data stream reports a close in order.
  auto closed = [&] {
    link.beats_closed = true;
    return true;
  };
  NetSendComm* out = link.beat_send.ready ? link.beat_send.comm.get() : nullptr;
  if (out != nullptr && link.beat_out == nullptr &&
      now - link.last_beat >= std::chrono::milliseconds(kHeartbeatMs)) {
    if (out->Isend(&kIdentityMagic, sizeof(kIdentityMagic), kTagBeat, nullptr, &link.beat_out) !=
        xcclSuccess)
      return closed();
    if (link.beat_out != nullptr) link.last_beat = now;
  }
  if (out != nullptr && link.beat_out != nullptr) {
    if (out->Test(link.beat_out, &done, &bytes) != xcclSuccess) return closed();
    if (done) link.beat_out = nullptr;
  }
  if (link.beat_recv) {
    if (link.beat_in == nullptr &&
        link.beat_recv->Irecv(&link.beat_word, sizeof(link.beat_word), kTagBeat, nullptr,
                              &link.beat_in) != xcclSuccess)
      return closed();
    if (link.beat_in != nullptr) {
      if (link.beat_recv->Test(link.beat_in, &done, &bytes) != xcclSuccess) return closed();
      if (done) {
        link.beat_in = nullptr;
        link.last_heard = now;
        moved = true;
      }
    }
  }
  const uint64_t arrived = link.recv ? link.recv->bytes_arrived() : 0;
  if (arrived != link.arrived) {
    link.arrived = arrived;
    link.last_heard = now;
  }
  if (now - link.last_heard > std::chrono::milliseconds(kSilenceMs)) {
    // Every beat acknowledged by the peer's host: the path and the host are alive, the process
    // is only slow (a loaded machine can starve it for longer): not dead.
    if (out != nullptr && link.beat_out == nullptr && out->unacknowledged_bytes() == 0) {
      link.last_heard = now;
      return moved;
    }
    FailLink(link, xcclRemoteError,
             "nothing heard for " + std::to_string(kSilenceMs) +
                 " ms, heartbeats included (the link is cut, or the rank's process hangs)");
    return true;
  }
  return moved;
}

// Spins while there is traffic; idle, it yields for 2 ms, then sleeps in growing steps up to
// kMaxNapUs. A quiet communicator so costs almost no CPU; a call of this rank (an op queued, a
// wait on a remote peer, a flush) kicks it awake at once, so only data arriving while this rank
// makes no call waits for the nap (and then for this rank's call anyway). A trigger feed keeps it
// polling while triggers it expects are due, and caps the nap for those no call announces.
void Proxy::Run() {
  auto last_moved = std::chrono::steady_clock::now();
  auto nap = std::chrono::microseconds(20);
  while (!stop_.load()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_.insert(active_.end(), fresh_.begin(), fresh_.end());
      fresh_.clear();
    }
    bool moved = feed_ != nullptr && feed_->Drain(*this);
    moved |= AcceptIncoming();
    for (Link* link : active_) {
      bool failed;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failed = link->failed;
      }
      if (failed) continue;
      moved |= OpenLink(*link);
      moved |= ProgressSend(*link);
      moved |= ProgressRecv(*link);
    }
    const auto now = std::chrono::steady_clock::now();
    for (Link* link : active_) {
      bool failed;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failed = link->failed;
      }
      if (!failed) Beat(*link, now);
    }
    // A transfer in flight is work even while a Test moves no whole message: bytes are on
    // the wire, and a nap here would stall every large op (a nap per piece). So is a link or
    // an accepted comm still introducing itself.
    bool in_flight = !unidentified_.empty();
    for (Link* link : active_) {
      const bool connecting = (link->send.comm && !link->send.ready) ||
                              (link->beat_send.comm && !link->beat_send.ready);
      in_flight |= link->sending || link->in == Link::In::kData || (!link->failed && connecting);
    }
    if (feed_ != nullptr) in_flight |= feed_->Expecting();
    if (moved || in_flight || kicked_.exchange(false)) {
      last_moved = now;
      nap = std::chrono::microseconds(20);
      if (!moved) std::this_thread::yield();
      continue;
    }
    if (now - last_moved < std::chrono::milliseconds(2)) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (!kicked_.load() && fresh_.empty()) work_.wait_for(lock, nap);
    const int max_nap_us = feed_ != nullptr ? feed_->MaxNapUs() : kMaxNapUs;
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::microseconds(max_nap_us));
  }
}

}  // namespace xccl
