#include "transport/net/socket_stream.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cstdarg>
#include <cstring>

#include "base/error.h"
#include "transport/net/wire_word.h"

namespace xccl {

namespace {

// The one registration the socket backend hands out: host memory needs none.
NetRegistration* HostRegistration() {
  static char token;
  return reinterpret_cast<NetRegistration*>(&token);
}

xcclResult_t RegisterHostOnly(NetMemory type, NetRegistration** out) {
  if (type != NetMemory::kHost)
    return Fail(xcclInvalidUsage, "net socket backend: only host memory can be registered");
  *out = HostRegistration();
  return xcclSuccess;
}

}  // namespace

// ---- Stripes ----

Stripes Stripes::Of(size_t bytes, int nsocks) {
  Stripes s;
  s.count = bytes < kMinStriped ? 1 : nsocks;
  s.stripe = (bytes + s.count - 1) / s.count;
  s.stripe = (s.stripe + kAlign - 1) / kAlign * kAlign;
  return s;
}

size_t Stripes::Begin(int i, size_t bytes) const { return std::min(bytes, i * stripe); }
size_t Stripes::End(int i, size_t bytes) const { return std::min(bytes, (i + 1) * stripe); }

// ---- SocketStream ----

SocketStream::SocketStream(std::vector<Socket> sockets, std::string peer)
    : sockets_(std::move(sockets)), peer_(std::move(peer)) {}

SocketStream::Slot* SocketStream::FreeSlot() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].used) continue;
    slots_[i] = Slot{};
    slots_[i].used = true;
    order_.push_back(static_cast<int>(i));
    return &slots_[i];
  }
  return nullptr;
}

bool SocketStream::Done(const Slot& slot) const {
  if (!slot.header_done) return false;
  for (int i = 0; i < slot.stripes.count; ++i)
    if (slot.moved[i] < slot.stripes.End(i, slot.bytes) - slot.stripes.Begin(i, slot.bytes))
      return false;
  return true;
}

xcclResult_t SocketStream::Failed(xcclResult_t result, const char* format, ...) {
  va_list args;
  va_start(args, format);
  failure_.Record(result, format, args);
  va_end(args);
  // Quiet: a peer closing at its destroy is no failure; whoever waits on the comm reports it.
  return failure_.ReportQuietly();
}

SocketStream::Slot* SocketStream::SlotOf(NetRequest* request) {
  for (Slot& slot : slots_)
    if (reinterpret_cast<NetRequest*>(&slot) == request && slot.used) return &slot;
  return nullptr;
}

xcclResult_t SocketStream::TestSlot(NetRequest* request, bool* done, size_t* bytes) {
  Slot* slot = SlotOf(request);
  if (slot == nullptr)
    return Fail(xcclInvalidArgument, "net socket: request %p is not in flight on this comm",
                static_cast<void*>(request));
  *done = Done(*slot);
  if (!*done) return xcclSuccess;
  if (bytes != nullptr) *bytes = slot->bytes;
  slot->used = false;
  const int index = static_cast<int>(slot - slots_.data());
  order_.erase(std::find(order_.begin(), order_.end(), index));
  return xcclSuccess;
}

// ---- SocketSendComm ----

SocketSendComm::SocketSendComm(std::vector<Socket> sockets, std::string peer,
                               std::vector<uint8_t> hello)
    : SocketStream(std::move(sockets), std::move(peer)),
      hello_(std::move(hello)),
      connected_(sockets_.size(), false),
      hello_sent_(sockets_.size(), 0) {}

