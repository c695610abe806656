#include "transport/shm/shm_transport.h"

#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "base/logging.h"
#include "base/process_alive.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"
#include "transport/shm/peer_copy.h"
#include "transport/window.h"

namespace xccl {

namespace {

// Known bytes at a known address of every process, read by peers once to prove that
// cross-process copies work before the first collective depends on them.
struct CopyProbe {
  uint64_t address;
  uint8_t bytes[16];
};
uint8_t g_probe_bytes[16];

constexpr size_t kMaxInboxBytes = size_t(4) << 20;
constexpr size_t kAcrossNodesPieceBytes = size_t(1) << 20;
constexpr size_t kAcrossNodesNodeBytes = size_t(32) << 20;

// A 64-bit value in two 32-bit slots (lo at `lo`, hi at lo + 1), written before the slot that
// publishes it and read after that slot was seen.
void StoreWord64(uint32_t* slots, int lo, uint64_t value) {
  __atomic_store_n(&slots[lo], static_cast<uint32_t>(value), __ATOMIC_RELAXED);
  __atomic_store_n(&slots[lo + 1], static_cast<uint32_t>(value >> 32), __ATOMIC_RELAXED);
}
uint64_t LoadWord64(const uint32_t* slots, int lo) {
  return uint64_t(SignalLoad(&slots[lo + 1])) << 32 | SignalLoad(&slots[lo]);
}

// A receive buffer as its owner published it in its window (read after kReadyEpoch was seen).
struct PublishedBuffer {
  uint32_t first, last;  // the epochs of the operation's puts
  uint64_t address, size, block, chunk;
  int block_signal;  // ControlLayout::kRecvBlockSignal
  // The block a put raising `slot` must stay in, or -1 (a slot that names no block).
  int BlockOf(int slot, int nranks) const {
    if (block_signal < 0 || slot < block_signal || slot >= block_signal + nranks) return -1;
    return slot - block_signal;
  }
};

PublishedBuffer ReadPublished(const uint32_t* slots, uint32_t last) {
  PublishedBuffer published;
  published.last = last;
  published.first = SignalLoad(&slots[ControlLayout::kReadyFirst]);
  published.address = LoadWord64(slots, ControlLayout::kRecvAddrLo);
  published.size = LoadWord64(slots, ControlLayout::kRecvBytesLo);
  published.block = LoadWord64(slots, ControlLayout::kRecvBlockLo);
  published.chunk = SignalLoad(&slots[ControlLayout::kRecvChunk]);
  published.block_signal =
      static_cast<int32_t>(SignalLoad(&slots[ControlLayout::kRecvBlockSignal]));
  return published;
}

// DirectPuts::PublishRecvRange's rule for one put of epoch `epoch` (within first..last);
// `source`: the block the put's flag names (PublishedBuffer::BlockOf; -1: none), which it must stay
// in, so that ranks that passed different counts are refused at their first piece.
bool PutFits(const PublishedBuffer& published, uint32_t epoch, int source, uint64_t offset,
             uint64_t bytes) {
  if (published.address == 0 || offset > published.size || bytes > published.size - offset)
    return false;
  if (published.block == 0) return true;
  const uint64_t block_start =
      source >= 0 ? source * published.block : offset - offset % published.block;
  if (offset < block_start || offset - block_start >= published.block) return false;
  const uint64_t in_block = offset - block_start;
  if (published.chunk == 0) return in_block == 0 && bytes == published.block;
  const uint64_t piece = epoch - published.first;
  return in_block % published.chunk == 0 &&
         in_block + bytes == std::min((piece + 1) * published.chunk, published.block);
}

// A put that PutFits refuses: the ranks passed different counts.
xcclResult_t PutMismatch(const PublishedBuffer& published, int peer, int putter, uint64_t offset,
                         uint64_t bytes, PlatformFailure* failure) {
  if (published.address == 0)
    return SetFailure(failure, xcclInvalidUsage, peer,
                      "rank %d gathers blocks of %llu bytes through its inbox where rank %d puts "
                      "%llu bytes at offset %llu: the ranks passed different counts",
                      peer, static_cast<unsigned long long>(published.block), putter,
                      static_cast<unsigned long long>(bytes),
                      static_cast<unsigned long long>(offset));
  return SetFailure(failure, xcclInvalidUsage, peer,
                    "rank %d's receive buffer holds %llu bytes in blocks of %llu (pieces of %llu) "
                    "where rank %d puts %llu bytes at offset %llu: the ranks passed different "
                    "counts",
                    peer, static_cast<unsigned long long>(published.size),
                    static_cast<unsigned long long>(published.block),
                    static_cast<unsigned long long>(published.chunk), putter,
                    static_cast<unsigned long long>(bytes),
                    static_cast<unsigned long long>(offset));
}

// Polling before sleeping pays only while every rank can hold a core (its queues mostly sleep in
// copies or futexes). On an oversubscribed machine a spinning waiter steals the core its peer
// needs, so it yields instead: the peer usually waits for exactly that core.
WaitPolicy ChooseWaitPolicy(const Params& params, int local_ranks) {
  const bool oversubscribed = sysconf(_SC_NPROCESSORS_ONLN) < local_ranks;
  WaitPolicy policy;
  policy.spins = params.spin_count >= 0 ? params.spin_count : oversubscribed ? 0 : 2000;
  policy.yields = params.yield_count >= 0 ? params.yield_count : oversubscribed ? 100 : 0;
  return policy;
}

}  // namespace

// ---- ShmConnection ----

void ShmConnection::Put(uint32_t epoch, void* /*dst: published per operation*/, size_t dst_offset,
                        const void* src, size_t bytes, int signal_slot) {
  ShmTransport* transport = transport_;
  const int to = peer();
  queue_->Enqueue([=](PlatformFailure* failure) {
    return transport->CopyToPeer(to, epoch, src, dst_offset, bytes, signal_slot, failure);
  });
}

void ShmConnection::PutToRegion(uint32_t epoch, size_t region_offset, const void* src, size_t bytes,
                                int signal_slot) {
  const size_t region = transport_->region_bytes();
  if (bytes > region || region_offset > region - bytes) {
    const int to = peer();
    queue_->Enqueue([=](PlatformFailure* failure) {
      return SetFailure(failure, xcclInternalError, to,
                        "a put of %zu bytes at %zu into rank %d's region of %zu bytes", bytes,
                        region_offset, to, region);
    });
    return;
  }
  memcpy(transport_->windows_.data(peer()) + region_offset, src, bytes);
  if (signal_slot == ControlLayout::kNoSignal) return;
  // Before the signal, which orders it for the peer (a region is at most kMaxInboxBytes: one
  // word holds the end).
  __atomic_store_n(&transport_->windows_.slots(peer())[transport_->PutEndWord(signal_slot, epoch)],
                   static_cast<uint32_t>(region_offset % transport_->slice_bytes() + bytes),
                   __ATOMIC_RELEASE);
  Signal(signal_slot, epoch);
}

void ShmConnection::Signal(int slot, uint32_t epoch) {
  transport_->SignalPeer(peer(), slot, epoch);
}

xcclResult_t ShmConnection::Flush(const Deadline& deadline, PlatformFailure* failure) {
  return queue_->Drain(deadline, failure);
}

// ---- ShmTransport ----

ShmTransport::ShmTransport(const Topology& topology, const Params& params,
                           const WindowGeometry& geometry, int64_t timeout_ms)
    : topology_(topology), params_(params), geometry_(geometry), timeout_ms_(timeout_ms) {}

xcclResult_t ShmTransport::Init(Bootstrap* bootstrap) {
  const int nranks = topology_.nranks;
  XCCL_TRY(CheckSlotCounts(geometry_));
  RemoveStaleShmObjects();
  // Two eager blocks per slice; the whole region stays within kMaxInboxBytes so that eight ranks
  // fit a container's default 64 MiB /dev/shm with room to spare. Across nodes every region step
  // waits a network round trip, so where XCCL_EAGER_BYTES keeps its default the pieces grow up
  // to kAcrossNodesPieceBytes, while this node's regions stay within kAcrossNodesNodeBytes (the
  // eager all_gather, which they also size, runs on one node only; docs/PERF.md has the step).
  const size_t slices = 2 * static_cast<size_t>(nranks);
  size_t wanted = static_cast<size_t>(params_.eager_bytes);
  if (topology_.node_count > 1 && params_.eager_bytes == Params().eager_bytes) {
    const size_t node_share = kAcrossNodesNodeBytes / topology_.local_ranks.size() / slices;
    wanted = std::max(wanted, std::min(kAcrossNodesPieceBytes, node_share));
  }
  eager_limit_ = std::min(wanted, kMaxInboxBytes / slices / 64 * 64);
  wait_policy_ = ChooseWaitPolicy(params_, static_cast<int>(topology_.local_ranks.size()));
  // The ops' slots, then the region puts' sizes (PutEndWord); the region after them.
  XCCL_TRY(windows_.Create(bootstrap, topology_.local_ranks,
                           geometry_.slot_count + 2 * geometry_.signalled_slots, region_bytes(),
                           "XCCL_EAGER_BYTES", &InitSlots, this));
  XCCL_TRY(ProbePeers(bootstrap));
  connections_.resize(nranks);
  const int local_peers = static_cast<int>(topology_.local_ranks.size()) - 1;
  const int queue_count = std::min(local_peers, kMaxDmaQueues);
  for (int q = 0; q < queue_count; ++q) {
    try {
      queues_.push_back(std::make_unique<DmaQueue>("xccl-q" + std::to_string(topology_.rank) + "." +
                                                   std::to_string(q)));
    } catch (const std::system_error& e) {
      return Fail(xcclSystemError,
                  "host platform: cannot start DMA queue thread %d of rank %d (%d per rank): %s", q,
                  topology_.rank, queue_count, e.what());
    }
  }
  int next_queue = 0;
  for (int peer : topology_.local_ranks) {
    if (peer == topology_.rank) continue;
    DmaQueue* queue = queues_[next_queue++ % queue_count].get();
    connections_[peer] = std::make_unique<ShmConnection>(
        this, peer, ChooseTransport(topology_, peer, /*device_memory=*/false), queue);
  }
  LogTransports(topology_, /*device_memory=*/false);
  return xcclSuccess;
}

void ShmTransport::PublishRecvRange(uint32_t first, uint32_t last, void* recv, size_t bytes,
                                    size_t block, size_t chunk, int block_signal) {
  uint32_t* mine = windows_.slots(topology_.rank);
  __atomic_store_n(&mine[ControlLayout::kRecvBlockSignal], static_cast<uint32_t>(block_signal),
                   __ATOMIC_RELAXED);
  StoreWord64(mine, ControlLayout::kRecvAddrLo, reinterpret_cast<uintptr_t>(recv));
  StoreWord64(mine, ControlLayout::kRecvBytesLo, bytes);
  StoreWord64(mine, ControlLayout::kRecvBlockLo, block);
  __atomic_store_n(&mine[ControlLayout::kRecvChunk], static_cast<uint32_t>(chunk),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&mine[ControlLayout::kReadyFirst], first, __ATOMIC_RELAXED);
  SignalStore(&mine[ControlLayout::kReadyEpoch], &mine[ControlLayout::kSleepers], last);
}

void ShmTransport::CloseRecvBuffer(uint32_t epoch, const Deadline& deadline) {
  uint32_t* mine = windows_.slots(topology_.rank);
  __atomic_store_n(&mine[ControlLayout::kRecvClosed], epoch, __ATOMIC_SEQ_CST);
  // Copies already running end within one piece (they also stop at the failure this rank
  // announced). A writer that died mid-copy never leaves: once a peer process of this node is
  // seen dead, the live writers get a grace of kDeadWriterGraceMs, and its count is left behind.
  constexpr int64_t kDeadWriterGraceMs = 100, kLookIntervalMs = 2;
  Deadline grace = Deadline::Never(), next_look(kLookIntervalMs);
  while (__atomic_load_n(&mine[ControlLayout::kRecvWriters], __ATOMIC_SEQ_CST) != 0 &&
         !deadline.Expired() && !grace.Expired()) {
    if (grace.end() == Deadline::Never().end() && next_look.Expired()) {
      if (AnyPeerProcessDied()) grace = Deadline(kDeadWriterGraceMs);
      next_look = Deadline(kLookIntervalMs);
    }
    sched_yield();
  }
}

bool ShmTransport::AnyPeerProcessDied() const {
  for (int r : topology_.local_ranks)
    if (!topology_.SameProcess(r) && !ProcessAlive(topology_.ranks[r].pid)) return true;
  return false;
}

xcclResult_t ShmTransport::PutNow(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                                  size_t bytes, int signal_slot, PlatformFailure* failure) {
  if (IsRemote(peer))
    return SetFailure(failure, xcclInternalError, peer,
                      "a direct put to rank %d of another node through the shm transport", peer);
  return CopyToPeer(peer, epoch, src, dst_offset, bytes, signal_slot, failure);
}

xcclResult_t ShmTransport::NetPutDestination(int peer, const NetOp& op, char** dst,
                                             PlatformFailure* failure) {
  *dst = nullptr;
  uint32_t* mine = windows_.slots(topology_.rank);
  const uint32_t ready = SignalLoad(&mine[ControlLayout::kReadyEpoch]);
  if (static_cast<int32_t>(op.epoch - ready) > 0) return xcclSuccess;  // not published yet
  const PublishedBuffer published = ReadPublished(mine, ready);
  if (static_cast<int32_t>(op.epoch - published.first) < 0)
    return SetFailure(failure, xcclInvalidUsage, peer,
                      "rank %d put into operation %u after this rank moved on to %u", peer,
                      op.epoch, published.first);
  if (!PutFits(published, op.epoch, published.BlockOf(op.slot, topology_.nranks), op.offset,
               op.bytes))
    return PutMismatch(published, topology_.rank, peer, op.offset, op.bytes, failure);
  if (__atomic_load_n(&mine[ControlLayout::kRecvClosed], __ATOMIC_SEQ_CST) == ready)
    return SetFailure(failure, xcclRemoteError, peer,
                      "this rank gave up operation %u before rank %d's put", ready, peer);
  // A writer until NetPutEnded, as a shm put is (CloseRecvBuffer waits for writers).
  __atomic_fetch_add(&mine[ControlLayout::kRecvWriters], 1, __ATOMIC_SEQ_CST);
  *dst = reinterpret_cast<char*>(static_cast<uintptr_t>(published.address)) + op.offset;
  return xcclSuccess;
}

void ShmTransport::NetPutEnded(int /*peer*/, const NetOp& /*op*/) {
  __atomic_fetch_sub(&windows_.slots(topology_.rank)[ControlLayout::kRecvWriters], 1,
                     __ATOMIC_SEQ_CST);
}

void ShmTransport::NetRaise(int /*peer*/, const NetOp& op) {
  uint32_t* mine = windows_.slots(topology_.rank);
  if (op.slot == ControlLayout::kNoSignal) return;
  if (op.kind == NetOp::kRegion)
    __atomic_store_n(&mine[PutEndWord(op.slot, op.epoch)],
                     static_cast<uint32_t>(op.offset + op.bytes), __ATOMIC_RELEASE);
  SignalStore(&mine[op.slot], &mine[ControlLayout::kSleepers], op.epoch);
}

bool ShmTransport::PutEnd(int slot, uint32_t epoch, size_t* end) const {
  if (slot < 0 || slot >= geometry_.signalled_slots) return false;
  *end =
      __atomic_load_n(&windows_.slots(topology_.rank)[PutEndWord(slot, epoch)], __ATOMIC_ACQUIRE);
  return true;
}

xcclResult_t ShmTransport::Flush(const Deadline& deadline, PlatformFailure* failure) {
  return FlushEach(connections_, deadline, failure);
}

xcclResult_t ShmTransport::WaitSlotsRaisedBy(int first_slot, uint32_t epoch,
                                             const std::vector<int>& raiser, const char* what,
                                             const Deadline& deadline, xcclStream_t stream,
                                             PlatformFailure* failure) {
  for (int r = 0; r < topology_.nranks; ++r)
    if (r != topology_.rank && raiser[r] != kUnwatched)
      XCCL_TRY(WaitSlot(first_slot + r, epoch, raiser[r], what, deadline, stream, failure));
  return xcclSuccess;
}

xcclResult_t ShmTransport::WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                                    const Deadline& deadline, xcclStream_t /*stream*/,
                                    PlatformFailure* failure) {
  uint32_t* mine = windows_.slots(topology_.rank);
  if (remote_ != nullptr && IsRemote(peer)) remote_->Kick();
  return SignalWait(&mine[slot], &mine[ControlLayout::kSleepers], epoch, wait_policy_, peer, what,
                    deadline, Watcher(peer), failure);
}

