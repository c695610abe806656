// The socket backend's connections: a message's header {tag, bytes} on the control socket, its
// bytes striped over the data sockets (small messages on the first alone), every socket a FIFO,
// so that both sides cut and match the stripes alike without more framing. Progress is made by
// Test, never by a thread of its own: the caller's poll loop moves the bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "transport/bootstrap/socket.h"
#include "transport/net/net.h"
#include "transport/net/sticky_failure.h"

namespace xccl {

// Stripes of one message: how many and where stripe `i` lies.
struct Stripes {
  static constexpr size_t kMinStriped = 64 * 1024;  // below this, one stripe
  static constexpr size_t kAlign = 4096;
  int count = 1;
  size_t stripe = 0;
  static Stripes Of(size_t bytes, int nsocks);
  size_t Begin(int i, size_t bytes) const;
  size_t End(int i, size_t bytes) const;
};

// What the two socket comms share: the sockets, the request slots in post order, the first
// failure (after which every call returns it).
class SocketStream {
 public:
  static constexpr int kMaxRequests = 8;
  SocketStream(std::vector<Socket> sockets, std::string peer);

 protected:
  struct Slot {
    bool used = false;
    bool header_done = false;
    char* data = nullptr;
    size_t capacity = 0;  // receive: the posted size
    size_t bytes = 0;     // the message's
    uint32_t tag = 0;
    size_t header_moved = 0;
    uint8_t header[16] = {};
    Stripes stripes;
    std::array<size_t, 16> moved{};  // per stripe
  };
  Slot* FreeSlot();
  bool Done(const Slot& slot) const;
  xcclResult_t Failed(xcclResult_t result, const char* format, ...);
  xcclResult_t TestSlot(NetRequest* request, bool* done, size_t* bytes);
  Slot* SlotOf(NetRequest* request);
  int data_sockets() const { return static_cast<int>(sockets_.size()) - 1; }

  std::vector<Socket> sockets_;  // [0]: control, then data
  std::string peer_;             // the other end, for messages
  std::array<Slot, kMaxRequests> slots_;
  std::deque<int> order_;  // used slots, oldest first
  StickyFailure failure_;
};

class SocketSendComm final : public NetSendComm, private SocketStream {
 public:
  // `sockets` still connecting (Socket::StartConnect); `hello` goes first on each, its index in
  // the hello's last word.
  SocketSendComm(std::vector<Socket> sockets, std::string peer, std::vector<uint8_t> hello);
  xcclResult_t Ready(bool* ready) override;
  xcclResult_t Register(void*, size_t, NetMemory type, NetRegistration** out) override;
  void Deregister(NetRegistration*) override {}
  xcclResult_t Isend(const void* data, size_t bytes, uint32_t tag, NetRegistration* registration,
                     NetRequest** request) override;
  xcclResult_t Test(NetRequest* request, bool* done, size_t* bytes) override;
  int64_t unacknowledged_bytes() const override;

 private:
  xcclResult_t Progress();
  std::vector<uint8_t> hello_;
  std::vector<bool> connected_;
  std::vector<size_t> hello_sent_;
  bool ready_ = false;
};

class SocketRecvComm final : public NetRecvComm, private SocketStream {
 public:
  SocketRecvComm(std::vector<Socket> sockets, std::string peer);
  xcclResult_t Register(void*, size_t, NetMemory type, NetRegistration** out) override;
  void Deregister(NetRegistration*) override {}
  xcclResult_t Irecv(void* data, size_t capacity, uint32_t tag, NetRegistration* registration,
                     NetRequest** request) override;
  xcclResult_t Iflush(void*, size_t, NetRegistration*, NetRequest** request) override {
    *request = nullptr;  // host memory: nothing to flush
    return xcclSuccess;
  }
  xcclResult_t Test(NetRequest* request, bool* done, size_t* bytes) override;
  uint64_t bytes_arrived() const override { return arrived_; }

 private:
  xcclResult_t Progress();
  uint64_t arrived_ = 0;
};

}  // namespace xccl
