#include "transport/p2p/device_net_endpoint.h"

#include <algorithm>
#include <utility>

#include "platform/gpu/gpu_call.h"
#include "transport/p2p/copy_kernel.h"
#include "transport/window.h"

namespace xccl {

namespace {

// A peer of another node (see the header): everything stream-ordered on the operation's stream;
// a failure of the link reaches the device waits through the failure record.
class DeviceNetConnection final : public Connection {
 public:
  DeviceNetConnection(DeviceNetEndpoint* endpoint, int peer)
      : Connection(peer, TransportKind::kNet), endpoint_(endpoint) {}
  // Refused (a launch failure of the operation): no buffer of a rank of another node is mapped;
  // an op that puts into mapped buffers refuses communicators that span nodes before it puts.
  void Put(uint32_t /*epoch*/, void* /*dst*/, size_t /*dst_offset*/, const void* /*src*/,
           size_t /*bytes*/, int /*signal_slot*/) override {
    endpoint_->Check(gpuErrorInvalidValue,
                     "a put into a mapped buffer of a rank of another node (nothing is mapped "
                     "across nodes)");
  }
  // At most net_slice_bytes() at the start of this rank's own slice of the peer's region (any
  // other place: a launch failure; the trigger FIFO carries no offset): staged, then sent; lands
  // in the peer's pinned staging for this rank.
  void PutToRegion(uint32_t /*epoch: the device's*/, size_t region_offset, const void* src,
                   size_t bytes, int signal_slot) override {
    if (region_offset != endpoint_->own_slice()) {
      endpoint_->Check(gpuErrorInvalidValue,
                       "a put to a rank of another node outside the start of this rank's slice");
      return;
    }
    endpoint_->QueueNetOp(peer(), NetOp::kRegion, signal_slot, src, bytes);
  }
  void Signal(int slot, uint32_t /*epoch: the device's*/) override {
    endpoint_->QueueNetOp(peer(), NetOp::kSignal, slot, nullptr, 0);
  }
  // Stream-ordered: nothing to wait for; launch failures of the operation so far.
  xcclResult_t Flush(const Deadline& /*deadline*/, PlatformFailure* failure) override {
    return endpoint_->TakeLaunchFailure(failure);
  }

 private:
  DeviceNetEndpoint* endpoint_;
};

}  // namespace

DeviceNetEndpoint::DeviceNetEndpoint(const Topology& topology, const Params& params,
                                     const WindowGeometry& geometry, const DeviceView* view,
                                     std::function<void(int, const PlatformFailure&)> link_failed)
    : topology_(topology),
      params_(params),
      geometry_(geometry),
      device_(topology.ranks[topology.rank].device),
      view_(view),
      link_failed_(std::move(link_failed)),
      kernel_copies_(topology.RanksOnMyDevice() > 1) {}

DeviceNetEndpoint::~DeviceNetEndpoint() {
  int current = -1;
  const bool restore = gpuGetDevice(&current) == gpuSuccess && current != device_;
  if (gpuSetDevice(device_) != gpuSuccess) return;
  trigger_feed_.Release();
  if (pinned_ != nullptr) (void)gpuFreeHost(pinned_);
  if (restore) (void)gpuSetDevice(current);
}

xcclResult_t DeviceNetEndpoint::Create() {
  const int nranks = topology_.nranks;
  XCCL_GPU_TRY(gpuSetDevice(device_));
  remote_index_.assign(nranks, -1);
  for (int peer = 0; peer < nranks; ++peer)
    if (topology_.node_of_rank[peer] != topology_.node_of_rank[topology_.rank])
      remote_index_[peer] = remote_count_++;
  net_piece_ = std::min(geometry_.inbox_bytes, kNetPieceBytes);
  // The signalled slots in whole pages, then the staging.
  const size_t control = SlotPageBytes(geometry_.signalled_slots);
  const size_t bytes = control + 2 * static_cast<size_t>(remote_count_) * net_piece_;
  void* host = nullptr;
  XCCL_GPU_TRY(gpuHostAlloc(&host, bytes, gpuHostAllocMapped));
  pinned_ = static_cast<char*>(host);
  remote_slots_ = reinterpret_cast<uint32_t*>(pinned_);
  for (int i = 0; i < geometry_.signalled_slots; ++i) remote_slots_[i] = params_.epoch_base;
  recv_staging_ = pinned_ + control;
  send_staging_ = recv_staging_ + remote_count_ * net_piece_;
  void* device = nullptr;
  XCCL_GPU_TRY(gpuHostGetDevicePointer(&device, host, 0));
  remote_slots_device_ = static_cast<const uint32_t*>(device);
  std::vector<const char*> staging_of_rank(nranks, nullptr);
  for (int peer = 0; peer < nranks; ++peer)
    if (remote_index_[peer] >= 0) staging_of_rank[peer] = SendStaging(peer);
  return trigger_feed_.Create(std::move(staging_of_rank));
}

void DeviceNetEndpoint::NetRaise(int /*peer*/, const NetOp& op) {
  // After the bytes (written by this thread): the device's acquire load of the slot orders the
  // copy out of the staging, which the stream issues only after that wait.
  if (op.slot != ControlLayout::kNoSignal)
    __atomic_store_n(&remote_slots_[op.slot], op.epoch, __ATOMIC_RELEASE);
}

void DeviceNetEndpoint::NetLinkFailed(int peer, const PlatformFailure& failure) {
  link_failed_(peer, failure);
  trigger_feed_.GiveUp();
}

std::unique_ptr<Connection> DeviceNetEndpoint::NetConnect(NetTransport* /*net*/, int peer) {
  return std::make_unique<DeviceNetConnection>(this, peer);
}

void DeviceNetEndpoint::NetSettle() {
  if (gpuSetDevice(device_) == gpuSuccess) (void)gpuDeviceSynchronize();
}

xcclResult_t DeviceNetEndpoint::NetDrain(const Deadline& deadline) {
  return trigger_feed_.AwaitDrained(deadline);
}

void DeviceNetEndpoint::QueueNetOp(int peer, NetOp::Kind kind, int slot, const void* src,
                                   size_t bytes) {
  if (bytes > net_piece_) {
    Check(gpuErrorInvalidValue, "a net put larger than the pinned staging");
    return;
  }
  if (bytes > 0) {
    gpuError_t err = kernel_copies_ ? LaunchCopyKernel(SendStaging(peer), src, bytes, stream_)
                                    : gpuMemcpyAsync(SendStaging(peer), src, bytes,
                                                     gpuMemcpyDeviceToHost, stream_);
    Check(err, "net staging copy");
  }
  gpuStreamCaptureStatus capture = gpuStreamCaptureStatusNone;
  Check(gpuStreamIsCapturing(stream_, &capture), "capture query");
  Check(trigger_feed_.Launch(kind, peer, slot, static_cast<uint32_t>(bytes),
                             capture != gpuStreamCaptureStatusNone, view_->device_epoch,
                             view_->timeout_ns, view_->record, stream_),
        "net trigger kernel");
}

}  // namespace xccl