xcclResult_t ShmTransport::MapPeerBuffers(Bootstrap* /*bootstrap*/, void* /*local*/,
                                          std::unique_ptr<PeerMappings>* out) {
  *out = std::make_unique<PeerMappings>(std::vector<void*>(topology_.nranks, nullptr));
  return xcclSuccess;
}

void ShmTransport::Abort(int failed_peer) {
  aborted_.store(true);
  uint32_t* mine = windows_.slots(topology_.rank);
  uint32_t expected = 0;
  __atomic_compare_exchange_n(&mine[ControlLayout::kAbort], &expected,
                              static_cast<uint32_t>(failed_peer + 1), false, __ATOMIC_RELEASE,
                              __ATOMIC_RELAXED);
}

void ShmTransport::SignalPeer(int peer, int slot, uint32_t value) {
  uint32_t* theirs = windows_.slots(peer);
  SignalStore(&theirs[slot], &theirs[ControlLayout::kSleepers], value);
}

xcclResult_t ShmTransport::CopyToPeer(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                                      size_t bytes, int signal_slot, PlatformFailure* failure) {
  uint32_t* theirs = windows_.slots(peer);
  Deadline deadline(timeout_ms_);
  XCCL_TRY(SignalWait(&theirs[ControlLayout::kReadyEpoch], &theirs[ControlLayout::kSleepers], epoch,
                      wait_policy_, peer, "its receive buffer", deadline, Watcher(peer), failure));
  const uint32_t ready = SignalLoad(&theirs[ControlLayout::kReadyEpoch]);
  const PublishedBuffer published = ReadPublished(theirs, ready);
  if (static_cast<int32_t>(epoch - published.first) < 0)
    return SetFailure(failure, xcclInvalidUsage, peer,
                      "rank %d moved on to operation %u before this rank's put of operation %u",
                      peer, published.first, epoch);
  if (!PutFits(published, epoch, published.BlockOf(signal_slot, topology_.nranks), dst_offset,
               bytes))
    return PutMismatch(published, peer, topology_.rank, dst_offset, bytes, failure);
  char* dst = reinterpret_cast<char*>(static_cast<uintptr_t>(published.address)) + dst_offset;
  if (bytes > 0) {
    // Counted as a writer before the look at `closed` (both sequentially consistent, as in
    // CloseRecvBuffer): either this put sees the buffer given up, or its owner waits for it.
    uint32_t* writers = &theirs[ControlLayout::kRecvWriters];
    __atomic_fetch_add(writers, 1, __ATOMIC_SEQ_CST);
    const bool given_up =
        __atomic_load_n(&theirs[ControlLayout::kRecvClosed], __ATOMIC_SEQ_CST) == ready;
    xcclResult_t copied = xcclSuccess;
    if (!given_up) {
      const pid_t pid = topology_.SameProcess(peer) ? 0 : topology_.ranks[peer].pid;
      copied = CopyToProcess(pid, peer, dst, src, bytes, StopCheck(peer), failure);
    }
    __atomic_fetch_sub(writers, 1, __ATOMIC_SEQ_CST);
    if (given_up) {
      // The owner gave up because of some rank's failure, which it announces once its writers
      // (this put too) have left: that rank is the root cause to name (up to 200 ms for it).
      const Deadline announced(200);
      bool named = AnnouncedFailure(failure);
      while (!named && !announced.Expired()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        named = AnnouncedFailure(failure);
      }
      return named ? failure->result
                   : SetFailure(failure, xcclRemoteError, peer,
                                "rank %d gave up the call before this put", peer);
    }
    if (copied != xcclSuccess) return copied;
  }
  if (signal_slot != ControlLayout::kNoSignal) SignalPeer(peer, signal_slot, epoch);
  return xcclSuccess;
}

