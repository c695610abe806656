// One rank's communicator: its bootstrap, what it knows of every rank, its transport to the
// node's peers (control windows, connections, DMA queues), the device engine where the build has
// one, its epoch, and the first failure it met.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/params.h"
#include "base/topology.h"
#include "comm/comm_windows.h"
#include "comm/local_registrations.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

struct DeviceEngine;

class Communicator {
 public:
  // Collective over the `nranks` callers of `id`, with the process's parameters unless
  // `params` gives others (a shrunk communicator: its parent's, with its own fake nodes).
  static xcclResult_t Create(const xcclUniqueId& id, int nranks, int rank, int device,
                             const CommConfig& config, std::unique_ptr<Communicator>* out,
                             const Params* params = nullptr);
  ~Communicator();

  int rank() const { return topology_.rank; }
  int nranks() const { return topology_.nranks; }
  int device() const { return device_; }
  int64_t timeout_ms() const { return config_.timeout_ms; }
  const Topology& topology() const { return topology_; }
  Transport* transport() const { return transport_.get(); }
  // Where each op's control slots are in every rank's window (laid at init).
  const SlotMap& slots() const { return slots_; }
  // The collectives' kernels (GPU builds); nullptr on the host platform.
  DeviceEngine* device_engine() const { return device_engine_.get(); }
  Bootstrap* bootstrap() const { return bootstrap_.get(); }
  // Registered windows (xcclCommWindowRegister) and local registrations (xcclCommRegister).
  CommWindows& windows() { return windows_; }
  LocalRegistrations& registrations() { return registrations_; }

  // The epoch of the next operation. Every rank calls the same sequence of operations, so
  // every rank agrees on each operation's epoch without exchanging it.
  uint32_t NextEpoch() { return ++epoch_; }
  // The first of `count` consecutive epochs (a pipelined operation signals one per piece).
  uint32_t NextEpochs(uint32_t count) {
    const uint32_t first = epoch_ + 1;
    epoch_ += count;
    return first;
  }
  uint32_t current_epoch() const { return epoch_; }
  // XCCL_NET_CHUNK_BYTES: the pipeline step of an operation across nodes.
  size_t net_chunk_bytes() const { return static_cast<size_t>(params_.net_chunk_bytes); }
  // The parameters this communicator was made with (read once at init, or given by a shrink):
  // what every layer under it reads, never the process's.
  const Params& params() const { return params_; }

  // Records the first failure (later calls return it at once), tells the peers, and returns
  // the failure's code with its message as the thread's last error.
  xcclResult_t RecordFailure(const char* op, const PlatformFailure& failure);
  // xcclSuccess, or the recorded failure with its message re-raised.
  xcclResult_t CheckHealthy(const char* op);
  // The first failure, including one a device-side wait recorded (GPU platforms).
  xcclResult_t async_error();
  // The message of the first failure ("" if none).
  std::string failure_message() const;

  // Stops queued work without waiting for peers (xcclCommAbort).
  void Abort();
  // Abort's first half: queued work stops, the bootstrap stays usable (xcclCommShrink's
  // survivors still talk over it).
  void AbortTransport();
  const CommConfig& config() const { return config_; }

  // Keeps `resource` (an op whose release waits for the whole device) until ReleaseDeferred:
  // where a peer of this process shares the device, freeing it in a destroy that peers need not
  // wait for could wait for a peer's call that waits for this rank. Called under the call guard.
  void DeferRelease(std::shared_ptr<void> resource) { deferred_.push_back(std::move(resource)); }
  // Frees what DeferRelease kept. Call only where no peer can be waiting for this rank: inside a
  // collective step before its rendezvous (no peer is past it), or at the communicator's end.
  void ReleaseDeferred() { deferred_.clear(); }

  // One operation at a time (the epochs, windows and queues are the communicator's): a second
  // one started while another thread is inside one is refused (xcclInvalidUsage) instead of
  // corrupting both. Held for the lifetime of an OperationGuard.
  class OperationGuard {
   public:
    explicit OperationGuard(Communicator* comm) : comm_(comm) {}
    ~OperationGuard() {
      if (held_) comm_->busy_.store(false);
    }
    OperationGuard(const OperationGuard&) = delete;
    OperationGuard& operator=(const OperationGuard&) = delete;
    xcclResult_t Acquire(const char* op);

   private:
    Communicator* comm_;
    bool held_ = false;
  };

 private:
  Communicator() = default;
  // Takes a failure the transport found asynchronously as this communicator's first failure.
  void AbsorbAsyncFailure();

  CommConfig config_;
  Params params_;
  int device_ = 0;
  std::unique_ptr<Bootstrap> bootstrap_;
  Topology topology_;
  SlotMap slots_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<DeviceEngine> device_engine_;
  // After the transport: released before it (the peers' imported segments first).
  CommWindows windows_;
  LocalRegistrations registrations_;
  uint32_t epoch_ = 0;
  std::atomic<bool> busy_{false};                // an operation is running (OperationGuard)
  std::vector<std::shared_ptr<void>> deferred_;  // DeferRelease; freed first in the destructor
  mutable std::mutex failure_mutex_;
  xcclResult_t failure_result_ = xcclSuccess;
  std::string failure_message_;
};

}  // namespace xccl
