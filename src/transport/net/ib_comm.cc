#include "transport/net/ib_comm.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/mix64.h"
#include "transport/net/wire_word.h"

namespace xccl {

namespace {

// The request slot `request` names, if this comm holds it (requests are slot addresses).
template <typename Slots>
auto* HeldSlot(Slots& slots, NetRequest* request) {
  decltype(&slots[0]) held = nullptr;
  for (auto& slot : slots)
    if (reinterpret_cast<NetRequest*>(&slot) == request && slot.used) held = &slot;
  return held;
}

constexpr int kPollBatch = 16;
constexpr auto kPortCheckPeriod = std::chrono::milliseconds(100);

// What Register hands out (NetRegistration is opaque to callers).
struct IbRegistration {
  ibv_mr* mr;
};

}  // namespace

uint64_t CtsCheck(const IbCtsEntry& e) {
  uint64_t h = SplitMix64(e.addr ^ 0x43545331ull);
  h = SplitMix64(h ^ e.remaining);
  h = SplitMix64(h ^ (uint64_t(e.rkey) << 32 | e.piece));
  h = SplitMix64(h ^ (uint64_t(e.tag) << 32 | e.msg));
  return SplitMix64(h ^ e.seq);
}

// ---- IbComm ----

IbComm::IbComm(std::unique_ptr<IbQueuePair> qp, Socket socket, std::string peer)
    : port_(qp->shared_port()),
      qp_(std::move(qp)),
      socket_(std::move(socket)),
      peer_(std::move(peer)),
      port_checked_(std::chrono::steady_clock::now()) {}

IbComm::~IbComm() {
  // The QP first: nothing writes into the staging once it is gone.
  qp_.reset();
  const IbVerbs& verbs = port_->verbs();
  for (Staging& s : staging_) {
    if (s.mr != nullptr) verbs.dereg_mr(s.mr);
    free(s.data);
  }
}

xcclResult_t IbComm::Failed(xcclResult_t result, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const bool first = failure_.Record(result, format, args);
  va_end(args);
  if (first) {
    // The peer's comm watches this socket: our failure, then the close, fail the peer at once
    // whatever it waits for (a failed QP may never deliver anything again). Best effort: a
    // short message fits an empty socket buffer.
    if (socket_.valid()) {
      size_t sent = 0;
      const std::string& message = failure_.message();
      socket_.SendSome(message.data(), std::min<size_t>(message.size(), 900), &sent);
    }
    socket_.Close();
  }
  // Quiet, as the socket backend: a peer closing at its destroy is no failure by itself;
  // whoever waits on the comm reports it.
  return failure_.ReportQuietly();
}

xcclResult_t IbComm::Kept() const { return failure_.Report(); }

void IbComm::WatchPeer() {
  if (peer_closed_ || !socket_.valid()) return;
  for (;;) {
    char bytes[256];
    size_t got = 0;
    const IoStatus s = socket_.RecvSome(bytes, sizeof(bytes), &got);
    if (!s.ok()) {
      peer_closed_ = true;  // after setup the peer writes only its failure, then closes
      return;
    }
    if (got == 0) return;
    if (peer_said_.size() < 1024) peer_said_.append(bytes, got);
  }
}

std::string IbComm::PeerReason() const {
  return peer_said_.empty() ? "" : " (it said: " + peer_said_ + ")";
}

xcclResult_t IbComm::WatchPort() {
  const auto now = std::chrono::steady_clock::now();
  if (now - port_checked_ < kPortCheckPeriod) return xcclSuccess;
  port_checked_ = now;
  std::string state;
  if (!qp_->port().StillActive(&state))
    return Failed(xcclSystemError, "net ib: %s (to %s): the port is %s", qp_->Describe().c_str(),
                  peer_.c_str(), state.c_str());
  return xcclSuccess;
}

xcclResult_t IbComm::StatusFailure(const ibv_wc& wc, const char* what) {
  // An error completion's opcode is undefined: `what` comes from the wr_id.
  return Failed(xcclRemoteError, "net ib: %s (to %s): %s completed with status %d (%s)",
                qp_->Describe().c_str(), peer_.c_str(), what, static_cast<int>(wc.status),
                qp_->verbs().StatusName(wc.status));
}

xcclResult_t IbComm::StagingOf(int i, int access, Staging** out) {
  Staging& s = staging_[i];
  if (s.mr == nullptr) {
    if (s.data == nullptr &&
        posix_memalign(reinterpret_cast<void**>(&s.data), 4096, kIbPieceBytes) != 0)
      return Failed(xcclSystemError, "net ib: no memory for a staging buffer of %zu bytes",
                    kIbPieceBytes);
    s.mr = qp_->verbs().reg_mr(qp_->port().pd(), s.data, kIbPieceBytes, access);
    if (s.mr == nullptr)
      return Failed(xcclSystemError, "net ib: %s: ibv_reg_mr of a %zu-byte staging buffer: %s",
                    qp_->port().Describe().c_str(), kIbPieceBytes, strerror(errno));
  }
  *out = &s;
  return xcclSuccess;
}

xcclResult_t IbComm::RegisterMemory(void* data, size_t bytes, NetMemory type,
                                    NetRegistration** out) {
  if (data == nullptr || bytes == 0 || out == nullptr)
    return Fail(xcclInvalidArgument, "net ib: Register needs memory (data %p, %zu bytes)", data,
                bytes);
  if (type == NetMemory::kDevice)
    // ibv_reg_dmabuf_mr needs a dma-buf file descriptor of the GPU buffer, which the platform
    // layer does not export yet: device memory goes through the proxy's host staging.
    return Fail(xcclInvalidUsage,
                "net ib: %s: device memory cannot be registered in this build (ibv_reg_dmabuf_mr "
                "%s in %s, but no dma-buf export of GPU memory): use host staging",
                qp_->port().Describe().c_str(),
                qp_->verbs().reg_dmabuf_mr != nullptr ? "found" : "missing",
                qp_->verbs().path.c_str());
  ibv_mr* mr = qp_->verbs().reg_mr(qp_->port().pd(), data, bytes,
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr)
    return Fail(xcclSystemError, "net ib: %s: ibv_reg_mr of %zu bytes at %p: %s",
                qp_->port().Describe().c_str(), bytes, data, strerror(errno));
  *out = reinterpret_cast<NetRegistration*>(new IbRegistration{mr});
  return xcclSuccess;
}

void IbComm::DeregisterMemory(NetRegistration* registration) {
  if (registration == nullptr) return;
  auto* r = reinterpret_cast<IbRegistration*>(registration);
  qp_->verbs().dereg_mr(r->mr);
  delete r;
}

xcclResult_t IbComm::KeysOf(NetRegistration* registration, const void* data, size_t bytes,
                            ibv_mr** mr) {
  *mr = reinterpret_cast<IbRegistration*>(registration)->mr;
  const auto begin = reinterpret_cast<uintptr_t>((*mr)->addr);
  const auto at = reinterpret_cast<uintptr_t>(data);
  if (at < begin || at + bytes > begin + (*mr)->length)
    return Fail(xcclInvalidArgument,
                "net ib: %zu bytes at %p do not lie inside their registration (%zu bytes at %p)",
                bytes, data, (*mr)->length, (*mr)->addr);
  return xcclSuccess;
}

// ---- IbSendComm ----

IbSendComm::IbSendComm(std::unique_ptr<IbQueuePair> qp, Socket socket, std::string peer,
                       IbCtsEntry* fifo, ibv_mr* fifo_mr)
    : IbComm(std::move(qp), std::move(socket), std::move(peer)), fifo_(fifo), fifo_mr_(fifo_mr) {}

IbSendComm::~IbSendComm() {
  qp_.reset();  // nothing writes the FIFO once the QP is gone (IbComm's destructor copes)
  port_->verbs().dereg_mr(fifo_mr_);
  free(fifo_);
}

xcclResult_t IbSendComm::Create(std::shared_ptr<IbPort> port, Socket socket, std::string peer,
                                std::unique_ptr<NetSendComm>* out) {
  std::unique_ptr<IbQueuePair> qp;
  XCCL_TRY(IbQueuePair::Create(port, kIbMaxRequests, kIbMaxRequests, 0, &qp));
  XCCL_TRY(qp->ToInit(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  IbCtsEntry* fifo = nullptr;
  if (posix_memalign(reinterpret_cast<void**>(&fifo), 4096, sizeof(IbCtsEntry) * kIbMaxRequests))
    return Fail(xcclSystemError, "net ib: no memory for a clear-to-send FIFO");
  memset(static_cast<void*>(fifo), 0, sizeof(IbCtsEntry) * kIbMaxRequests);
  ibv_mr* mr = port->verbs().reg_mr(port->pd(), fifo, sizeof(IbCtsEntry) * kIbMaxRequests,
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) {
    free(fifo);
    return Fail(xcclSystemError, "net ib: %s: ibv_reg_mr of the clear-to-send FIFO: %s",
                port->Describe().c_str(), strerror(errno));
  }
  auto comm = std::unique_ptr<IbSendComm>(
      new IbSendComm(std::move(qp), std::move(socket), std::move(peer), fifo, mr));
  IbEndpointInfo info = comm->qp_->LocalInfo();
  info.fifo_addr = reinterpret_cast<uintptr_t>(fifo);
  info.fifo_rkey = mr->rkey;
  info.max_requests = kIbMaxRequests;
  PackEndpointInfo(info, comm->out_);
  *out = std::move(comm);
  return xcclSuccess;
}

// Connect, send this end's info, read the receiver's, go to RTR and RTS, then say ready: only
// then does the receiver write CTS entries (into a QP that can take them).
xcclResult_t IbSendComm::Handshake() {
  for (;;) {
    size_t n = 0;
    IoStatus s;
    switch (setup_) {
      case Setup::kConnecting: {
        bool connected = false;
        s = socket_.ConnectDone(&connected);
        if (!s.ok()) break;
        if (!connected) return xcclSuccess;
        setup_ = Setup::kSendInfo;
        continue;
      }
      case Setup::kSendInfo:
        s = socket_.SendSome(out_ + moved_, kIbInfoBytes - moved_, &n);
        if (!s.ok()) break;
        moved_ += n;
        if (moved_ < kIbInfoBytes) return xcclSuccess;
        moved_ = 0;
        setup_ = Setup::kRecvInfo;
        continue;
      case Setup::kRecvInfo: {
        s = socket_.RecvSome(in_ + moved_, kIbInfoBytes - moved_, &n);
        if (!s.ok()) break;
        moved_ += n;
        if (moved_ < kIbInfoBytes) return xcclSuccess;
        moved_ = 0;
        IbEndpointInfo remote;
        if (!UnpackEndpointInfo(in_, &remote) || remote.max_requests != kIbMaxRequests)
          return Failed(xcclRemoteError, "net ib: %s answered the setup with something else",
                        peer_.c_str());
        if (qp_->Connect(remote) != xcclSuccess)
          return Failed(xcclSystemError, "%s", ThreadLastError().c_str());
        PutWire(out_, kIbReadyWord, 8);
        setup_ = Setup::kSendReady;
        continue;
      }
      case Setup::kSendReady:
        s = socket_.SendSome(out_ + moved_, 8 - moved_, &n);
        if (!s.ok()) break;
        moved_ += n;
        if (moved_ < 8) return xcclSuccess;
        setup_ = Setup::kReady;
        continue;
      case Setup::kReady:
        return xcclSuccess;
    }
    return Failed(xcclSystemError, "net ib: setting up the connection to %s: %s", peer_.c_str(),
                  s.Describe().c_str());
  }
}

xcclResult_t IbSendComm::Ready(bool* ready) {
  if (failure_.failed()) return Kept();
  XCCL_TRY(Handshake());
  *ready = setup_ == Setup::kReady;
  return xcclSuccess;
}

xcclResult_t IbSendComm::Isend(const void* data, size_t bytes, uint32_t tag,
                               NetRegistration* registration, NetRequest** request) {
  if (request == nullptr || (data == nullptr && bytes > 0))
    return Fail(xcclInvalidArgument, "net ib: Isend of %zu bytes from %p", bytes, data);
  *request = nullptr;
  if (failure_.failed()) return Kept();
  if (setup_ != Setup::kReady)
    return Fail(xcclInvalidUsage, "net ib: Isend before the connection is ready");
  if (peer_closed_)
    return Failed(xcclRemoteError, "net ib: %s: the receiver (%s) closed its connection%s",
                  qp_->Describe().c_str(), peer_.c_str(), PeerReason().c_str());
  ibv_mr* mr = nullptr;
  if (registration != nullptr) XCCL_TRY(KeysOf(registration, data, bytes, &mr));
  for (Slot& slot : slots_) {
    if (slot.used) continue;
    slot = Slot{};
    slot.used = true;
    slot.data = static_cast<const char*>(data);
    slot.size = bytes;
    slot.tag = tag;
    slot.msg = next_msg_++;
    slot.mr = mr;
    *request = reinterpret_cast<NetRequest*>(&slot);
    return Progress();
  }
  return xcclSuccess;  // no free slot now
}

xcclResult_t IbSendComm::Refuse(Slot& slot, const IbCtsEntry& cts, const char* why) {
  // A zero-byte write with the refusal bit consumes the receiver's receive, so it fails too.
  ibv_send_wr wr;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = static_cast<uint64_t>(&slot - slots_.data());
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(kImmRefused);
  wr.wr.rdma.remote_addr = cts.addr;
  wr.wr.rdma.rkey = cts.rkey;
  ibv_send_wr* bad = nullptr;
  ibv_post_send(qp_->qp(), &wr, &bad);
  return Failed(xcclInvalidUsage,
                "net ib: %s (to %s): message %u of %zu bytes with tag %u %s (the receive: tag %u, "
                "%llu bytes left)",
                qp_->Describe().c_str(), peer_.c_str(), slot.msg, slot.size, slot.tag, why, cts.tag,
                static_cast<unsigned long long>(cts.remaining));
}

// Takes the CTS entries in order; each goes to the send of its message, which writes one
// piece. An entry for a message not posted yet, or whose previous piece is still in flight
// (its staging is busy), waits.
xcclResult_t IbSendComm::ConsumeCts() {
  for (;;) {
    IbCtsEntry& slot_entry = fifo_[next_cts_ % kIbMaxRequests];
    if (__atomic_load_n(&slot_entry.seq, __ATOMIC_ACQUIRE) != next_cts_ + 1) return xcclSuccess;
    IbCtsEntry cts;
    memcpy(static_cast<void*>(&cts), const_cast<const IbCtsEntry*>(&slot_entry), sizeof(cts));
    if (cts.check != CtsCheck(cts)) return xcclSuccess;  // still landing
    Slot* send = nullptr;
    for (Slot& s : slots_)
      if (s.used && !s.last_posted && s.msg == cts.msg) send = &s;
    if (send == nullptr || send->in_flight) return xcclSuccess;
    if (cts.tag != send->tag) return Refuse(*send, cts, "has another tag than its receive");
    const size_t left = send->size - send->posted;
    if (left > cts.remaining) return Refuse(*send, cts, "does not fit its receive");
    size_t piece = std::min<size_t>(left, cts.piece);
    ibv_sge sge;
    memset(&sge, 0, sizeof(sge));
    if (send->mr != nullptr) {
      sge.addr = reinterpret_cast<uintptr_t>(send->data + send->posted);
      sge.lkey = send->mr->lkey;
    } else {
      piece = std::min(piece, kIbPieceBytes);
      Staging* staging = nullptr;
      XCCL_TRY(StagingOf(static_cast<int>(send - slots_.data()), IBV_ACCESS_LOCAL_WRITE, &staging));
      if (piece > 0) memcpy(staging->data, send->data + send->posted, piece);
      sge.addr = reinterpret_cast<uintptr_t>(staging->data);
      sge.lkey = staging->mr->lkey;
    }
    if (piece == 0 && left > 0)
      return Refuse(*send, cts, "was offered an empty piece by its receive");
    sge.length = static_cast<uint32_t>(piece);
    const bool last = send->posted + piece == send->size;
    ibv_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = static_cast<uint64_t>(send - slots_.data());
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = piece > 0 ? &sge : nullptr;
    wr.num_sge = piece > 0 ? 1 : 0;
    wr.imm_data = htonl(static_cast<uint32_t>(piece) | (last ? kImmLast : 0));
    wr.wr.rdma.remote_addr = cts.addr;
    wr.wr.rdma.rkey = cts.rkey;
    ibv_send_wr* bad = nullptr;
    const int rc = ibv_post_send(qp_->qp(), &wr, &bad);
    if (rc != 0)
      return Failed(xcclSystemError, "net ib: %s (to %s): ibv_post_send of %zu bytes: %s",
                    qp_->Describe().c_str(), peer_.c_str(), piece, strerror(rc));
    send->posted += piece;
    send->in_flight = true;
    send->last_posted = last;
    ++next_cts_;
  }
}

xcclResult_t IbSendComm::Progress() {
  if (failure_.failed()) return Kept();
  WatchPeer();  // before the completions: what landed before the close still counts
  ibv_wc wcs[kPollBatch];
  int n;
  while ((n = ibv_poll_cq(qp_->cq(), kPollBatch, wcs)) > 0) {
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[i];
      if (wc.status != IBV_WC_SUCCESS)
        return StatusFailure(wc, "an RDMA write with immediate of the data");
      if (wc.wr_id >= slots_.size() || !slots_[wc.wr_id].in_flight)
        return Failed(xcclInternalError, "net ib: %s: a completion for no request (%llu)",
                      qp_->Describe().c_str(), static_cast<unsigned long long>(wc.wr_id));
      Slot& slot = slots_[wc.wr_id];
      slot.in_flight = false;
      slot.complete = slot.last_posted;
    }
  }
  if (n < 0)
    return Failed(xcclSystemError, "net ib: %s: ibv_poll_cq failed (%d)", qp_->Describe().c_str(),
                  n);
  XCCL_TRY(ConsumeCts());
  bool waiting = false;
  for (const Slot& slot : slots_) waiting = waiting || (slot.used && !slot.complete);
  if (waiting && peer_closed_)
    return Failed(xcclRemoteError,
                  "net ib: %s: the receiver (%s) closed its connection with sends outstanding%s",
                  qp_->Describe().c_str(), peer_.c_str(), PeerReason().c_str());
  return waiting ? WatchPort() : xcclSuccess;
}

xcclResult_t IbSendComm::Test(NetRequest* request, bool* done, size_t* bytes) {
  Slot* slot = HeldSlot(slots_, request);
  if (slot == nullptr || done == nullptr)
    return Fail(xcclInvalidArgument, "net ib: Test of a request this send comm does not hold");
  *done = false;
  XCCL_TRY(Progress());
  if (!slot->complete) return xcclSuccess;
  *done = true;
  if (bytes != nullptr) *bytes = slot->size;
  slot->used = false;
  return xcclSuccess;
}

// ---- IbRecvComm ----

IbRecvComm::IbRecvComm(std::unique_ptr<IbQueuePair> qp, Socket socket, std::string peer,
                       uint64_t fifo_addr, uint32_t fifo_rkey)
    : IbComm(std::move(qp), std::move(socket), std::move(peer)),
      fifo_addr_(fifo_addr),
      fifo_rkey_(fifo_rkey) {}

xcclResult_t IbRecvComm::PostReceives(IbQueuePair* qp, int count) {
  for (int i = 0; i < count; ++i) {
    // A write with immediate consumes a receive but scatters nothing into it: no buffer.
    ibv_recv_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = kRecvWrId;
    ibv_recv_wr* bad = nullptr;
    const int rc = ibv_post_recv(qp->qp(), &wr, &bad);
    if (rc != 0)
      return Fail(xcclSystemError, "net ib: %s: ibv_post_recv: %s", qp->Describe().c_str(),
                  strerror(rc));
  }
  return xcclSuccess;
}

xcclResult_t IbRecvComm::Irecv(void* data, size_t capacity, uint32_t tag,
                               NetRegistration* registration, NetRequest** request) {
  if (request == nullptr || (data == nullptr && capacity > 0))
    return Fail(xcclInvalidArgument, "net ib: Irecv of %zu bytes into %p", capacity, data);
  *request = nullptr;
  if (failure_.failed()) return Kept();
  ibv_mr* mr = nullptr;
  if (registration != nullptr) XCCL_TRY(KeysOf(registration, data, capacity, &mr));
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.used) continue;
    slot = Slot{};
    slot.used = true;
    slot.data = static_cast<char*>(data);
    slot.capacity = capacity;
    slot.tag = tag;
    slot.msg = next_msg_++;
    slot.mr = mr;
    order_.push_back(static_cast<int>(i));
    *request = reinterpret_cast<NetRequest*>(&slot);
    return Progress();
  }
  return xcclSuccess;
}