// The checks a waiter makes every few milliseconds: this rank aborted, any peer announced a
// failure, or the awaited peer's process died. Announcements come before deaths: a survivor that
// saw the root cause announces it and may then exit, and a rank waiting on that survivor must
// name the root cause, not the survivor's orderly exit (the window outlives its owner's process
// while this rank keeps it mapped, so the announcement stays readable).
std::function<xcclResult_t(PlatformFailure*)> ShmTransport::Watcher(int peer) {
  return [this, peer](PlatformFailure* failure) -> xcclResult_t {
    // This rank's own knowledge first: its abort, then what its proxy holds (a rank of another
    // node is known by its links only, no pid, no window; for any peer, the first failure the
    // proxy heard of, its own or one passed on by another node, which names the rank behind it
    // and, where this rank saw it first, why).
    if (aborted_.load(std::memory_order_relaxed)) {
      SetFailure(failure, xcclRemoteError, peer, "communicator aborted while waiting for rank %d",
                 peer);
      return failure->result;
    }
    if (remote_ != nullptr) {
      if (IsRemote(peer)) remote_->Kick();  // still waiting: keep its links polled
      if (remote_->PeerFailed(peer, failure)) return failure->result;
    }
    if (AnnouncedFailure(failure)) return failure->result;
    if (IsRemote(peer)) return xcclSuccess;
    if (!topology_.SameProcess(peer) && !ProcessAlive(topology_.ranks[peer].pid)) {
      // Once more: the peer may have announced the root cause and exited between the scan
      // above and this look at its process (an announcement always precedes the exit).
      if (AnnouncedFailure(failure)) return failure->result;
      return SetFailure(failure, xcclRemoteError, peer, "rank %d (pid %d on %s) died", peer,
                        static_cast<int>(topology_.ranks[peer].pid),
                        topology_.ranks[peer].hostname);
    }
    return xcclSuccess;
  };
}

