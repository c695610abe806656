// The host platform's binding of the Platform interface to the shared-memory transport
// (transport/shm/shm_transport.h): ranks are processes or threads of one node, "device memory"
// is ordinary memory, and calls are synchronous (streams are ignored).
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/logging.h"
#include "core/params.h"
#include "core/topology.h"
#include "platform/platform.h"
#include "transport/shm/shm_transport.h"

namespace xccl {

namespace {

class HostPlatform final : public Platform {
 public:
  HostPlatform(const Topology& topology, const Params& params, int64_t timeout_ms)
      : topology_(topology), shm_(topology, params, timeout_ms) {}

  xcclResult_t Init(Bootstrap* bootstrap) {
    XCCL_TRY(RequireOneNode(topology_, "the host platform"));
    return shm_.Init(bootstrap);
  }

  const char* name() const override { return "host"; }
  int queue_count() const override { return shm_.peer_count(); }

  void BeginOperation(xcclStream_t /*stream: calls are synchronous*/) override {}

  // Waits for this rank's queued puts; the first failure of any connection.
  xcclResult_t EndOperation(uint32_t /*epoch*/, const Deadline& deadline,
                            PlatformFailure* failure) override {
    xcclResult_t first = xcclSuccess;
    for (int peer = 0; peer < topology_.nranks; ++peer) {
      if (peer == topology_.rank) continue;
      PlatformFailure one;
      const xcclResult_t result = shm_.connection(peer).Flush(deadline, &one);
      if (result != xcclSuccess && first == xcclSuccess) {
        first = result;
        *failure = one;
      }
    }
    return first;
  }

  bool direct_puts() const override { return true; }
  void CloseRecvBuffer(uint32_t epoch, const Deadline& deadline) override {
    shm_.CloseRecvBuffer(epoch, deadline);
  }
  void PublishRecvBuffer(uint32_t epoch, void* recv, size_t bytes, size_t block) override {
    shm_.PublishRecvBuffer(epoch, recv, bytes, block);
  }
  void LocalCopy(void* dst, const void* src, size_t bytes) override { memmove(dst, src, bytes); }
  void EnqueuePut(int peer, uint32_t epoch, const void* src, size_t dst_offset, size_t bytes,
                  int signal_slot) override {
    shm_.connection(peer).Put(epoch, src, dst_offset, bytes, signal_slot);
  }
  xcclResult_t PutFromCaller(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                             size_t bytes, int signal_slot, PlatformFailure* failure) override {
    return shm_.connection(peer).PutNow(epoch, src, dst_offset, bytes, signal_slot, failure);
  }

  size_t inbox_limit() const override { return shm_.inbox_limit(); }
  void InboxPut(int peer, uint32_t epoch, const void* src, size_t bytes, int signal_slot) override {
    shm_.connection(peer).InboxPut(epoch, src, bytes, signal_slot);
  }
  const void* Inbox(uint32_t epoch, int src) const override { return shm_.Inbox(epoch, src); }
  bool InboxBlockBytes(uint32_t epoch, int src, size_t* bytes) const override {
    *bytes = shm_.InboxBlockBytes(epoch, src);
    return true;
  }

  xcclResult_t WaitArrivals(uint32_t epoch, const Deadline& deadline,
                            const std::function<void(int)>& on_arrival,
                            PlatformFailure* failure) override {
    const int rank = topology_.rank, nranks = topology_.nranks;
    // Reverse rotation: the peer that pushes to this rank first is rank-1.
    for (int step = 1; step < nranks; ++step) {
      const int peer = (rank - step + nranks) % nranks;
      XCCL_TRY(
          shm_.WaitSlot(ControlLayout::Arrival(peer), epoch, peer, "its data", deadline, failure));
      on_arrival(peer);
    }
    return xcclSuccess;
  }

  // Window operations: the op buffers are published per operation, like a receive buffer, and
  // the puts are the direct puts', so MapPeerBuffers has nothing to map.
  xcclResult_t MapPeerBuffers(Bootstrap* /*bootstrap*/, void* /*local*/, std::vector<void*>* peers,
                              std::vector<bool>* opened) override {
    peers->assign(topology_.nranks, nullptr);
    opened->assign(topology_.nranks, false);
    return xcclSuccess;
  }
  void BeginWindowOperation(uint32_t epoch, void* local, size_t bytes,
                            xcclStream_t /*stream*/) override {
    shm_.PublishRecvBuffer(epoch, local, bytes, /*block: puts of any size*/ 0);
  }
  void WindowPut(int peer, uint32_t epoch, void* /*peer_buffer*/, size_t offset, const void* src,
                 size_t bytes, int signal_slot) override {
    shm_.connection(peer).Put(epoch, src, offset, bytes, signal_slot);
  }
  xcclResult_t WindowWait(int slot, uint32_t epoch, int peer, const char* what,
                          const Deadline& deadline, xcclStream_t /*stream*/,
                          PlatformFailure* failure) override {
    return shm_.WaitSlot(slot, epoch, peer, what, deadline, failure);
  }

  xcclResult_t Barrier(uint32_t epoch, const Deadline& deadline,
                       PlatformFailure* failure) override {
    const int rank = topology_.rank, nranks = topology_.nranks;
    for (int step = 1; step < nranks; ++step)
      shm_.connection((rank + step) % nranks)
          .Signal(ControlLayout::BarrierFrom(rank, nranks), epoch);
    for (int step = 1; step < nranks; ++step) {
      const int peer = (rank - step + nranks) % nranks;
      XCCL_TRY(shm_.WaitSlot(ControlLayout::BarrierFrom(peer, nranks), epoch, peer, "barrier",
                             deadline, failure));
    }
    return xcclSuccess;
  }

  xcclResult_t PollAsyncFailure(PlatformFailure* /*failure*/) override { return xcclSuccess; }
  void Abort(int failed_peer) override { shm_.Abort(failed_peer); }

 private:
  Topology topology_;
  ShmTransport shm_;
};

}  // namespace

xcclResult_t DefaultDevice(int /*index*/, int* device) {
  *device = 0;
  return xcclSuccess;
}

xcclResult_t CreatePlatform(Bootstrap* bootstrap, const Topology& topology, const Params& params,
                            int64_t timeout_ms, std::unique_ptr<Platform>* out) {
  auto platform = std::make_unique<HostPlatform>(topology, params, timeout_ms);
  XCCL_TRY(platform->Init(bootstrap));
  XCCL_INFO(kLogInit, "rank %d: host platform, %d DMA queues (worker threads)", topology.rank,
            platform->queue_count());
  *out = std::move(platform);
  return xcclSuccess;
}

}  // namespace xccl
