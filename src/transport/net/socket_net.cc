#include "transport/net/socket_net.h"

#include <sys/random.h>

#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/socket.h"
#include "transport/net/listener_handle.h"
#include "transport/net/socket_stream.h"
#include "transport/net/wire_word.h"

namespace xccl {

namespace {

constexpr uint64_t kHandleMagic = 0x5354454e4c434358ull;  // "XCCLNETS"
constexpr uint64_t kHelloMagic = 0x4f4c4c454843434eull;
constexpr size_t kHelloBytes = 24;  // magic, comm id, nsocks, index

int LinkSpeedMbps(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  int speed = 0;
  return (in >> speed) && speed > 0 ? speed : 0;
}

class SocketListenComm final : public NetListenComm {
 public:
  SocketListenComm(Socket listener, int nsocks) : listener_(std::move(listener)), nsocks_(nsocks) {}

  // Takes every queued connection, reads hellos, and hands out the first connector whose
  // sockets have all arrived. A connection with a bad hello is dropped.
  xcclResult_t Accept(std::unique_ptr<NetRecvComm>* out) {
    for (;;) {
      Pending p;
      const IoStatus s = listener_.Accept(Deadline(0), &p.socket, &p.from);
      if (s.code == IoStatus::kTimeout) break;
      if (!s.ok()) return Fail(xcclSystemError, "net socket: accept: %s", s.Describe().c_str());
      pending_.push_back(std::move(p));
    }
    for (size_t i = 0; i < pending_.size();) {
      Pending& p = pending_[i];
      size_t got = 0;
      const IoStatus s = p.socket.RecvSome(p.hello + p.got, kHelloBytes - p.got, &got);
      p.got += got;
      bool drop = !s.ok();
      if (!drop && p.got == kHelloBytes) {
        const uint64_t id = GetWire(p.hello + 8, 8);
        const int nsocks = static_cast<int>(GetWire(p.hello + 16, 4));
        const int index = static_cast<int>(GetWire(p.hello + 20, 4));
        drop =
            GetWire(p.hello, 8) != kHelloMagic || nsocks != nsocks_ || index < 0 || index > nsocks_;
        if (!drop) {
          Group& group = groups_[id];
          group.sockets.resize(nsocks_ + 1);
          drop = group.sockets[index].valid();  // the same index twice
          if (!drop) {
            group.sockets[index] = std::move(p.socket);
            group.peer = FormatAddress(p.from);
            ++group.arrived;
          }
        }
        if (drop)
          XCCL_WARN(kLogInit, "net socket: dropped a connection from %s with a bad greeting",
                    FormatAddress(p.from).c_str());
        pending_.erase(pending_.begin() + i);
        continue;
      }
      if (drop) {
        pending_.erase(pending_.begin() + i);
        continue;
      }
      ++i;
    }
    for (auto it = groups_.begin(); it != groups_.end(); ++it) {
      if (it->second.arrived != nsocks_ + 1) continue;
      *out = std::make_unique<SocketRecvComm>(std::move(it->second.sockets), it->second.peer);
      groups_.erase(it);
      break;
    }
    return xcclSuccess;
  }

 private:
  struct Pending {
    Socket socket;
    sockaddr_storage from{};
    uint8_t hello[kHelloBytes] = {};
    size_t got = 0;
  };
  struct Group {
    std::vector<Socket> sockets;
    std::string peer;
    int arrived = 0;
  };
  Socket listener_;
  int nsocks_;
  std::vector<Pending> pending_;
  std::map<uint64_t, Group> groups_;
};

class SocketNet final : public NetBackend {
 public:
  SocketNet(sockaddr_storage address, std::string ifname, int nsocks)
      : address_(address), ifname_(std::move(ifname)), nsocks_(nsocks) {}

  const char* name() const override { return "socket"; }
  int device_count() const override { return 1; }

  xcclResult_t GetProperties(int device, NetProperties* out) const override {
    XCCL_TRY(CheckDevice(device));
    NetProperties p;
    p.name = ifname_;
    p.speed_mbps = LinkSpeedMbps(ifname_);
    p.max_requests = SocketStream::kMaxRequests;
    *out = p;
    return xcclSuccess;
  }

  xcclResult_t Listen(int device, NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    XCCL_TRY(CheckDevice(device));
    Socket listener;
    XCCL_TRY(ListenWithHandle(address_, kHandleMagic, handle, &listener));
    PutWire(handle->bytes + kListenerHandleBytes, static_cast<uint64_t>(nsocks_), 4);
    *out = std::make_unique<SocketListenComm>(std::move(listener), nsocks_);
    return xcclSuccess;
  }

  xcclResult_t Connect(int device, const NetHandle& handle,
                       std::unique_ptr<NetSendComm>* out) override {
    XCCL_TRY(CheckDevice(device));
    sockaddr_storage to{};
    if (!ReadListenerHandle(handle, kHandleMagic, &to))
      return Fail(xcclInvalidArgument, "net socket: the handle is not a socket listener's");
    const int nsocks = static_cast<int>(GetWire(handle.bytes + kListenerHandleBytes, 4));
    if (nsocks != nsocks_)
      return Fail(xcclInvalidUsage,
                  "net socket: the listener uses %d data sockets, this rank %d "
                  "(XCCL_SOCKET_NSOCKS must be the same on every rank)",
                  nsocks, nsocks_);
    uint64_t id = 0;
    if (getrandom(&id, sizeof(id), 0) != sizeof(id))
      return Fail(xcclSystemError, "net socket: getrandom: %s", strerror(errno));
    std::vector<uint8_t> hello(kHelloBytes, 0);
    PutWire(hello.data(), kHelloMagic, 8);
    PutWire(hello.data() + 8, id, 8);
    PutWire(hello.data() + 16, static_cast<uint64_t>(nsocks_), 4);
    std::vector<Socket> sockets(nsocks_ + 1);
    for (Socket& s : sockets) {
      const IoStatus started = Socket::StartConnect(to, &s);
      if (!started.ok())
        return Fail(xcclSystemError, "net socket: connecting to %s: %s", FormatAddress(to).c_str(),
                    started.Describe().c_str());
    }
    *out = std::make_unique<SocketSendComm>(std::move(sockets), FormatAddress(to), hello);
    return xcclSuccess;
  }

  xcclResult_t Accept(NetListenComm* listener, std::unique_ptr<NetRecvComm>* out) override {
    return static_cast<SocketListenComm*>(listener)->Accept(out);
  }

 private:
  xcclResult_t CheckDevice(int device) const {
    if (device != 0)
      return Fail(xcclInvalidArgument, "net socket: device %d does not exist (one device: %s)",
                  device, ifname_.c_str());
    return xcclSuccess;
  }

  sockaddr_storage address_;
  std::string ifname_;
  int nsocks_;
};

}  // namespace

xcclResult_t CreateSocketNet(const std::string& ifname_spec, int nsocks,
                             std::unique_ptr<NetBackend>* out) {
  if (nsocks < 1 || nsocks > 16)
    return Fail(xcclInvalidArgument, "net socket: %d data sockets (1 to 16)", nsocks);
  sockaddr_storage address{};
  std::string ifname;
  XCCL_TRY(FindInterfaceAddress(ifname_spec, &address, &ifname));
  XCCL_INFO(kLogInit, "net socket: interface %s (%s), %d data sockets per connection",
            ifname.c_str(), FormatAddress(address).c_str(), nsocks);
  *out = std::make_unique<SocketNet>(address, ifname, nsocks);
  return xcclSuccess;
}

}  // namespace xccl
