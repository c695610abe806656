#include "transport/p2p/device_windows.h"

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/device_bytes_now.h"
#include "platform/gpu/gpu_call.h"
#include "platform/shareable_memory.h"

namespace xccl {

namespace {

// This rank's window with its slots set, and the record; `own`/`record` keep what was made. The
// window takes whole IPC blocks (AllocateShareable): a block shared with another allocation (the
// inboxes, another communicator's window) would open at the wrong bytes in a peer, or not at all.
xcclResult_t CreateLocal(size_t window_bytes, uint32_t epoch_base, void** own,
                         DeviceFailureRecord** record, DeviceFailureRecord** record_device) {
  int allocated_on = 0;
  XCCL_TRY(AllocateShareable(window_bytes, own, &allocated_on));
  std::vector<uint32_t> slots(window_bytes / 4, epoch_base);
  slots[ControlLayout::kAbort] = 0;
  XCCL_TRY(CopyToDeviceNow(*own, slots.data(), window_bytes));
  void* host = nullptr;
  XCCL_GPU_TRY(gpuHostAlloc(&host, sizeof(DeviceFailureRecord), gpuHostAllocMapped));
  *record = static_cast<DeviceFailureRecord*>(host);
  memset(*record, 0, sizeof(**record));
  void* device = nullptr;
  XCCL_GPU_TRY(gpuHostGetDevicePointer(&device, host, 0));
  *record_device = static_cast<DeviceFailureRecord*>(device);
  return xcclSuccess;
}

}  // namespace

xcclResult_t DeviceWindows::Create(Bootstrap* bootstrap, const Topology& topology, int device,
                                   size_t window_bytes, uint32_t epoch_base) {
  const xcclResult_t local =
      CreateLocal(window_bytes, epoch_base, &own_, &record_, &record_device_);
  const xcclResult_t mapped =
      MapPeerBuffers(bootstrap, topology, device, local == xcclSuccess ? own_ : nullptr,
                     /*enable_peer_access=*/true, "GPU control window", &mapped_);
  if (local != xcclSuccess) return local;
  return mapped;
}

xcclResult_t DeviceWindows::PollAsyncFailure(const Topology& topology, int64_t timeout_ms,
                                             PlatformFailure* failure) const {
  if (record_ == nullptr) return xcclSuccess;
  const uint32_t packed = __atomic_load_n(&record_->failure, __ATOMIC_ACQUIRE);
  if (packed == 0) return xcclSuccess;
  // (peer + 1) << 8 | code, written in one word (DeviceFailureRecord).
  const int peer = static_cast<int>(packed >> 8) - 1;
  const std::string pid = peer >= 0 && peer < topology.nranks && !topology.SameProcess(peer)
                              ? " (pid " + std::to_string(topology.ranks[peer].pid) + ")"
                              : std::string();
  const auto code = static_cast<xcclResult_t>(packed & 0xFFu);
  if (code != xcclTimeout)
    return SetFailure(failure, code, peer,
                      "rank %d%s failed or aborted; this rank's device waits gave up", peer,
                      pid.c_str());
  return SetFailure(failure, code, peer,
                    "a device-side wait timed out after %lld ms waiting for rank %d%s",
                    static_cast<long long>(timeout_ms), peer, pid.c_str());
}

void DeviceWindows::Abort() {
  if (record_ != nullptr) __atomic_store_n(&record_->abort, 1u, __ATOMIC_RELEASE);
}

void DeviceWindows::RecordHostFailure(int peer, xcclResult_t code) {
  if (record_ == nullptr) return;
  uint32_t expected = 0;
  const uint32_t packed =
      (static_cast<uint32_t>(peer + 1) << 8) | (static_cast<uint32_t>(code) & 0xFFu);
  // Against the device's CAS on the same word only as atomic as host-mapped memory allows: if
  // both write, either record makes every wait give up, which is what counts.
  __atomic_compare_exchange_n(&record_->failure, &expected, packed, false, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

void DeviceWindows::Release() { TakeRelease()(); }

std::function<void()> DeviceWindows::TakeRelease() {
  auto release = [mapped = mapped_, own = own_, record = record_]() mutable {
    ClosePeerBuffers(&mapped);
    if (own != nullptr) (void)gpuFree(own);
    if (record != nullptr) (void)gpuFreeHost(record);
  };
  mapped_ = PeerBuffers();
  own_ = nullptr;
  record_ = nullptr;
  record_device_ = nullptr;
  return release;
}

}  // namespace xccl
