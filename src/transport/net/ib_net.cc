#include "transport/net/ib_net.h"

#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/socket.h"
#include "transport/net/ib_comm.h"
#include "transport/net/ib_devices.h"
#include "transport/net/ib_verbs_loader.h"
#include "transport/net/listener_handle.h"
#include "transport/net/wire_word.h"

namespace xccl {

namespace {

constexpr uint64_t kHandleMagic = 0x4954454e4c434358ull;  // "XCCLNETI"

// Lane speed in Mb/s by ibv_port_attr.active_speed, times the lanes of active_width.
int PortSpeedMbps(const ibv_port_attr& attr) {
  int lane = 0;
  switch (attr.active_speed) {
    case 1:
      lane = 2500;
      break;
    case 2:
      lane = 5000;
      break;
    case 4:
    case 8:
      lane = 10000;
      break;
    case 16:
      lane = 14000;
      break;
    case 32:
      lane = 25000;
      break;
    case 64:
      lane = 50000;
      break;
    case 128:
      lane = 100000;
      break;
  }
  int lanes = 0;
  switch (attr.active_width) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
  }
  return lane * lanes;
}

// A connector whose setup is under way: its info, then this end's QP and answer, then ready.
struct Pending {
  Socket socket;
  std::string peer;
  uint8_t in[kIbInfoBytes] = {};
  uint8_t out[kIbInfoBytes] = {};
  size_t got = 0, sent = 0, ready_got = 0;
  uint8_t ready[8] = {};
  IbEndpointInfo remote;
  std::unique_ptr<IbQueuePair> qp;
};

class IbListenComm final : public NetListenComm {
 public:
  IbListenComm(Socket listener, std::shared_ptr<IbPort> port)
      : listener_(std::move(listener)), port_(std::move(port)) {}

  xcclResult_t Accept(std::unique_ptr<NetRecvComm>* out) {
    for (;;) {
      auto p = std::make_unique<Pending>();
      sockaddr_storage from{};
      const IoStatus s = listener_.Accept(Deadline(0), &p->socket, &from);
      if (s.code == IoStatus::kTimeout) break;
      if (!s.ok()) return Fail(xcclSystemError, "net ib: accept: %s", s.Describe().c_str());
      p->peer = FormatAddress(from);
      pending_.push_back(std::move(p));
    }
    for (size_t i = 0; i < pending_.size();) {
      std::string dropped;
      const xcclResult_t r = Step(*pending_[i], &dropped);
      if (r != xcclSuccess) return r;  // this end's verbs failed: no use going on
      if (!dropped.empty()) {
        XCCL_WARN(kLogInit, "net ib: dropped a connection from %s: %s", pending_[i]->peer.c_str(),
                  dropped.c_str());
        pending_.erase(pending_.begin() + i);
        continue;
      }
      Pending& p = *pending_[i];
      if (p.ready_got == sizeof(p.ready)) {
        *out = std::make_unique<IbRecvComm>(std::move(p.qp), std::move(p.socket), p.peer,
                                            p.remote.fifo_addr, p.remote.fifo_rkey);
        pending_.erase(pending_.begin() + i);
        return xcclSuccess;
      }
      ++i;
    }
    return xcclSuccess;
  }

