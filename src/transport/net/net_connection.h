// A peer on another node: its puts, region puts and signals go to the proxy (net/proxy), which
// sends them over the net backend; the peer's proxy lands them in that peer's own memory and
// raises its slot.
#pragma once

#include "transport/connection.h"
#include "transport/net/proxy/proxy.h"

namespace xccl {

class NetConnection final : public Connection {
 public:
  // `own_slice`: where this rank's slice of a peer's region starts (rank * slice bytes).
  NetConnection(Proxy* proxy, int peer, size_t own_slice)
      : Connection(peer, TransportKind::kNet), proxy_(proxy), own_slice_(own_slice) {}
  // `dst` is always nullptr: the bytes land in the receive buffer the peer published for
  // `epoch` (the peer's proxy waits for it).
  void Put(uint32_t epoch, void* dst, size_t dst_offset, const void* src, size_t bytes,
           int signal_slot) override;
  // Into this rank's own slice of the peer's region (the peer's landing refuses any other).
  void PutToRegion(uint32_t epoch, size_t region_offset, const void* src, size_t bytes,
                   int signal_slot) override;
  void Signal(int slot, uint32_t epoch) override;
  // Until the proxy has sent everything queued for the peer (the sources may then be reused).
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;

 private:
  void Queue(NetOp::Kind kind, uint32_t epoch, int slot, size_t offset, const void* src,
             size_t bytes);
  Proxy* proxy_;
  size_t own_slice_;
};

}  // namespace xccl