xcclResult_t SocketSendComm::Ready(bool* ready) {
  if (failure_.failed()) return failure_.Report();
  for (size_t i = 0; i < sockets_.size() && !ready_; ++i) {
    if (!connected_[i]) {
      bool done = false;
      const IoStatus s = sockets_[i].ConnectDone(&done);
      if (!s.ok())
        return Failed(xcclRemoteError, "net socket: connecting to %s: %s", peer_.c_str(),
                      s.Describe().c_str());
      if (!done) continue;
      connected_[i] = true;
    }
    // The hello names the socket's index in its last word.
    std::vector<uint8_t> mine = hello_;
    PutWire(mine.data() + mine.size() - 4, i, 4);
    while (hello_sent_[i] < mine.size()) {
      size_t sent = 0;
      const IoStatus s =
          sockets_[i].SendSome(mine.data() + hello_sent_[i], mine.size() - hello_sent_[i], &sent);
      if (!s.ok())
        return Failed(xcclRemoteError, "net socket: greeting %s: %s", peer_.c_str(),
                      s.Describe().c_str());
      if (sent == 0) break;
      hello_sent_[i] += sent;
    }
  }
  if (!ready_) {
    ready_ = true;
    for (size_t i = 0; i < sockets_.size(); ++i)
      ready_ = ready_ && connected_[i] && hello_sent_[i] == hello_.size();
  }
  *ready = ready_;
  return xcclSuccess;
}

xcclResult_t SocketSendComm::Register(void*, size_t, NetMemory type, NetRegistration** out) {
  return RegisterHostOnly(type, out);
}

xcclResult_t SocketSendComm::Isend(const void* data, size_t bytes, uint32_t tag,
                                   NetRegistration* /*registration*/, NetRequest** request) {
  *request = nullptr;
  if (failure_.failed()) return failure_.Report();
  bool ready = false;
  XCCL_TRY(Ready(&ready));
  if (!ready) return xcclSuccess;
  Slot* slot = FreeSlot();
  if (slot == nullptr) return xcclSuccess;
  slot->data = const_cast<char*>(static_cast<const char*>(data));
  slot->bytes = bytes;
  slot->tag = tag;
  slot->stripes = Stripes::Of(bytes, data_sockets());
  PutWire(slot->header, tag, 4);
  PutWire(slot->header + 8, bytes, 8);
  *request = reinterpret_cast<NetRequest*>(slot);
  return Progress();
}

xcclResult_t SocketSendComm::Progress() {
  if (failure_.failed()) return failure_.Report();
  // Headers in post order on the control socket.
  for (int index : order_) {
    Slot& slot = slots_[index];
    if (slot.header_done) continue;
    size_t sent = 0;
    const IoStatus s = sockets_[0].SendSome(slot.header + slot.header_moved,
                                            sizeof(slot.header) - slot.header_moved, &sent);
    if (!s.ok())
      return Failed(xcclRemoteError, "net socket: sending to %s: %s", peer_.c_str(),
                    s.Describe().c_str());
    slot.header_moved += sent;
    if (slot.header_moved < sizeof(slot.header)) break;
    slot.header_done = true;
  }
  // Each data socket carries its stripes of the messages in post order.
  for (int d = 0; d < data_sockets(); ++d) {
    for (int index : order_) {
      Slot& slot = slots_[index];
      if (d >= slot.stripes.count) continue;
      const size_t begin = slot.stripes.Begin(d, slot.bytes);
      const size_t length = slot.stripes.End(d, slot.bytes) - begin;
      if (slot.moved[d] == length) continue;
      size_t sent = 0;
      const IoStatus s = sockets_[1 + d].SendSome(slot.data + begin + slot.moved[d],
                                                  length - slot.moved[d], &sent);
      if (!s.ok())
        return Failed(xcclRemoteError, "net socket: sending to %s: %s", peer_.c_str(),
                      s.Describe().c_str());
      slot.moved[d] += sent;
      if (slot.moved[d] < length) break;  // this socket is full: the next message waits
    }
  }
  return xcclSuccess;
}

xcclResult_t SocketSendComm::Test(NetRequest* request, bool* done, size_t* bytes) {
  *done = false;
  XCCL_TRY(Progress());
  return TestSlot(request, done, bytes);
}

// ---- SocketRecvComm ----

