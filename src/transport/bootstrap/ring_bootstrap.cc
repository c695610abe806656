// RingBootstrap's construction, Abort, and the ring's collectives: AllGather and Barrier over
// Exchange, and Init's listen-address exchange that starts the point-to-point messages.
#include "transport/bootstrap/ring_bootstrap.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "transport/bootstrap/bootstrap_gate.h"
#include "transport/bootstrap/bootstrap_secret.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/socket.h"

namespace xccl {
namespace bootstrap_internal {

Doorbell::~Doorbell() {
  if (fd_ >= 0) close(fd_);
}

xcclResult_t Doorbell::Open() {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) return Fail(xcclSystemError, "bootstrap: eventfd: %s", strerror(errno));
  return xcclSuccess;
}

void Doorbell::Ring() {
  if (fd_ < 0) return;
  uint64_t one = 1;
  ssize_t n = write(fd_, &one, sizeof(one));  // fails only when already rung 2^64-2 times
  (void)n;
}

std::vector<uint8_t> HandshakeFrame(const Secret& secret, int rank, int nranks, uint32_t type) {
  wire::RingHelloMsg m{};
  memcpy(m.secret, secret.data(), secret.size());
  m.rank = static_cast<uint32_t>(rank);
  m.nranks = static_cast<uint32_t>(nranks);
  return wire::Frame(type, wire::EncodeRingHello(m));
}

RingBootstrap::RingBootstrap(const Secret& secret, int rank, int nranks, int64_t timeout_ms,
                             Socket next, Socket prev)
    : secret_(secret),
      rank_(rank),
      nranks_(nranks),
      timeout_ms_(timeout_ms),
      next_(std::move(next)),
      prev_(std::move(prev)) {}

xcclResult_t RingBootstrap::AllGather(void* data, size_t block_bytes) {
  if (nranks_ >= kLogRoundsFromRanks && block_bytes > 0) return WorldAllGather(data, block_bytes);
  return Exchange(data, block_bytes, wire::kOpAllGather);
}

xcclResult_t RingBootstrap::Barrier() {
  if (nranks_ >= kLogRoundsFromRanks) {
    std::vector<int> all(static_cast<size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r) all[r] = r;
    return GroupBarrier(all);
  }
  // Every rank's byte reaches every other rank only after all have entered.
  std::vector<uint8_t> bytes(static_cast<size_t>(nranks_), 0);
  return Exchange(bytes.data(), 1, wire::kOpBarrier);
}

void RingBootstrap::Abort() {
  aborted_.store(true);
  next_.Shutdown();
  prev_.Shutdown();
  // The point-to-point sockets belong to the calling thread's tables: a call in flight
  // shuts them itself when the doorbell wakes it, and a later call finds aborted_ set.
  doorbell_.Ring();
}

xcclResult_t RingBootstrap::StartPeerMessages(Socket listener, const Deadline& deadline) {
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

const char* RingBootstrap::OpName(uint32_t op) {
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

xcclResult_t RingBootstrap::Exchange(void* data, size_t block_bytes, uint32_t op) {
  // Numbered from 1: call #0 is Init's address exchange.
  return ExchangeWithSeq(data, block_bytes, op, seq_ + 1, Deadline(timeout_ms_));
}

xcclResult_t RingBootstrap::ExchangeWithSeq(void* data, size_t block_bytes, uint32_t op,
                                            uint64_t seq, const Deadline& deadline) {
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

xcclResult_t RingBootstrap::CheckHeader(const uint8_t* h, size_t block_bytes, uint32_t op) {
  const uint8_t* p = h + wire::kHeaderBytes;
  if (wire::GetU32(h) != wire::kMagic || wire::GetU32(h + 4) != wire::kCollHeader ||
      wire::GetU32(h + 8) != wire::kCollHeaderBytes) {
    broken_ = true;
    return Fail(xcclRemoteError, "bootstrap: rank %d: rank %d sent a malformed call header", rank_,
                Prev());
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

xcclResult_t RingBootstrap::IoFailure(const IoStatus& st, bool on_send, const char* what) {
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

}  // namespace bootstrap_internal
}  // namespace xccl
