#include <algorithm>

#include "base/datatype.h"
#include "base/error.h"
#include "base/logging.h"
#include "collectives/in_place_reach.h"
#include "collectives/launch_failure.h"
#include "collectives/reduce/read_reduce_engine.h"
#include "collectives/reduce/read_reduce_kernel.h"
#include "platform/gpu/device_bytes_now.h"
#include "platform/gpu/gpu_call.h"

namespace xccl {

namespace {

constexpr SlotName kReadOffers{"reduce.read_offers", SlotReach::kDeviceOnly};
constexpr int kThreadsPerBlock = 512;

class KernelReadReduceEngine final : public ReadReduceEngine {
 public:
  KernelReadReduceEngine(ReadReach reach, int offers, int max_blocks, bool shared_device)
      : reach_(reach), offers_(offers), max_blocks_(max_blocks), shared_device_(shared_device) {}

  ReadReach reach() const override { return reach_; }

  xcclResult_t Run(const Transport& transport, const BuffersAsSeen& buffers,
                   const ReducedPart& part, int datatype, int op, xcclStream_t stream,
                   PlatformFailure* failure) override {
    const DeviceView& view = *transport.device_view();
    ReadReduceCall call;
    call.offers = offers_;
    call.buffers = buffers;
    call.first_byte = part.first_byte;
    call.out_byte = part.out_byte;
    call.to_every_rank = part.to_every_rank;
    call.single_source = part.single_source;
    call.count = part.count;
    // A thread per 16 bytes of output, up to this rank's share of the device.
    const size_t vectors = (part.count * DataTypeSize(datatype) + 15) / 16;
    call.blocks = ReadReduceGrid(vectors, kThreadsPerBlock, max_blocks_, shared_device_, part.grid);
    return LaunchFailure(
        LaunchReadReduce(view, call, datatype, op, static_cast<gpuStream_t>(stream)), view.rank,
        "read-reduce kernel", failure);
  }

 private:
  ReadReach reach_;
  int offers_;
  int max_blocks_;
  bool shared_device_;  // ranks of this node share this rank's device
};

}  // namespace

xcclResult_t ReserveReadReduceSlots(const Topology& topology, SlotMap* slots) {
  return kReadOffers.Reserve(OfferSlotCount(topology.nranks), slots);
}

ReadReach PlanReadReach(const Params& params, const Topology& topology) {
  // Ranks of one process address each other's buffers as their own; ranks of several processes
  // reach only windows and xcclMemAlloc memory, which each maps (zero_copy_targets.h).
  if (params.zero_copy == 0 || topology.node_count != 1 || topology.nranks > kMaxReduceInputs)
    return ReadReach::kNone;
  return EveryCallInPlace(params, topology) ? ReadReach::kEveryCall : ReadReach::kMappedBuffers;
}

xcclResult_t CreateReadReduceEngine(const Params& params, const Topology& topology,
                                    const SlotMap& slots, const Transport& transport,
                                    std::unique_ptr<ReadReduceEngine>* out) {
  XCCL_GPU_TRY(PreloadReadReduce());
  XCCL_GPU_TRY(PreloadReduce());  // the region path's owner step
  SlotRange offers;
  XCCL_TRY(kReadOffers.Find(slots, &offers));
  // The window's words start at the epoch base; the kernel counts blocks done and started, and
  // failures, from 0.
  const uint32_t zeros[3] = {0, 0, 0};
  static_assert(ReadReduceCounters::kFailed == ReadReduceCounters::kBlocksDone + 1 &&
                    ReadReduceCounters::kStarted == ReadReduceCounters::kBlocksDone + 2,
                "adjacent");
  XCCL_TRY(CopyToDeviceNow(transport.device_view()->own_slots + offers.first +
                               kOfferWords * topology.nranks + ReadReduceCounters::kBlocksDone,
                           zeros, sizeof(zeros)));
  const ReadReach reach = PlanReadReach(params, topology);
  int sms = 0;
  XCCL_GPU_TRY(gpuMultiprocessorCount(topology.ranks[topology.rank].device, &sms));
  // Enough blocks of 512 threads to keep the memory system busy (two per SM), shared by the ranks
  // on the device; a larger grid would only queue. XCCL_REDUCE_BLOCKS overrides it (to measure).
  const int max_blocks = params.reduce_blocks > 0
                             ? static_cast<int>(params.reduce_blocks)
                             : std::max(1, 2 * sms / std::max(1, topology.MostRanksOnOneDevice()));
  XCCL_INFO(kLogInit, "rank %d: reductions %s", topology.rank,
            reach == ReadReach::kEveryCall       ? "read the peers' send buffers (one process)"
            : reach == ReadReach::kMappedBuffers ? "read the peers' send buffers where they lie in "
                                                   "windows or xcclMemAlloc memory, else go "
                                                   "through the receive region"
                                                 : "go through the receive region");
  *out = std::make_unique<KernelReadReduceEngine>(reach, offers.first, max_blocks,
                                                  topology.MostRanksOnOneDevice() > 1);
  return xcclSuccess;
}

}  // namespace xccl
