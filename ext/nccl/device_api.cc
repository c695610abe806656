// The host side of NCCL 2.28's device API (nccl_device/*.h): programs linked against NCCL
// 2.28, PyTorch 2.11 among them, need these symbols at load time even when they never call
// them. Teams are answered natively from xccl's node split (xcclCommRankNode), by NCCL's rule;
// device communicators and resource requirements belong to the vendor library and are
// forwarded to it.
//
// A team is an arithmetic progression {nRanks, rank, stride}, so NCCL 2.28 sizes the LSA team
// (ranks that load/store each other's memory) once per communicator: the gcd of the lengths of
// the runs of consecutive ranks on one node (computeLsaSize in NCCL's src/dev_runtime.cc). The
// LSA team is then this rank's block of lsaSize consecutive ranks, the rail team the ranks
// lsaSize apart: 2x2 gives blocks of 2 and rails {0,2}, {1,3}; uneven nodes (2+1, 3+1+2) or
// interleaved ones give blocks of 1 (every LSA team is one rank, the rail the world), which
// is what the vendor answers there too. xcclCommRankNode tells the whole split.
#include <numeric>
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

namespace xccl_shim {

ncclResult_t LsaSizeOf(xcclComm_t comm, int nranks, const char* function, int* lsa_size) {
  int size = 0;  // gcd(0, n) == n
  int run = 0, run_node = -1;
  for (int r = 0; r < nranks; ++r) {
    int node = -1, local_rank = -1;
    XCCL_SHIM_TRY(CheckXccl(xcclCommRankNode(comm, r, &node, &local_rank), function, comm));
    if (node != run_node && run > 0) {
      size = std::gcd(size, run);
      run = 0;
    }
    run_node = node;
    ++run;
  }
  *lsa_size = std::gcd(size, run);
  return ncclSuccess;
}

}  // namespace xccl_shim

namespace {

// The vendor communicator behind `comm` where the vendor alone answers for it: a vendor-only
// communicator (ncclCommSplit/Shrink results) or the vendor's own handle calling back into the
// shim; nullptr for xccl's communicators and for garbage.
void* VendorOnly(ncclComm_t comm) {
  if (IsLiveComm(comm)) return comm->xccl == nullptr ? comm->vendor : nullptr;
  return IsVendorHandle(comm) ? comm : nullptr;
}

// NCCL's team functions return no error code: a communicator the shim cannot answer for gets
// an empty team, and the reason is this thread's last error.
constexpr ncclTeam_t kEmptyTeam{0, 0, 1};

// The vendor's own answer for a communicator only the vendor knows.
ncclTeam_t VendorTeam(const char* name, void* vendor_comm) {
  auto fn = VendorFunction<ncclTeam_t (*)(ncclComm_t)>(name);
  if (fn == nullptr) {
    SetLastError(std::string(name) +
                 ": a vendor-only communicator, and the vendor library does not export it");
    return kEmptyTeam;
  }
  return fn(static_cast<ncclComm_t>(vendor_comm));
}

bool IsXcclComm(ncclComm_t comm, const char* name) {
  if (IsLiveComm(comm) && comm->xccl != nullptr) return true;
  SetLastError(std::string(name) + ": not a live communicator");
  return false;
}

}  // namespace

XCCL_SHIM_EXPORT ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  // Every live handle knows its rank and count, vendor-only ones too (WrapVendorComm).
  if (IsLiveComm(comm)) return ncclTeam_t{comm->nranks, comm->rank, 1};
  if (void* vc = VendorOnly(comm)) return VendorTeam("ncclTeamWorld", vc);
  SetLastError("ncclTeamWorld: not a live communicator");
  return kEmptyTeam;
}
XCCL_SHIM_PNCCL(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  if (void* vc = VendorOnly(comm)) return VendorTeam("ncclTeamLsa", vc);
  if (!IsXcclComm(comm, "ncclTeamLsa")) return kEmptyTeam;
  return ncclTeam_t{comm->lsa_size, comm->rank % comm->lsa_size, 1};
}
XCCL_SHIM_PNCCL(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  if (void* vc = VendorOnly(comm)) return VendorTeam("ncclTeamRail", vc);
  if (!IsXcclComm(comm, "ncclTeamRail")) return kEmptyTeam;
  return ncclTeam_t{comm->nranks / comm->lsa_size, comm->rank / comm->lsa_size, comm->lsa_size};
}
XCCL_SHIM_PNCCL(ncclTeam_t, ncclTeamRail, (ncclComm_t comm));

// Arithmetic from this rank's place in the team, as NCCL's.
XCCL_SHIM_EXPORT int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  if (void* vc = VendorOnly(comm)) {
    auto fn = VendorFunction<decltype(&ncclTeamRankToWorld)>("ncclTeamRankToWorld");
    if (fn != nullptr) return fn(static_cast<ncclComm_t>(vc), team, rank);
  }
  const int world_rank = IsLiveComm(comm) ? comm->rank : 0;
  return world_rank + (rank - team.rank) * team.stride;
}
XCCL_SHIM_PNCCL(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank));

XCCL_SHIM_EXPORT int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  if (void* vc = VendorOnly(comm)) {
    auto fn = VendorFunction<decltype(&ncclTeamRankToLsa)>("ncclTeamRankToLsa");
    if (fn != nullptr) return fn(static_cast<ncclComm_t>(vc), team, rank);
    SetLastError(
        "ncclTeamRankToLsa: a vendor-only communicator, and the vendor library does not "
        "export it");
    return -1;
  }
  if (!IsXcclComm(comm, "ncclTeamRankToLsa")) return -1;  // as NCCL where it cannot answer
  return comm->rank % comm->lsa_size + (rank - team.rank) * team.stride;
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
