#include "collectives/region/arrivals.h"

#include <vector>

#include "base/error.h"

namespace xccl {

xcclResult_t WaitArrivals(Transport* transport, const SlotRange& arrivals, int rank, int nranks,
                          uint32_t epoch, const Deadline& deadline, xcclStream_t stream,
                          const std::function<void(int peer)>& on_arrival,
                          PlatformFailure* failure) {
  if (transport->device_view() != nullptr) {
    std::vector<int> raiser(nranks);
    for (int r = 0; r < nranks; ++r) raiser[r] = r;
    XCCL_TRY(transport->WaitSlotsRaisedBy(arrivals.first, epoch, raiser, "its data", deadline,
                                          stream, failure));
    for (int step = 1; step < nranks; ++step) on_arrival((rank - step + nranks) % nranks);
    return xcclSuccess;
  }
  for (int step = 1; step < nranks; ++step) {
    const int peer = (rank - step + nranks) % nranks;
    XCCL_TRY(
        transport->WaitSlot(arrivals.at(peer), epoch, peer, "its data", deadline, stream, failure));
    on_arrival(peer);
  }
  return xcclSuccess;
}

}  // namespace xccl
