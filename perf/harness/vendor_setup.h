// The collective steps before the vendor library can time anything: every rank must agree that
// it can run (the library loads everywhere, one GPU per rank, a GPU at all), and a vendor
// communicator needs an id made after fork() by one rank and handed to the others through
// RankSync, since the vendor may initialise the GPU runtime while making it.
#pragma once

#include <memory>
#include <string>

#include "harness/rank_sync.h"
#include "harness/vendor_nccl.h"

namespace xccl_perf {

// Collective over every rank of sync. The library where every rank loaded it, else nullptr and
// *why (the same text on every rank) for the "# vendor: not run" line.
const VendorLibrary* AgreeOnVendor(RankSync& sync, int rank, std::string* why);

// Why the first k ranks cannot form a vendor communicator, or "" if they can: NCCL refuses two
// ranks on one GPU ("Duplicate GPU detected"), which xccl allows. Reads the RankInfo the ranks
// published, so every rank gets the same answer without meeting.
std::string VendorBlocked(RankSync& sync, int k);

// Collective over every rank of sync: rank 0 makes an id, and ranks below k join a vendor
// communicator of k ranks with it (*comm stays empty on the others). False after saying why if
// any step failed on this rank.
bool JoinVendorComm(const VendorLibrary& library, RankSync& sync, int rank, int k,
                    std::unique_ptr<VendorComm>* comm);

}  // namespace xccl_perf