xcclResult_t IbRecvComm::Iflush(void*, size_t, NetRegistration*, NetRequest** request) {
  if (request == nullptr) return Fail(xcclInvalidArgument, "net ib: Iflush without a request");
  *request = nullptr;  // host memory: the completion already made the bytes visible
  return xcclSuccess;
}

// Writes the CTS of slot `index`'s next piece into the sender's FIFO (inline: the entry is
// copied at the post, nothing to keep alive).
xcclResult_t IbRecvComm::Advertise(int index) {
  Slot& slot = slots_[index];
  IbCtsEntry cts;
  memset(static_cast<void*>(&cts), 0, sizeof(cts));
  const size_t left = slot.capacity - slot.landed;
  if (slot.mr != nullptr) {
    cts.addr = reinterpret_cast<uintptr_t>(slot.data + slot.landed);
    cts.rkey = slot.mr->rkey;
    cts.piece = static_cast<uint32_t>(std::min(left, kIbMaxWrite));
  } else {
    Staging* staging = nullptr;
    XCCL_TRY(StagingOf(index, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &staging));
    cts.addr = reinterpret_cast<uintptr_t>(staging->data);
    cts.rkey = staging->mr->rkey;
    cts.piece = static_cast<uint32_t>(std::min(left, kIbPieceBytes));
  }
  cts.remaining = left;
  cts.tag = slot.tag;
  cts.msg = slot.msg;
  cts.seq = cts_sent_ + 1;
  cts.check = CtsCheck(cts);
  ibv_sge sge;
  sge.addr = reinterpret_cast<uintptr_t>(&cts);
  sge.length = sizeof(cts);
  sge.lkey = 0;  // inline
  ibv_send_wr wr;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = static_cast<uint64_t>(index);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = fifo_addr_ + (cts_sent_ % kIbMaxRequests) * sizeof(IbCtsEntry);
  wr.wr.rdma.rkey = fifo_rkey_;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_->qp(), &wr, &bad);
  if (rc != 0)
    return Failed(xcclSystemError, "net ib: %s (to %s): ibv_post_send of a clear-to-send: %s",
                  qp_->Describe().c_str(), peer_.c_str(), strerror(rc));
  ++cts_sent_;
  ++cts_in_flight_;
  slot.advertised = true;
  slot.piece = cts.piece;
  landing_.push_back(index);
  return xcclSuccess;
}

