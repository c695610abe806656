// The host side of NCCL 2.28's device API (nccl_device/*.h): programs linked against NCCL
// 2.28, PyTorch 2.11 among them, need these symbols at load time even when they never call
// them. Teams are pure arithmetic on one node (xccl's world is one node, so the LSA team is the
// world and the rail team is this rank alone), answered natively; device communicators and
// resource requirements belong to the vendor library and are forwarded to it.
#include <string>

#include "shim_internal.h"

using namespace xccl_shim;

extern "C" {
// nccl_device/core.h: a team is {nRanks, rank, stride} and is passed by value.
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;
// Opaque to the shim: only passed through to the vendor.
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
}

namespace {

// A team of a communicator the shim does not know (a vendor-only one from ncclCommSplit, or
// garbage) has no size; NCCL's team functions return no error code, so an empty team it is.
ncclTeam_t TeamOf(ncclComm_t comm, int nranks, int rank, int stride) {
  if (!IsLiveComm(comm)) {
    SetLastError("ncclTeam*: not a live communicator");
    return ncclTeam_t{0, 0, 1};
  }
  return ncclTeam_t{nranks, rank, stride};
}

}  // namespace

XCCL_SHIM_EXPORT ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  return TeamOf(comm, IsLiveComm(comm) ? comm->nranks : 0, IsLiveComm(comm) ? comm->rank : 0, 1);
}
XCCL_SHIM_PNCCL(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  // Every rank of an xccl communicator is on one node: load/store-accessible from the others.
  return ncclTeamWorld(comm);
}
XCCL_SHIM_PNCCL(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  // The ranks with this rank's local index on the other nodes: only itself on one node.
  return TeamOf(comm, 1, 0, IsLiveComm(comm) ? comm->nranks : 1);
}
XCCL_SHIM_PNCCL(ncclTeam_t, ncclTeamRail, (ncclComm_t comm));

XCCL_SHIM_EXPORT int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  const int world_rank = IsLiveComm(comm) ? comm->rank : 0;
  return world_rank + (rank - team.rank) * team.stride;
}
XCCL_SHIM_PNCCL(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank));

XCCL_SHIM_EXPORT int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  return ncclTeamRankToWorld(comm, team, rank);  // the LSA team is the world (one node)
}
XCCL_SHIM_PNCCL(int, ncclTeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank));

XCCL_SHIM_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t comm,
                                                ncclDevCommRequirements_t const* reqs,
                                                ncclDevComm_t* out) {
  XCCL_SHIM_FORWARD(ncclDevCommCreate, comm, vc, reqs, out);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclDevCommCreate,
                (ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* out));

XCCL_SHIM_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* dev_comm) {
  XCCL_SHIM_FORWARD(ncclDevCommDestroy, comm, vc, dev_comm);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclDevCommDestroy, (ncclComm_t comm, ncclDevComm_t const* dev_comm));

XCCL_SHIM_EXPORT ncclResult_t ncclGinBarrierCreateRequirement(
    ncclComm_t comm, ncclTeam_t team, int n_barriers, ncclGinBarrierHandle_t* out_handle,
    ncclDevResourceRequirements_t* out_req) {
  XCCL_SHIM_FORWARD(ncclGinBarrierCreateRequirement, comm, vc, team, n_barriers, out_handle,
                    out_req);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGinBarrierCreateRequirement,
                (ncclComm_t comm, ncclTeam_t team, int n_barriers,
                 ncclGinBarrierHandle_t* out_handle, ncclDevResourceRequirements_t* out_req));

XCCL_SHIM_EXPORT ncclResult_t
ncclLsaBarrierCreateRequirement(ncclTeam_t team, int n_barriers, ncclLsaBarrierHandle_t* out_handle,
                                ncclDevResourceRequirements_t* out_req) {
  decltype(&ncclLsaBarrierCreateRequirement) fn = nullptr;
  ncclResult_t r = PrepareVendorFunction("ncclLsaBarrierCreateRequirement", &fn);
  if (r != ncclSuccess) return r;
  return FinishForward("ncclLsaBarrierCreateRequirement", nullptr,
                       fn(team, n_barriers, out_handle, out_req));
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclLsaBarrierCreateRequirement,
                (ncclTeam_t team, int n_barriers, ncclLsaBarrierHandle_t* out_handle,
                 ncclDevResourceRequirements_t* out_req));

XCCL_SHIM_EXPORT ncclResult_t ncclLLA2ACreateRequirement(int n_blocks, int n_slots,
                                                         ncclLLA2AHandle_t* out_handle,
                                                         ncclDevResourceRequirements_t* out_req) {
  decltype(&ncclLLA2ACreateRequirement) fn = nullptr;
  ncclResult_t r = PrepareVendorFunction("ncclLLA2ACreateRequirement", &fn);
  if (r != ncclSuccess) return r;
  return FinishForward("ncclLLA2ACreateRequirement", nullptr,
                       fn(n_blocks, n_slots, out_handle, out_req));
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclLLA2ACreateRequirement,
                (int n_blocks, int n_slots, ncclLLA2AHandle_t* out_handle,
                 ncclDevResourceRequirements_t* out_req));

XCCL_SHIM_EXPORT int ncclLLA2ACalcSlots(int max_elts, int max_elt_size) {
  auto fn = VendorFunction<decltype(&ncclLLA2ACalcSlots)>("ncclLLA2ACalcSlots");
  if (fn == nullptr) {
    SetLastError("ncclLLA2ACalcSlots: no vendor library exports it");
    return 0;
  }
  return fn(max_elts, max_elt_size);
}
XCCL_SHIM_PNCCL(int, ncclLLA2ACalcSlots, (int max_elts, int max_elt_size));
