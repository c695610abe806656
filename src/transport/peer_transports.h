// This rank's transports, one chosen per peer (docs/ARCHITECTURE.md, "Transports per peer"): the
// node transport (shm on the host platform, p2p on GPUs) for the ranks of this node and the net
// transport for the ranks of other nodes. The ops see one Transport: a peer's connection comes
// from the transport that reaches it, and every wait stays with the node transport, which owns
// this rank's slots whoever raises them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/topology.h"
#include "transport/net/net_transport.h"
#include "transport/transport.h"

namespace xccl {

class PeerTransports final : public Transport, public DirectPuts {
 public:
  // `net` and `endpoint` are null on one node; `endpoint` where the net endpoint is not the node
  // transport itself (GPUs: DeviceNetEndpoint). Destroyed net first, then the endpoint, then the
  // node transport: the proxy stops before the memory it lands in goes.
  PeerTransports(const Topology& topology, std::unique_ptr<Transport> node,
                 std::unique_ptr<NetEndpoint> endpoint, std::unique_ptr<NetTransport> net);
  ~PeerTransports() override;

  const char* name() const override { return node_->name(); }
  int queue_count() const override { return node_->queue_count(); }
  Connection& connection(int peer) override {
    return IsRemote(peer) ? net_->connection(peer) : node_->connection(peer);
  }
  DirectPuts* direct_puts() override { return node_puts_ != nullptr ? this : nullptr; }
  const DeviceView* device_view() const override { return node_->device_view(); }

  xcclResult_t BeginOperation(xcclStream_t stream, bool queued, PlatformFailure* failure) override;
  xcclResult_t EnterLaunchGate(xcclStream_t stream, size_t region_bytes,
                               PlatformFailure* failure) override {
    return node_->EnterLaunchGate(stream, region_bytes, failure);
  }
  xcclResult_t LeaveLaunchGate(bool wait, PlatformFailure* failure) override {
    return node_->LeaveLaunchGate(wait, failure);
  }
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;
  xcclResult_t WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                        const Deadline& deadline, xcclStream_t stream,
                        PlatformFailure* failure) override;
  xcclResult_t WaitSlotsRaisedBy(int first_slot, uint32_t epoch, const std::vector<int>& raiser,
                                 const char* what, const Deadline& deadline, xcclStream_t stream,
                                 PlatformFailure* failure) override;
  xcclResult_t Copy(void* dst, const void* src, size_t bytes, xcclStream_t stream) override {
    return node_->Copy(dst, src, bytes, stream);
  }
  size_t slice_bytes() const override { return node_->slice_bytes(); }
  size_t slice_cap_bytes() const override { return node_->slice_cap_bytes(); }
  // Across nodes also the net endpoint's landing memory per rank.
  size_t region_put_limit() const override;
  // What a rank of another node put waits where the net endpoint landed it.
  const char* Received(int carrier, size_t region_offset) const override;
  bool PutEnd(int slot, uint32_t epoch, size_t* end) const override {
    return node_->PutEnd(slot, epoch, end);
  }
  xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local,
                              std::unique_ptr<PeerMappings>* out) override {
    return node_->MapPeerBuffers(bootstrap, local, out);
  }
  int RootCause(int failed_peer) const override { return node_->RootCause(failed_peer); }
  xcclResult_t PollAsyncFailure(PlatformFailure* failure) override;
  // This node's peers see the failure first, then the other nodes learn its cause.
  void Abort(int failed_peer) override;

  // DirectPuts: the node transport's receive buffers; a put to a rank of another node is its
  // net connection's.
  void PublishRecvRange(uint32_t first, uint32_t last, void* recv, size_t bytes, size_t block,
                        size_t chunk, int block_signal) override {
    node_puts_->PublishRecvRange(first, last, recv, bytes, block, chunk, block_signal);
  }
  void CloseRecvBuffer(uint32_t epoch, const Deadline& deadline) override {
    node_puts_->CloseRecvBuffer(epoch, deadline);
  }
  xcclResult_t PutNow(int peer, uint32_t epoch, const void* src, size_t dst_offset, size_t bytes,
                      int signal_slot, PlatformFailure* failure) override;

 private:
  bool IsRemote(int peer) const { return net_ != nullptr && net_->IsRemote(peer); }

  Topology topology_;
  std::unique_ptr<Transport> node_;
  DirectPuts* node_puts_;
  std::unique_ptr<NetEndpoint> endpoint_;
  std::unique_ptr<NetTransport> net_;
  std::atomic<bool> net_state_logged_{false};
};

}  // namespace xccl