 private:
  // Moves one connector's setup on; *dropped says why a connector is given up.
  xcclResult_t Step(Pending& p, std::string* dropped) {
    size_t n = 0;
    if (p.got < kIbInfoBytes) {
      const IoStatus s = p.socket.RecvSome(p.in + p.got, kIbInfoBytes - p.got, &n);
      p.got += n;
      if (!s.ok()) return *dropped = s.Describe(), xcclSuccess;
      if (p.got < kIbInfoBytes) return xcclSuccess;
      if (!UnpackEndpointInfo(p.in, &p.remote) || p.remote.max_requests != kIbMaxRequests ||
          p.remote.fifo_addr == 0)
        return *dropped = "not an ib send comm's greeting", xcclSuccess;
      // RTS before answering: the sender writes data once it has the answer.
      XCCL_TRY(IbQueuePair::Create(port_, kIbMaxRequests, IbRecvComm::kPostedReceives,
                                   sizeof(IbCtsEntry), &p.qp));
      XCCL_TRY(p.qp->ToInit(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
      XCCL_TRY(IbRecvComm::PostReceives(p.qp.get(), IbRecvComm::kPostedReceives));
      XCCL_TRY(p.qp->Connect(p.remote));
      IbEndpointInfo mine = p.qp->LocalInfo();
      mine.max_requests = kIbMaxRequests;
      PackEndpointInfo(mine, p.out);
    }
    if (p.sent < kIbInfoBytes) {
      const IoStatus s = p.socket.SendSome(p.out + p.sent, kIbInfoBytes - p.sent, &n);
      p.sent += n;
      if (!s.ok()) return *dropped = s.Describe(), xcclSuccess;
      if (p.sent < kIbInfoBytes) return xcclSuccess;
    }
    if (p.ready_got < sizeof(p.ready)) {
      const IoStatus s =
          p.socket.RecvSome(p.ready + p.ready_got, sizeof(p.ready) - p.ready_got, &n);
      p.ready_got += n;
      if (!s.ok()) return *dropped = s.Describe(), xcclSuccess;
      if (p.ready_got == sizeof(p.ready) && GetWire(p.ready, 8) != kIbReadyWord)
        return *dropped = "a bad ready word", xcclSuccess;
    }
    return xcclSuccess;
  }

  Socket listener_;
  std::shared_ptr<IbPort> port_;
  std::vector<std::unique_ptr<Pending>> pending_;
};

class IbNet final : public NetBackend {
 public:
  IbNet(std::vector<std::shared_ptr<IbPort>> ports, sockaddr_storage address)
      : ports_(std::move(ports)), address_(address) {}

  const char* name() const override { return "ib"; }
  int device_count() const override { return static_cast<int>(ports_.size()); }

  xcclResult_t GetProperties(int device, NetProperties* out) const override {
    XCCL_TRY(CheckDevice(device));
    const IbPort& port = *ports_[device];
    NetProperties p;
    p.name = port.name() + ":" + std::to_string(port.port());
    p.speed_mbps = PortSpeedMbps(port.attr());
    p.host_memory = true;
    p.device_memory = false;  // no dma-buf export of GPU memory yet (IbComm::RegisterMemory)
    p.max_requests = kIbMaxRequests;
    *out = p;
    return xcclSuccess;
  }

  xcclResult_t Listen(int device, NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    XCCL_TRY(CheckDevice(device));
    Socket listener;
    XCCL_TRY(ListenWithHandle(address_, kHandleMagic, handle, &listener));
    *out = std::make_unique<IbListenComm>(std::move(listener), ports_[device]);
    return xcclSuccess;
  }

  xcclResult_t Connect(int device, const NetHandle& handle,
                       std::unique_ptr<NetSendComm>* out) override {
    XCCL_TRY(CheckDevice(device));
    sockaddr_storage to{};
    if (!ReadListenerHandle(handle, kHandleMagic, &to))
      return Fail(xcclInvalidUsage,
                  "net ib: the peer's handle is not an ib listener's (did it choose another "
                  "backend? XCCL_NET=auto picks ib only where a device exists: set XCCL_NET to "
                  "the same backend on every node)");
    Socket socket;
    const IoStatus started = Socket::StartConnect(to, &socket);
    if (!started.ok())
      return Fail(xcclSystemError, "net ib: connecting to %s: %s", FormatAddress(to).c_str(),
                  started.Describe().c_str());
    return IbSendComm::Create(ports_[device], std::move(socket), FormatAddress(to), out);
  }

  xcclResult_t Accept(NetListenComm* listener, std::unique_ptr<NetRecvComm>* out) override {
    if (listener == nullptr || out == nullptr)
      return Fail(xcclInvalidArgument, "net ib: Accept without a listener");
    return static_cast<IbListenComm*>(listener)->Accept(out);
  }

 private:
  xcclResult_t CheckDevice(int device) const {
    if (device < 0 || device >= device_count())
      return Fail(xcclInvalidArgument, "net ib: device %d does not exist (%d ports)", device,
                  device_count());
    return xcclSuccess;
  }

  std::vector<std::shared_ptr<IbPort>> ports_;
  sockaddr_storage address_;
};

}  // namespace

bool OpenIbNet(const IbNetOptions& options, std::unique_ptr<NetBackend>* out, std::string* why) {
  std::shared_ptr<const IbVerbs> verbs;
  if (!LoadIbVerbs(options.library, &verbs, why)) return false;
  std::vector<std::shared_ptr<IbPort>> ports;
  if (!OpenIbPorts(verbs, options.hca, options.gid_index, &ports, why)) return false;
  sockaddr_storage address{};
  std::string ifname;
  if (FindInterfaceAddress(options.socket_ifname, &address, &ifname) != xcclSuccess) {
    *why = "no interface for the connection setup sockets: " + ThreadLastError();
    return false;
  }
  std::string names;
  for (const auto& port : ports) names += (names.empty() ? "" : ", ") + port->Describe();
  XCCL_INFO(kLogInit, "net ib: %s through %s, connection setup over %s (%s)", names.c_str(),
            verbs->path.c_str(), ifname.c_str(), FormatAddress(address).c_str());
  *out = std::make_unique<IbNet>(std::move(ports), address);
  return true;
}

}  // namespace xccl
