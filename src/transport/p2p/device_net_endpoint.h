// GPU ranks across nodes (docs/ARCHITECTURE.md, "GPU ranks across nodes"): the net transport's
// endpoint on the cuda and hip platforms. Everything is staged through pinned host memory and
// stream-ordered: an inbox put copies the block into this rank's send staging for that peer on
// the operation's stream, then a one-thread kernel on the same stream writes the op into the
// trigger FIFO the proxy polls, with the device epoch of that point (so a captured graph sends
// each replay's). The peer's proxy lands the bytes in its receive staging for this rank, which
// is that peer's inbox for this rank (the receiver copies out of it on its own stream), and
// raises the slot in host-mapped memory with a CPU store after the bytes; the node transport's
// device waits read the slots of remote ranks there. The staging is reused only after the
// closing barrier of the operation that used it (both ends have passed it), so no flow control
// of its own is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "platform/gpu.h"
#include "transport/device_view.h"
#include "transport/net/net_transport.h"
#include "transport/p2p/kept_launch_error.h"
#include "transport/p2p/net_trigger_feed.h"
#include "transport/transport.h"

namespace xccl {

class DeviceNetEndpoint final : public NetEndpoint {
 public:
  // The most a net op carries, so the pinned staging per remote peer and direction: also the
  // inbox limit (the largest piece an operation puts per source) of a communicator that spans
  // nodes.
  static constexpr size_t kNetPieceBytes = size_t(4) << 20;

  // `view`: the node transport's (the device epoch, the timeout, the failure record the trigger
  // kernels use); `link_failed`: where a failed link is told, so that the device waits end.
  DeviceNetEndpoint(const Topology& topology, const Params& params, const WindowGeometry& geometry,
                    const DeviceView* view,
                    std::function<void(int, const PlatformFailure&)> link_failed);
  ~DeviceNetEndpoint() override;
  DeviceNetEndpoint(const DeviceNetEndpoint&) = delete;
  DeviceNetEndpoint& operator=(const DeviceNetEndpoint&) = delete;

  // On this rank's device: the remote slots, the receive and send staging, the trigger FIFO.
  xcclResult_t Create();
  // Slots raised by ranks of other nodes, as the device reads them.
  const uint32_t* remote_slots_device() const { return remote_slots_device_; }

  // NetEndpoint: a piece of each remote rank's slice (its start) lands in pinned memory.
  size_t net_slice_bytes() const override { return net_piece_; }
  const char* net_slice_setting() const override { return "XCCL_WINDOW_BYTES"; }
  char* NetRegion(int peer, size_t slice_offset) const override {
    return recv_staging_ + remote_index_[peer] * net_piece_ + slice_offset;
  }
  // The proxy thread; no GPU runtime call.
  void NetRaise(int peer, const NetOp& op) override;
  void NetLinkFailed(int peer, const PlatformFailure& failure) override;
  std::unique_ptr<Connection> NetConnect(NetTransport* net, int peer) override;
  void NetBegin(xcclStream_t stream) override { stream_ = static_cast<gpuStream_t>(stream); }
  TriggerFeed* net_feed() override { return &trigger_feed_; }
  // The device finishes every trigger still on a stream (the destroy waits for it anyway); then
  // the proxy takes every entry they wrote.
  void NetSettle() override;
  xcclResult_t NetDrain(const Deadline& deadline) override;
  xcclResult_t NetTakeLaunchFailure(PlatformFailure* failure) override {
    return TakeLaunchFailure(failure);
  }
  void NetGiveUp() override { trigger_feed_.GiveUp(); }
  std::string NetDescribe() const override { return trigger_feed_.Describe(); }

  // The connections' work, on the operation's stream: `bytes` from `src` (device) into the send
  // staging for `peer`, then the trigger that hands the op to the proxy.
  void QueueNetOp(int peer, NetOp::Kind kind, int slot, const void* src, size_t bytes);
  // Launch-time failures of the runtime are kept until the operation's flush reports them.
  void Check(gpuError_t err, const char* what) { launch_error_.Keep(err, what); }
  xcclResult_t TakeLaunchFailure(PlatformFailure* failure) {
    return launch_error_.Take(topology_.rank, failure);
  }
  // Where this rank's slice of a peer's region starts (the window's inbox per source).
  size_t own_slice() const { return topology_.rank * geometry_.inbox_bytes; }

 private:
  char* SendStaging(int peer) const { return send_staging_ + remote_index_[peer] * net_piece_; }

  Topology topology_;
  Params params_;
  WindowGeometry geometry_;
  int device_;
  const DeviceView* view_;
  std::function<void(int, const PlatformFailure&)> link_failed_;
  bool kernel_copies_ = false;  // ranks share this rank's device (copy_kernel.h)
  gpuStream_t stream_ = nullptr;
  KeptLaunchError launch_error_;
  std::vector<int> remote_index_;  // [rank] -> its index among the remote peers, -1 on this node
  int remote_count_ = 0;
  size_t net_piece_ = 0;
  char* pinned_ = nullptr;            // one host-mapped allocation for all of the below
  uint32_t* remote_slots_ = nullptr;  // the signalled slots, raised by remote ranks
  const uint32_t* remote_slots_device_ = nullptr;
  char* recv_staging_ = nullptr;  // [remote index] -> inbox of that rank's pieces
  char* send_staging_ = nullptr;  // [remote index] -> this rank's piece for it
  NetTriggerFeed trigger_feed_;
};

}  // namespace xccl
