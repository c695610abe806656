#include <vector>

#include "base/error.h"
#include "collectives/barrier/barrier_engine.h"
#include "collectives/barrier/barrier_kernel.h"
#include "collectives/barrier/barrier_slots.h"
#include "collectives/launch_failure.h"
#include "platform/gpu/gpu_call.h"
#include "transport/p2p/device_signals.h"

namespace xccl {

namespace {

class KernelBarrierEngine final : public BarrierEngine {
 public:
  KernelBarrierEngine(const SlotRange& slots, bool spans_nodes)
      : slots_(slots), spans_nodes_(spans_nodes) {}

  xcclResult_t Run(Transport& transport, bool advance_epoch, xcclStream_t stream,
                   PlatformFailure* failure) override {
    if (spans_nodes_) return AcrossNodes(transport, advance_epoch, stream, failure);
    const DeviceView& view = *transport.device_view();
    return LaunchFailure(
        LaunchBarrier(view, slots_.first, advance_epoch, static_cast<gpuStream_t>(stream)),
        view.rank, advance_epoch ? "barrier kernel" : "closing barrier kernel", failure);
  }

 private:
  // The barrier kernel stores into every peer's window, which ranks of other nodes do not map:
  // here the epoch advances first, then every peer gets a signal on its connection (a 4-byte
  // copy of the device epoch for a rank of this node, a net op through the proxy for another),
  // all on `stream` after what the operation enqueued before (a closing barrier so follows the
  // copies out of the inboxes), then one device wait for every peer. Signals before waits: a net
  // signal is a trigger kernel behind them on the stream, which a waiting kernel ahead would hold
  // back.
  xcclResult_t AcrossNodes(Transport& transport, bool advance_epoch, xcclStream_t stream,
                           PlatformFailure* failure) {
    const DeviceView& view = *transport.device_view();
    const int rank = view.rank, nranks = view.nranks;
    const gpuStream_t s = static_cast<gpuStream_t>(stream);
    if (advance_epoch)
      XCCL_TRY(LaunchFailure(LaunchAdvanceEpoch(view.device_epoch, s), rank, "advance-epoch kernel",
                             failure));
    for (int step = 1; step < nranks; ++step)
      transport.connection((rank + step) % nranks)
          .Signal(slots_.at(rank), /*epoch: the device's*/ 0);
    const Deadline unused(0);  // device waits carry their own deadline
    std::vector<int> raiser(nranks);
    for (int peer = 0; peer < nranks; ++peer) raiser[peer] = peer;
    XCCL_TRY(
        transport.WaitSlotsRaisedBy(slots_.first, 0, raiser, "barrier", unused, stream, failure));
    // Launch failures of the signals.
    return transport.Flush(unused, failure);
  }

  SlotRange slots_;
  bool spans_nodes_;
};

}  // namespace

xcclResult_t CreateBarrierEngine(const Topology& topology, const SlotMap& slots,
                                 std::unique_ptr<BarrierEngine>* out) {
  XCCL_GPU_TRY(PreloadBarrierKernel());
  SlotRange range;
  XCCL_TRY(kBarrierSlots.Find(slots, &range));
  *out = std::make_unique<KernelBarrierEngine>(range, topology.node_count > 1);
  return xcclSuccess;
}

}  // namespace xccl
