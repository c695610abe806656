// The ib backend's connections (docs/ARCHITECTURE.md, "Across nodes (host platform)"), as NCCL's
// net_ib moves data: the receiver of a message tells the sender where to put it by an RDMA write of
// a clear-to-send (CTS) entry into the sender's FIFO (the buffer's address and rkey, the room left,
// the tag, the message's sequence number); the sender, holding both its send and that entry,
// RDMA-writes the bytes with immediate data into that buffer; the write consumes a receive the
// receiver posted, whose completion carries the size. Messages match in order: the i-th send takes
// the i-th CTS message. Memory the caller did not register (registration nullptr: what the proxy
// passes) goes through registered host staging of the comm, one piece of kIbPieceBytes at a time
// per request. Progress happens in Test: the caller (the proxy) polls; nothing here waits.
//
// Failures: a completion with an error status (retry exceeded, remote access, flush), a port
// that is no longer ACTIVE, a peer that closed its setup socket (kept open for this), or a
// refused message end the comm with a message naming the device, the QP and the status; every
// later call returns it. A comm that fails writes that message on its setup socket and closes
// it, so its peer learns at once, and why.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "transport/bootstrap/socket.h"
#include "transport/net/ib_queue_pair.h"
#include "transport/net/net.h"
#include "transport/net/sticky_failure.h"

namespace xccl {

constexpr int kIbMaxRequests = 8;
constexpr size_t kIbPieceBytes = size_t(512) << 10;  // a staged piece
constexpr size_t kIbMaxWrite = size_t(1) << 30;      // a registered piece (the immediate's field)
// The sender's last word of the setup: its QP is in RTS, the receiver may write CTS entries.
constexpr uint64_t kIbReadyWord = 0x5944414552424943ull;  // "CIBREADY"

// One FIFO slot, written by the receiver with one RDMA write. `check` covers the other fields,
// so that the sender never acts on an entry whose bytes have not all landed.
struct alignas(64) IbCtsEntry {
  uint64_t addr;
  uint64_t remaining;  // room left in the receive from this piece on
  uint32_t rkey;
  uint32_t piece;  // at most this many bytes in this write
  uint32_t tag;
  uint32_t msg;  // the message's sequence number on the comm
  uint64_t seq;  // the CTS's own sequence number + 1 (0: never written)
  uint64_t check;
  uint64_t reserved[2];
};
static_assert(sizeof(IbCtsEntry) == 64, "one FIFO slot is 64 bytes");
uint64_t CtsCheck(const IbCtsEntry& entry);

// The immediate of a data write: the piece's size, whether it ends the message, or a refusal.
constexpr uint32_t kImmLast = 1u << 31;
constexpr uint32_t kImmRefused = 1u << 30;
constexpr uint32_t kImmSizeMask = kImmRefused - 1;

// What both comms share: the QP, the setup socket (its close is the peer's failure), the first
// failure, the staging buffers, registrations.
class IbComm {
 public:
  IbComm(std::unique_ptr<IbQueuePair> qp, Socket socket, std::string peer);
  virtual ~IbComm();
  xcclResult_t RegisterMemory(void* data, size_t bytes, NetMemory type, NetRegistration** out);
  void DeregisterMemory(NetRegistration* registration);

 protected:
  struct Staging {
    char* data = nullptr;
    ibv_mr* mr = nullptr;
  };
  xcclResult_t Failed(xcclResult_t result, const char* format, ...)
      __attribute__((format(printf, 3, 4)));
  xcclResult_t Kept() const;  // the recorded failure again
  // The peer's setup socket: peer_closed_ once it reads end of file (or fails), with what the
  // peer wrote before closing in peer_said_.
  void WatchPeer();
  // " (it said: ...)" where the peer gave its failure, else "".
  std::string PeerReason() const;
  // Every 100 ms: the port is still ACTIVE, else the comm fails.
  xcclResult_t WatchPort();
  // Slot `i`'s staging, registered on first use with `access`.
  xcclResult_t StagingOf(int i, int access, Staging** out);
  // The lkey/rkey for [data, data + bytes) of `registration`, checked to lie inside it.
  xcclResult_t KeysOf(NetRegistration* registration, const void* data, size_t bytes, ibv_mr** mr);
  xcclResult_t StatusFailure(const ibv_wc& wc, const char* what);

