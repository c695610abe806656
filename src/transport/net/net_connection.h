// A peer on another node: its puts, inbox puts and signals go to the proxy (src/proxy), which
// sends them over the net backend; the peer's proxy lands them in that peer's own memory and
// raises its slot.
#pragma once

#include "transport/connection.h"
#include "transport/net/proxy/proxy.h"

namespace xccl {

class NetConnection final : public Connection {
 public:
  NetConnection(Proxy* proxy, int peer) : Connection(peer, TransportKind::kNet), proxy_(proxy) {}
  // `dst` is always nullptr: the bytes land in the receive buffer the peer published for
  // `epoch` (the peer's proxy waits for it).
  void Put(uint32_t epoch, void* dst, size_t dst_offset, const void* src, size_t bytes,
           int signal_slot) override;
  // `inbox_of` is this rank (the peer lands the bytes in its inbox for the link's peer).
  void InboxPut(uint32_t epoch, int inbox_of, const void* src, size_t bytes,
                int signal_slot) override;
  void Signal(int slot, uint32_t epoch) override;
  // Until the proxy has sent everything queued for the peer (the sources may then be reused).
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;

 private:
  void Queue(NetOp::Kind kind, uint32_t epoch, int slot, size_t offset, const void* src,
             size_t bytes);
  Proxy* proxy_;
};

}  // namespace xccl
