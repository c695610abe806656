// xcclCommShrink: the survivors of a communicator make a new one without the excluded ranks
// (docs/ARCHITECTURE.md, "Waits, deadlines and failures"). Only survivors take part: the new rank 0
// (the lowest survivor) starts a rendezvous of its own and hands its unique id to the others in one
// group all-gather over the old bootstrap's point-to-point connections (which the excluded ranks
// are not part of), together with each survivor's view of the survivors, so that lists that differ
// fail instead of pairing the wrong ranks. Then every survivor joins the new rendezvous.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/api_guard.h"
#include "api/comm_handle.h"
#include "base/config.h"
#include "base/error.h"
#include "base/failure.h"
#include "base/fnv1a.h"
#include "base/params.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {

namespace {

// What every survivor contributes to the group all-gather.
struct ShrinkOffer {
  uint64_t survivors_hash;  // of the sorted survivor list this rank computed
  int32_t old_rank;
  int32_t has_id;  // 1 on the new rank 0
  xcclUniqueId id;
};

// The survivors, sorted, from a checked exclude list; xcclInvalidArgument/Usage for a bad one.
xcclResult_t Survivors(const Communicator& comm, const int* exclude, int n_exclude,
                       std::vector<int>* out) {
  const int nranks = comm.nranks();
  if (n_exclude < 0 || n_exclude >= nranks)
    return Fail(xcclInvalidArgument,
                "xcclCommShrink: %d ranks to exclude of %d (at least one rank must remain)",
                n_exclude, nranks);
  if (n_exclude > 0 && exclude == nullptr)
    return Fail(xcclInvalidArgument, "xcclCommShrink: exclude_ranks is NULL for %d ranks",
                n_exclude);
  std::vector<bool> excluded(static_cast<size_t>(nranks), false);
  for (int i = 0; i < n_exclude; ++i) {
    const int r = exclude[i];
    if (r < 0 || r >= nranks)
      return Fail(xcclInvalidArgument, "xcclCommShrink: exclude_ranks[%d] = %d is outside [0, %d)",
                  i, r, nranks);
    if (excluded[r]) return Fail(xcclInvalidArgument, "xcclCommShrink: rank %d is listed twice", r);
    excluded[r] = true;
  }
  if (excluded[comm.rank()])
    return Fail(xcclInvalidUsage,
                "xcclCommShrink: rank %d excludes itself; only the ranks that remain call shrink",
                comm.rank());
  out->clear();
  for (int r = 0; r < nranks; ++r)
    if (!excluded[r]) out->push_back(r);
  return xcclSuccess;
}

// XCCL_FAKE_NODES for the survivors (testing): the parent's spec sizes nodes of all its ranks,
// so the child's keeps each survivor on the node it was on ("2,2" without rank 1: "1,2").
// Survivors keep their order, so each node's ranks stay contiguous; a node left empty goes.
std::string SurvivorsFakeNodes(const Topology& parent, const std::vector<int>& survivors,
                               const std::string& spec) {
  if (spec.empty()) return spec;
  std::string out;
  for (size_t i = 0; i < survivors.size();) {
    size_t j = i;
    while (j < survivors.size() &&
           parent.node_of_rank[survivors[j]] == parent.node_of_rank[survivors[i]])
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(j - i);
    i = j;
  }
  return out;
}

xcclResult_t Shrink(xcclComm_t comm, const int* exclude, int n_exclude, xcclComm_t* newcomm,
                    const xcclConfig_t* config, int flags) {
  if (newcomm == nullptr) return Fail(xcclInvalidArgument, "xcclCommShrink: newcomm is NULL");
  *newcomm = nullptr;
  Communicator* impl = nullptr;
  XCCL_TRY(ResolveComm(comm, "xcclCommShrink", &impl));
  if (flags != XCCL_SHRINK_DEFAULT && flags != XCCL_SHRINK_ABORT)
    return Fail(xcclInvalidArgument,
                "xcclCommShrink: flags %d are neither XCCL_SHRINK_DEFAULT (0) nor "
                "XCCL_SHRINK_ABORT (1)",
                flags);
  std::vector<int> survivors;
  XCCL_TRY(Survivors(*impl, exclude, n_exclude, &survivors));
  CommConfig resolved = impl->config();
  if (config != nullptr) XCCL_TRY(ResolveConfig(config, impl->params(), &resolved));
  Communicator::OperationGuard exclusive(impl);
  XCCL_TRY(exclusive.Acquire("xcclCommShrink"));
  // The parent's queued work stops (its waits on the dead end now), its bootstrap stays.
  if (flags == XCCL_SHRINK_ABORT) impl->AbortTransport();
  const int new_rank = static_cast<int>(
      std::lower_bound(survivors.begin(), survivors.end(), impl->rank()) - survivors.begin());
  std::vector<ShrinkOffer> offers(survivors.size());
  ShrinkOffer& mine = offers[new_rank];
  memset(&mine, 0, sizeof(mine));
  mine.survivors_hash = Fnv1a(survivors.data(), survivors.size() * sizeof(int));
  mine.old_rank = impl->rank();
  if (new_rank == 0) {
    mine.has_id = 1;
    XCCL_TRY(Bootstrap::CreateUniqueId(&mine.id, impl->params()));
  }
  const xcclResult_t gathered =
      impl->bootstrap()->GroupAllGather(survivors, offers.data(), sizeof(ShrinkOffer));
  if (gathered != xcclSuccess)
    return Fail(gathered, "xcclCommShrink on rank %d: the survivors did not all meet (%s)",
                impl->rank(), ThreadLastError().c_str());
  for (size_t i = 0; i < offers.size(); ++i) {
    if (offers[i].survivors_hash != mine.survivors_hash || offers[i].old_rank != survivors[i])
      return Fail(xcclInvalidUsage,
                  "xcclCommShrink on rank %d: rank %d excludes other ranks than this one; every "
                  "survivor must pass the same list",
                  impl->rank(), survivors[i]);
  }
  if (offers[0].has_id != 1)
    return Fail(xcclInternalError, "xcclCommShrink: the new rank 0 sent no rendezvous");
  // The parent's own parameters, not the process's (which may have changed since).
  Params params = impl->params();
  params.fake_nodes = SurvivorsFakeNodes(impl->topology(), survivors, params.fake_nodes);
  std::unique_ptr<Communicator> child;
  XCCL_TRY(Communicator::Create(offers[0].id, static_cast<int>(survivors.size()), new_rank,
                                impl->device(), resolved, &child, &params));
  auto handle = new xcclComm();
  handle->impl = std::move(child);
  *newcomm = handle;
  return xcclSuccess;
}

xcclResult_t Revoke(xcclComm_t comm, int flags) {
  Communicator* impl = nullptr;
  XCCL_TRY(ResolveComm(comm, "xcclCommRevoke", &impl));
  if (flags != 0) return Fail(xcclInvalidArgument, "xcclCommRevoke: flags %d are not 0", flags);
  PlatformFailure failure;
  failure.result = xcclInvalidUsage;
  failure.message = "the communicator was revoked (xcclCommRevoke)";
  (void)impl->RecordFailure("xcclCommRevoke", failure);
  return xcclSuccess;
}

}  // namespace
}  // namespace xccl

using namespace xccl;

extern "C" xcclResult_t xcclCommRevoke(xcclComm_t comm, int flags) {
  return GuardedCall("xcclCommRevoke", comm, [&] { return Revoke(comm, flags); });
}

extern "C" xcclResult_t xcclCommShrink(xcclComm_t comm, const int* exclude_ranks, int n_exclude,
                                       xcclComm_t* newcomm, xcclConfig_t* config, int flags) {
  return GuardedCall("xcclCommShrink", comm, [&] {
    return Shrink(comm, exclude_ranks, n_exclude, newcomm, config, flags);
  });
}