  std::shared_ptr<IbPort> port_;  // keeps the library open while anything here is freed
  std::unique_ptr<IbQueuePair> qp_;
  Socket socket_;
  std::string peer_;  // the setup socket's address at the other end
  bool peer_closed_ = false;
  std::string peer_said_;  // a failing peer's last words on the setup socket (its failure)
  StickyFailure failure_;
  std::array<Staging, kIbMaxRequests> staging_{};
  std::chrono::steady_clock::time_point port_checked_;
};

class IbSendComm final : public NetSendComm, private IbComm {
 public:
  // `qp` in INIT, `socket` still connecting (Socket::StartConnect).
  static xcclResult_t Create(std::shared_ptr<IbPort> port, Socket socket, std::string peer,
                             std::unique_ptr<NetSendComm>* out);
  ~IbSendComm() override;
  xcclResult_t Ready(bool* ready) override;
  xcclResult_t Register(void* data, size_t bytes, NetMemory type, NetRegistration** out) override {
    return RegisterMemory(data, bytes, type, out);
  }
  void Deregister(NetRegistration* registration) override { DeregisterMemory(registration); }
  xcclResult_t Isend(const void* data, size_t bytes, uint32_t tag, NetRegistration* registration,
                     NetRequest** request) override;
  xcclResult_t Test(NetRequest* request, bool* done, size_t* bytes) override;

 private:
  struct Slot {
    bool used = false;
    const char* data = nullptr;
    size_t size = 0;
    uint32_t tag = 0;
    uint32_t msg = 0;
    ibv_mr* mr = nullptr;  // the caller's registration, or nullptr: staged
    size_t posted = 0;     // bytes written so far (pieces posted)
    bool in_flight = false;
    bool last_posted = false;
    bool complete = false;
  };
  enum class Setup { kConnecting, kSendInfo, kRecvInfo, kSendReady, kReady };
  IbSendComm(std::unique_ptr<IbQueuePair> qp, Socket socket, std::string peer, IbCtsEntry* fifo,
             ibv_mr* fifo_mr);
  xcclResult_t Handshake();
  xcclResult_t Progress();
  xcclResult_t ConsumeCts();
  xcclResult_t Refuse(Slot& slot, const IbCtsEntry& cts, const char* why);

  IbCtsEntry* fifo_;
  ibv_mr* fifo_mr_;
  Setup setup_ = Setup::kConnecting;
  uint8_t out_[kIbInfoBytes] = {};
  uint8_t in_[kIbInfoBytes] = {};
  size_t moved_ = 0;
  std::array<Slot, kIbMaxRequests> slots_{};
  uint32_t next_msg_ = 0;
  uint64_t next_cts_ = 0;
};

class IbRecvComm final : public NetRecvComm, private IbComm {
 public:
  // A connected QP (RTS, its receives posted), the sender's FIFO.
  IbRecvComm(std::unique_ptr<IbQueuePair> qp, Socket socket, std::string peer, uint64_t fifo_addr,
             uint32_t fifo_rkey);
  xcclResult_t Register(void* data, size_t bytes, NetMemory type, NetRegistration** out) override {
    return RegisterMemory(data, bytes, type, out);
  }
  void Deregister(NetRegistration* registration) override { DeregisterMemory(registration); }
  xcclResult_t Irecv(void* data, size_t capacity, uint32_t tag, NetRegistration* registration,
                     NetRequest** request) override;
  // Host memory only here (staged or registered host memory): nothing to flush.
  xcclResult_t Iflush(void* data, size_t bytes, NetRegistration* registration,
                      NetRequest** request) override;
  xcclResult_t Test(NetRequest* request, bool* done, size_t* bytes) override;
  uint64_t bytes_arrived() const override { return arrived_; }

  // Receives to keep posted: one per piece that can be in flight.
  static constexpr int kPostedReceives = kIbMaxRequests;
  // The wr_id of those receives (a CTS write's is its slot).
  static constexpr uint64_t kRecvWrId = ~uint64_t(0);
  // Posts `count` receives (setup, and one back after each consumed).
  static xcclResult_t PostReceives(IbQueuePair* qp, int count);

 private:
  struct Slot {
    bool used = false;
    char* data = nullptr;
    size_t capacity = 0;
    uint32_t tag = 0;
    uint32_t msg = 0;
    ibv_mr* mr = nullptr;  // nullptr: staged
    size_t landed = 0;
    bool advertised = false;  // a CTS is out for the next piece
    size_t piece = 0;         // its size
    bool complete = false;
  };
  xcclResult_t Progress();
  xcclResult_t Advertise(int index);

  uint64_t fifo_addr_;
  uint32_t fifo_rkey_;
  std::array<Slot, kIbMaxRequests> slots_{};
  std::deque<int> order_;    // used slots in posting order
  std::deque<int> landing_;  // slots with a CTS out, in CTS order (RC completes in order)
  uint32_t next_msg_ = 0;
  uint64_t cts_sent_ = 0;
  uint64_t pieces_landed_ = 0;
  int cts_in_flight_ = 0;
  uint64_t arrived_ = 0;
};

}  // namespace xccl
