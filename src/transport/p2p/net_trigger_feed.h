// The host side of a GPU rank's trigger FIFO (net_trigger_ring.h): the pinned entries and the
// device's claim counter, the launch of a trigger on a stream, and the proxy's drain, which turns
// each entry into a queued op whose bytes wait in that peer's send staging.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "transport/net/proxy/trigger_feed.h"
#include "transport/p2p/net_trigger_ring.h"
#include "xccl.h"

namespace xccl {

class NetTriggerFeed final : public TriggerFeed {
 public:
  // Graphs hold triggers no host call announces: the proxy naps at most this long while any
  // was captured (a replay after a quiet spell waits that long for its first op at most).
  static constexpr int kCapturedNapUs = 2000;

  NetTriggerFeed() = default;
  ~NetTriggerFeed() override { Release(); }
  NetTriggerFeed(const NetTriggerFeed&) = delete;
  NetTriggerFeed& operator=(const NetTriggerFeed&) = delete;

  // On the current device. `send_staging[rank]`: where that rank's op bytes are staged (null for
  // the ranks of this node, whose entries are refused).
  xcclResult_t Create(std::vector<const char*> send_staging);
  void Release();

  // On `stream` (the op's bytes staged before it there). `captured`: the stream is capturing.
  gpuError_t Launch(uint32_t kind, int peer, int slot, uint32_t bytes, bool captured,
                    const uint32_t* epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                    gpuStream_t stream);
  // After the device has finished every trigger (a device synchronisation): until the proxy has
  // taken every entry claimed, or the deadline.
  xcclResult_t AwaitDrained(const Deadline& deadline);

  bool Drain(Proxy& proxy) override;
  bool Expecting() const override {
    return !given_up_.load(std::memory_order_relaxed) &&
           counted_taken_.load(std::memory_order_relaxed) <
               counted_launched_.load(std::memory_order_relaxed);
  }
  // After a failure of the rank: trigger kernels that gave up never write their entries, so the
  // proxy stops polling for them (it naps as when idle).
  void GiveUp() { given_up_.store(true, std::memory_order_relaxed); }
  int MaxNapUs() const override;
  // For a diagnosis: positions taken, host-counted launches and how many of them were taken, and
  // the next entry's sequence number.
  std::string Describe() const;

 private:
  std::vector<const char*> send_staging_;
  NetTriggerEntry* entries_ = nullptr;  // host view of the pinned allocation
  uint32_t* consumed_ = nullptr;        // after the entries in it: taken_, published
  NetTriggerRing ring_;                 // the device's view
  uint32_t taken_ = 0;                  // proxy thread only: the next position to read
  std::atomic<uint64_t> counted_launched_{0}, counted_taken_{0};
  std::atomic<bool> captured_any_{false};
  std::atomic<bool> given_up_{false};
};

}  // namespace xccl
