#include "harness/vendor_setup.h"

#include <cstring>
#include <set>

#include "harness/device_buffers.h"

namespace xccl_perf {

const VendorLibrary* AgreeOnVendor(RankSync& sync, int rank, std::string* why) {
  if (strcmp(DeviceBuffers::Platform(), "host") == 0) {
    // No GPU, so nothing the vendor could run on; no rank tries to load it.
    *why = std::string("the ") + DeviceBuffers::Platform() + " platform has no GPU";
    return nullptr;
  }
  std::string local_why;
  const VendorLibrary* library = VendorLibrary::Get(&local_why);
  double everywhere = 0;
  if (!sync.AllReduce(rank, library != nullptr ? 1 : 0, Reduce::kMin, &everywhere)) {
    *why = "the run was aborted";
    return nullptr;
  }
  if (everywhere > 0) return library;
  // Rank 0 prints the line; its own reason is the useful one when it failed too.
  *why = library == nullptr ? local_why : "the vendor library did not load on every rank";
  return nullptr;
}

std::string VendorBlocked(RankSync& sync, int k) {
  std::set<std::string> devices;
  for (int r = 0; r < k; ++r) {
    const RankInfo& info = sync.Info(r);
    devices.insert(std::string(info.host) + "/" + info.bus_id);
  }
  if (static_cast<int>(devices.size()) == k) return "";
  return std::to_string(k) + " ranks share " + std::to_string(devices.size()) +
         " GPU(s); NCCL needs one GPU per rank";
}

static_assert(sizeof(VendorId) <= RankSync::kBroadcastBytes, "the id must fit the broadcast area");

bool JoinVendorComm(const VendorLibrary& library, RankSync& sync, int rank, int k,
                    std::unique_ptr<VendorComm>* comm) {
  VendorId id;
  memset(&id, 0, sizeof(id));
  double made = rank == 0 && library.GetUniqueId(&id, rank) ? 1 : 0;
  // Everyone learns whether rank 0 succeeded before anyone waits in the vendor's init for it.
  if (!sync.AllReduce(rank, made, Reduce::kRank0, &made) || made == 0) return false;
  if (!sync.Broadcast(rank, 0, &id, sizeof(id))) return false;
  if (rank >= k) return true;
  *comm = VendorComm::Init(library, k, id, rank);
  return *comm != nullptr;
}

}  // namespace xccl_perf