// What a long put checks between its pieces: this rank aborted, or a rank announced a failure
// (the receiver gave up its call). Cheaper than the waiters' Watcher: no look at processes (a
// copy into a dead one fails by itself).
std::function<xcclResult_t(PlatformFailure*)> ShmTransport::StopCheck(int peer) {
  return [this, peer](PlatformFailure* failure) -> xcclResult_t {
    return AbortedOrAnnounced(peer, "copying to", failure) ? failure->result : xcclSuccess;
  };
}

bool ShmTransport::AbortedOrAnnounced(int peer, const char* doing, PlatformFailure* failure) const {
  if (aborted_.load(std::memory_order_relaxed)) {
    SetFailure(failure, xcclRemoteError, peer, "communicator aborted while %s rank %d", doing,
               peer);
    return true;
  }
  return AnnouncedFailure(failure);
}

bool ShmTransport::AnnouncedFailure(PlatformFailure* failure) const {
  for (int r : topology_.local_ranks) {
    const uint32_t flag = SignalLoad(&windows_.slots(r)[ControlLayout::kAbort]);
    if (r != topology_.rank && flag != 0) {
      SetFailure(failure, xcclRemoteError, static_cast<int>(flag) - 1,
                 "rank %d reported that rank %u failed", r, flag - 1);
      return true;
    }
  }
  return false;
}