SocketRecvComm::SocketRecvComm(std::vector<Socket> sockets, std::string peer)
    : SocketStream(std::move(sockets), std::move(peer)) {}

xcclResult_t SocketRecvComm::Register(void*, size_t, NetMemory type, NetRegistration** out) {
  return RegisterHostOnly(type, out);
}

xcclResult_t SocketRecvComm::Irecv(void* data, size_t capacity, uint32_t tag,
                                   NetRegistration* /*registration*/, NetRequest** request) {
  *request = nullptr;
  if (failure_.failed()) return failure_.Report();
  Slot* slot = FreeSlot();
  if (slot == nullptr) return xcclSuccess;
  slot->data = static_cast<char*>(data);
  slot->capacity = capacity;
  slot->tag = tag;
  *request = reinterpret_cast<NetRequest*>(slot);
  return Progress();
}

xcclResult_t SocketRecvComm::Progress() {
  if (failure_.failed()) return failure_.Report();
  // Headers, in post order: the i-th message belongs to the i-th receive.
  for (int index : order_) {
    Slot& slot = slots_[index];
    if (slot.header_done) continue;
    size_t got = 0;
    const IoStatus s = sockets_[0].RecvSome(slot.header + slot.header_moved,
                                            sizeof(slot.header) - slot.header_moved, &got);
    if (!s.ok())
      return Failed(xcclRemoteError, "net socket: receiving from %s: %s", peer_.c_str(),
                    s.Describe().c_str());
    slot.header_moved += got;
    arrived_ += got;
    if (slot.header_moved < sizeof(slot.header)) break;
    const uint32_t tag = static_cast<uint32_t>(GetWire(slot.header, 4));
    const uint64_t bytes = GetWire(slot.header + 8, 8);
    if (tag != slot.tag)
      return Failed(xcclInvalidUsage,
                    "net socket: %s sent a message tagged %u where this receive expects tag %u",
                    peer_.c_str(), tag, slot.tag);
    if (bytes > slot.capacity)
      return Failed(xcclInvalidUsage, "net socket: %s sent %llu bytes into a receive of %zu bytes",
                    peer_.c_str(), static_cast<unsigned long long>(bytes), slot.capacity);
    slot.bytes = bytes;
    slot.stripes = Stripes::Of(bytes, data_sockets());
    slot.header_done = true;
  }
  for (int d = 0; d < data_sockets(); ++d) {
    for (int index : order_) {
      Slot& slot = slots_[index];
      if (!slot.header_done) break;  // its stripes' sizes are not known yet
      if (d >= slot.stripes.count) continue;
      const size_t begin = slot.stripes.Begin(d, slot.bytes);
      const size_t length = slot.stripes.End(d, slot.bytes) - begin;
      if (slot.moved[d] == length) continue;
      size_t got = 0;
      const IoStatus s =
          sockets_[1 + d].RecvSome(slot.data + begin + slot.moved[d], length - slot.moved[d], &got);
      if (!s.ok())
        return Failed(xcclRemoteError, "net socket: receiving from %s: %s", peer_.c_str(),
                      s.Describe().c_str());
      slot.moved[d] += got;
      arrived_ += got;
      if (slot.moved[d] < length) break;
    }
  }
  return xcclSuccess;
}

xcclResult_t SocketRecvComm::Test(NetRequest* request, bool* done, size_t* bytes) {
  *done = false;
  XCCL_TRY(Progress());
  return TestSlot(request, done, bytes);
}

// The kernel's count of sent bytes the peer has not acknowledged, over every socket (TCP's
// SIOCOUTQ): a starved process still has its kernel acknowledge; a cut path does not.
int64_t SocketSendComm::unacknowledged_bytes() const {
  int64_t total = 0;
  for (const Socket& socket : sockets_) {
    int queued = 0;
    if (!socket.valid() || ioctl(socket.fd(), SIOCOUTQ, &queued) != 0) return -1;
    total += queued;
  }
  return total;
}

}  // namespace xccl
