#include "transport/p2p/net_trigger_feed.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "base/error.h"
#include "base/logging.h"
#include "platform/gpu/gpu_call.h"
#include "transport/net/proxy/proxy.h"

namespace xccl {

xcclResult_t NetTriggerFeed::Create(std::vector<const char*> send_staging) {
  send_staging_ = std::move(send_staging);
  XCCL_GPU_TRY(PreloadNetTriggerKernel());
  const size_t bytes = NetTriggerRing::kEntries * sizeof(NetTriggerEntry) + sizeof(uint32_t);
  void* host = nullptr;
  XCCL_GPU_TRY(gpuHostAlloc(&host, bytes, gpuHostAllocMapped));
  entries_ = static_cast<NetTriggerEntry*>(host);
  consumed_ = reinterpret_cast<uint32_t*>(entries_ + NetTriggerRing::kEntries);
  // Position p is complete when its entry's seq is p + 1: no zeroed entry reads as complete.
  for (uint32_t i = 0; i < NetTriggerRing::kEntries; ++i) entries_[i] = NetTriggerEntry{};
  *consumed_ = 0;
  void* device = nullptr;
  XCCL_GPU_TRY(gpuHostGetDevicePointer(&device, host, 0));
  ring_.entries = static_cast<NetTriggerEntry*>(device);
  ring_.consumed = reinterpret_cast<const uint32_t*>(ring_.entries + NetTriggerRing::kEntries);
  void* claimed = nullptr;
  XCCL_GPU_TRY(gpuMalloc(&claimed, sizeof(uint32_t)));
  ring_.claimed = static_cast<uint32_t*>(claimed);
  XCCL_GPU_TRY(gpuMemset(ring_.claimed, 0, sizeof(uint32_t)));
  return xcclSuccess;
}

void NetTriggerFeed::Release() {
  if (ring_.claimed != nullptr) (void)gpuFree(ring_.claimed);
  if (entries_ != nullptr) (void)gpuFreeHost(entries_);
  ring_ = NetTriggerRing{};
  entries_ = nullptr;
  consumed_ = nullptr;
}

gpuError_t NetTriggerFeed::Launch(uint32_t kind, int peer, int slot, uint32_t bytes, bool captured,
                                  const uint32_t* epoch, uint64_t timeout_ns,
                                  DeviceFailureRecord* record, gpuStream_t stream) {
  if (captured) {
    captured_any_.store(true);
  } else {
    counted_launched_.fetch_add(1);
  }
  const gpuError_t launched = LaunchNetTrigger(ring_, kind, peer, slot, bytes, !captured, epoch,
                                               timeout_ns, record, stream);
  if (launched != gpuSuccess && !captured) counted_launched_.fetch_sub(1);
  return launched;
}

bool NetTriggerFeed::Drain(Proxy& proxy) {
  bool any = false;
  for (;;) {
    NetTriggerEntry& entry = entries_[taken_ % NetTriggerRing::kEntries];
    if (__atomic_load_n(&entry.seq, __ATOMIC_ACQUIRE) != taken_ + 1) break;
    const int peer = entry.peer;
    if (peer >= 0 && peer < static_cast<int>(send_staging_.size()) &&
        send_staging_[peer] != nullptr) {
      NetOp op;
      op.kind = entry.kind;
      op.slot = entry.slot;
      op.epoch = entry.epoch;
      op.bytes = entry.bytes;
      proxy.Enqueue(peer, op, send_staging_[peer]);
    } else {
      XCCL_WARN(kLogPlatform, "net trigger %u names rank %d, not a rank of another node: dropped",
                taken_, peer);
    }
    if (entry.counted != 0) counted_taken_.fetch_add(1, std::memory_order_relaxed);
    ++taken_;
    // The kernel that claims position taken_ + kEntries - 1 may write this entry now.
    __atomic_store_n(consumed_, taken_, __ATOMIC_RELEASE);
    any = true;
  }
  return any;
}

std::string NetTriggerFeed::Describe() const {
  const uint32_t taken = __atomic_load_n(consumed_, __ATOMIC_ACQUIRE);
  const uint32_t next_seq =
      __atomic_load_n(&entries_[taken % NetTriggerRing::kEntries].seq, __ATOMIC_ACQUIRE);
  char text[200];
  snprintf(text, sizeof(text),
           "net triggers taken %u (launched outside captures %llu, taken of those %llu), next "
           "entry's seq %u (complete at %u)",
           taken, static_cast<unsigned long long>(counted_launched_.load()),
           static_cast<unsigned long long>(counted_taken_.load()), next_seq, taken + 1);
  return text;
}

int NetTriggerFeed::MaxNapUs() const {
  return captured_any_.load(std::memory_order_relaxed) ? kCapturedNapUs : Proxy::kMaxNapUs;
}

xcclResult_t NetTriggerFeed::AwaitDrained(const Deadline& deadline) {
  uint32_t claimed = 0;
  XCCL_GPU_TRY(gpuMemcpy(&claimed, ring_.claimed, sizeof(claimed), gpuMemcpyDeviceToHost));
  // After a failure, positions claimed by kernels that gave up are never written.
  while (__atomic_load_n(consumed_, __ATOMIC_ACQUIRE) != claimed && !given_up_.load()) {
    if (deadline.Expired())
      return Fail(xcclTimeout, "the proxy took %u of %u net triggers before the deadline",
                  __atomic_load_n(consumed_, __ATOMIC_ACQUIRE), claimed);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return xcclSuccess;
}

}  // namespace xccl