xcclResult_t ShmTransport::ProbePeers(Bootstrap* bootstrap) {
  static std::once_flag once;
  std::call_once(once, [] {
    AllowCrossProcessCopies();
    if (getrandom(g_probe_bytes, sizeof(g_probe_bytes), 0) != sizeof(g_probe_bytes))
      memset(g_probe_bytes, 0x5a, sizeof(g_probe_bytes));
  });
  std::vector<CopyProbe> probes(topology_.nranks);
  probes[topology_.rank].address = reinterpret_cast<uintptr_t>(g_probe_bytes);
  memcpy(probes[topology_.rank].bytes, g_probe_bytes, sizeof(g_probe_bytes));
  // Everyone has run AllowCrossProcessCopies before anyone probes: the all-gather orders it.
  XCCL_TRY(bootstrap->AllGather(probes.data(), sizeof(CopyProbe)));
  bool ok = true;
  std::string why;
  for (int peer : topology_.local_ranks) {
    if (topology_.SameProcess(peer)) continue;
    PlatformFailure failure;
    if (ProbeCrossProcessCopy(topology_.ranks[peer].pid, peer,
                              reinterpret_cast<void*>(probes[peer].address), probes[peer].bytes,
                              sizeof(probes[peer].bytes), &failure) != xcclSuccess) {
      ok = false;
      why = failure.message;
    }
  }
  int failed = -1;
  XCCL_TRY(ExchangeVerdicts(bootstrap, ok, &failed));
  if (failed >= 0)
    return Fail(xcclSystemError, "rank %d cannot copy into its peers' memory%s%s", failed,
                why.empty() ? "" : ": ", why.c_str());
  return xcclSuccess;
}

void ShmTransport::InitSlots(uint32_t* slots, size_t count, void* self) {
  const uint32_t base = static_cast<ShmTransport*>(self)->params_.epoch_base;
  for (size_t i = 0; i < count; ++i) slots[i] = base;
  // Words that are not epochs start at zero (kRecvClosed is one: the base, no epoch yet).
  for (int word :
       {ControlLayout::kRecvAddrLo, ControlLayout::kRecvAddrHi, ControlLayout::kAbort,
        ControlLayout::kSleepers, ControlLayout::kRecvBytesLo, ControlLayout::kRecvBytesHi,
        ControlLayout::kRecvBlockLo, ControlLayout::kRecvBlockHi, ControlLayout::kRecvWriters,
        ControlLayout::kRecvChunk})
    slots[word] = 0;
  slots[ControlLayout::kRecvBlockSignal] = static_cast<uint32_t>(ControlLayout::kNoSignal);
}

}  // namespace xccl