xcclResult_t IbRecvComm::Progress() {
  if (failure_.failed()) return Kept();
  WatchPeer();
  ibv_wc wcs[kPollBatch];
  int n;
  while ((n = ibv_poll_cq(qp_->cq(), kPollBatch, wcs)) > 0) {
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[i];
      if (wc.status != IBV_WC_SUCCESS)
        return StatusFailure(wc, wc.wr_id == kRecvWrId
                                     ? "a posted receive (for the data's write with immediate)"
                                     : "an RDMA write of a clear-to-send");
      if (wc.wr_id != kRecvWrId) {
        --cts_in_flight_;
        continue;
      }
      if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || landing_.empty())
        return Failed(xcclRemoteError,
                      "net ib: %s: a completion (opcode %d) with no piece expected",
                      qp_->Describe().c_str(), static_cast<int>(wc.opcode));
      Slot& slot = slots_[landing_.front()];
      const int index = landing_.front();
      landing_.pop_front();
      ++pieces_landed_;
      XCCL_TRY(PostReceives(qp_.get(), 1) == xcclSuccess
                   ? xcclSuccess
                   : Failed(xcclSystemError, "%s", ThreadLastError().c_str()));
      const uint32_t imm = ntohl(wc.imm_data);
      if (imm & kImmRefused)
        return Failed(xcclInvalidUsage,
                      "net ib: %s: the sender (%s) refused receive %u (tag %u, %zu bytes left): "
                      "its message has another tag or does not fit",
                      qp_->Describe().c_str(), peer_.c_str(), slot.msg, slot.tag,
                      slot.capacity - slot.landed);
      const size_t bytes = imm & kImmSizeMask;
      if (bytes > slot.piece)
        return Failed(xcclRemoteError,
                      "net ib: %s: the sender wrote %zu bytes into a %zu-byte piece",
                      qp_->Describe().c_str(), bytes, slot.piece);
      if (slot.mr == nullptr && bytes > 0)
        memcpy(slot.data + slot.landed, staging_[index].data, bytes);
      slot.landed += bytes;
      arrived_ += bytes;
      slot.advertised = false;
      slot.complete = (imm & kImmLast) != 0;
    }
  }
  if (n < 0)
    return Failed(xcclSystemError, "net ib: %s: ibv_poll_cq failed (%d)", qp_->Describe().c_str(),
                  n);
  // Every posted receive with no piece out gets its CTS, while the FIFO has room (an entry is
  // free again once its piece landed: the sender took it before writing).
  for (int index : order_) {
    Slot& slot = slots_[index];
    if (slot.complete || slot.advertised) continue;
    if (cts_sent_ - pieces_landed_ >= kIbMaxRequests || cts_in_flight_ >= kIbMaxRequests) break;
    XCCL_TRY(Advertise(index));
  }
  bool waiting = false;
  for (int index : order_) waiting = waiting || !slots_[index].complete;
  if (waiting && peer_closed_)
    return Failed(xcclRemoteError,
                  "net ib: %s: the sender (%s) closed its connection (its QP or its rank failed, "
                  "or it finished) "
                  "with receives outstanding%s",
                  qp_->Describe().c_str(), peer_.c_str(), PeerReason().c_str());
  return waiting ? WatchPort() : xcclSuccess;
}

xcclResult_t IbRecvComm::Test(NetRequest* request, bool* done, size_t* bytes) {
  Slot* slot = HeldSlot(slots_, request);
  if (slot == nullptr || done == nullptr)
    return Fail(xcclInvalidArgument, "net ib: Test of a request this receive comm does not hold");
  *done = false;
  XCCL_TRY(Progress());
  if (!slot->complete) return xcclSuccess;
  *done = true;
  if (bytes != nullptr) *bytes = slot->landed;
  slot->used = false;
  const int index = static_cast<int>(slot - slots_.data());
  order_.erase(std::find(order_.begin(), order_.end(), index));
  return xcclSuccess;
}

}  // namespace xccl
