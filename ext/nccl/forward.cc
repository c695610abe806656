// Calls that go to the vendor library (and ncclAllGather, ncclReduceScatter, ncclAllReduce,
// ncclBroadcast and ncclBcast, native unless XCCL_NCCL_NATIVE leaves them out). Each forwarded call
// checks the shim handle, finds the vendor function, creates the vendor communicator on first use,
// mirrors the client's group level on the vendor, and records the vendor's message on failure.
#include <string>

#include "shim_internal.h"

using namespace xccl_shim;

ncclResult_t xccl_shim::FinishForward(const char* name, ncclComm_t vendor_comm, ncclResult_t r) {
  if (r == ncclSuccess || r == ncclInProgress) return r;
  auto last = VendorFunction<decltype(&ncclGetLastError)>("ncclGetLastError");
  const char* msg = last ? last(vendor_comm) : nullptr;
  std::string why =
      std::string("the vendor library failed: ") + (msg && *msg ? msg : "(no message)");
  // A vendor call can fail on the communicator's stored asynchronous error without a message of
  // its own: name that state too.
  auto async = VendorFunction<decltype(&ncclCommGetAsyncError)>("ncclCommGetAsyncError");
  auto text = VendorFunction<decltype(&ncclGetErrorString)>("ncclGetErrorString");
  ncclResult_t state = ncclSuccess;
  if (async && vendor_comm && async(vendor_comm, &state) == ncclSuccess && state != ncclSuccess)
    why += std::string("; the vendor communicator's asynchronous error is ") +
           (text ? text(state) : std::to_string(static_cast<int>(state)));
  return Fail(r, name, why);
}

namespace {

// Whether `function` runs in xccl: a communicator with an xccl side and `which` listed in
// XCCL_NCCL_NATIVE (said once at INFO).
bool RunsNatively(ncclComm_t comm, NativeOp which, const char* function) {
  if (!IsLiveComm(comm) || !comm->xccl || !Native(which)) return false;
  InfoOnce(function, "runs natively in xccl");
  return true;
}

}  // namespace

XCCL_SHIM_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                            ncclDataType_t datatype, ncclComm_t comm,
                                            cudaStream_t stream) {
  if (RunsNatively(comm, NativeOp::kAllGather, "ncclAllGather")) {
    return CheckXccl(xcclAllGather(sendbuff, recvbuff, sendcount,
                                   static_cast<xcclDataType_t>(datatype), comm->xccl, stream),
                     "ncclAllGather", comm->xccl);
  }
  XCCL_SHIM_FORWARD(ncclAllGather, comm, sendbuff, recvbuff, sendcount, datatype, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclAllGather,
                (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                 ncclComm_t comm, cudaStream_t stream));

namespace {

// As RunsNatively, for one of NCCL's built-in ops (numbered as xcclRedOp_t) only. Ops from
// ncclRedOpCreatePreMulSum are the vendor's handles: forwarded, saying so once.
bool ReducesNatively(ncclComm_t comm, NativeOp which, ncclRedOp_t op, const char* function) {
  const bool built_in =
      static_cast<int>(op) >= 0 && static_cast<int>(op) < static_cast<int>(ncclNumOps);
  if (built_in) return RunsNatively(comm, which, function);
  InfoOnce(function, "op " + std::to_string(static_cast<int>(op)) +
                         " is not one of NCCL's built-in ops (a user-defined op such as "
                         "ncclRedOpCreatePreMulSum's): forwarded to the vendor library");
  return false;
}

}  // namespace

XCCL_SHIM_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                            ncclDataType_t datatype, ncclRedOp_t op,
                                            ncclComm_t comm, cudaStream_t stream) {
  if (ReducesNatively(comm, NativeOp::kAllReduce, op, "ncclAllReduce")) {
    return CheckXccl(xcclAllReduce(sendbuff, recvbuff, count, static_cast<xcclDataType_t>(datatype),
                                   static_cast<xcclRedOp_t>(op), comm->xccl, stream),
                     "ncclAllReduce", comm->xccl);
  }
  XCCL_SHIM_FORWARD(ncclAllReduce, comm, sendbuff, recvbuff, count, datatype, op, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclAllReduce,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                                                size_t recvcount, ncclDataType_t datatype,
                                                ncclRedOp_t op, ncclComm_t comm,
                                                cudaStream_t stream) {
  if (ReducesNatively(comm, NativeOp::kReduceScatter, op, "ncclReduceScatter")) {
    return CheckXccl(
        xcclReduceScatter(sendbuff, recvbuff, recvcount, static_cast<xcclDataType_t>(datatype),
                          static_cast<xcclRedOp_t>(op), comm->xccl, stream),
        "ncclReduceScatter", comm->xccl);
  }
  XCCL_SHIM_FORWARD(ncclReduceScatter, comm, sendbuff, recvbuff, recvcount, datatype, op, vc,
                    stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclReduceScatter,
                (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, int root,
                                         ncclComm_t comm, cudaStream_t stream) {
  XCCL_SHIM_FORWARD(ncclReduce, comm, sendbuff, recvbuff, count, datatype, op, root, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclReduce,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream));

// ncclBcast is ncclBroadcast in place.
XCCL_SHIM_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  if (RunsNatively(comm, NativeOp::kBroadcast, "ncclBcast"))
    return CheckXccl(xcclBroadcast(buff, buff, count, static_cast<xcclDataType_t>(datatype), root,
                                   comm->xccl, stream),
                     "ncclBcast", comm->xccl);
  XCCL_SHIM_FORWARD(ncclBcast, comm, buff, count, datatype, root, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclBcast,
                (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                 cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                            ncclDataType_t datatype, int root, ncclComm_t comm,
                                            cudaStream_t stream) {
  if (RunsNatively(comm, NativeOp::kBroadcast, "ncclBroadcast"))
    return CheckXccl(xcclBroadcast(sendbuff, recvbuff, count, static_cast<xcclDataType_t>(datatype),
                                   root, comm->xccl, stream),
                     "ncclBroadcast", comm->xccl);
  XCCL_SHIM_FORWARD(ncclBroadcast, comm, sendbuff, recvbuff, count, datatype, root, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclBroadcast,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 int root, ncclComm_t comm, cudaStream_t stream));

namespace {

// NCCL (2.28+) spells it ncclAlltoAll, RCCL ncclAllToAll: either name forwards to whichever
// the vendor library has.
ncclResult_t ForwardAllToAll(const char* name, const char* other_name, const void* sendbuff,
                             void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                             cudaStream_t stream) {
  decltype(&ncclAlltoAll) fn = nullptr;
  ncclComm_t vc = nullptr;
  ncclResult_t r = PrepareForward(name, comm, &fn, &vc, other_name);
  if (r != ncclSuccess) return r;
  return FinishForward(name, vc, fn(sendbuff, recvbuff, count, datatype, vc, stream));
}

}  // namespace

XCCL_SHIM_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                           ncclDataType_t datatype, ncclComm_t comm,
                                           cudaStream_t stream) {
  return ForwardAllToAll("ncclAlltoAll", "ncclAllToAll", sendbuff, recvbuff, count, datatype, comm,
                         stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclAlltoAll,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                           ncclDataType_t datatype, ncclComm_t comm,
                                           cudaStream_t stream) {
  return ForwardAllToAll("ncclAllToAll", "ncclAlltoAll", sendbuff, recvbuff, count, datatype, comm,
                         stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclAllToAll,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[],
                                            const size_t sdispls[], void* recvbuff,
                                            const size_t recvcounts[], const size_t rdispls[],
                                            ncclDataType_t datatype, ncclComm_t comm,
                                            cudaStream_t stream) {
  XCCL_SHIM_FORWARD(ncclAllToAllv, comm, sendbuff, sendcounts, sdispls, recvbuff, recvcounts,
                    rdispls, datatype, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclAllToAllv,
                (const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                 void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         cudaStream_t stream) {
  XCCL_SHIM_FORWARD(ncclGather, comm, sendbuff, recvbuff, count, datatype, root, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGather,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 int root, ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  XCCL_SHIM_FORWARD(ncclScatter, comm, sendbuff, recvbuff, count, datatype, root, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclScatter,
                (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 int root, ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                       int peer, ncclComm_t comm, cudaStream_t stream) {
  XCCL_SHIM_FORWARD(ncclSend, comm, sendbuff, count, datatype, peer, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclSend,
                (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                 ncclComm_t comm, cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int peer, ncclComm_t comm, cudaStream_t stream) {
  XCCL_SHIM_FORWARD(ncclRecv, comm, recvbuff, count, datatype, peer, vc, stream);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclRecv,
                (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                 cudaStream_t stream));

XCCL_SHIM_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                       ncclDataType_t datatype,
                                                       ncclScalarResidence_t residence,
                                                       ncclComm_t comm) {
  XCCL_SHIM_FORWARD(ncclRedOpCreatePreMulSum, comm, op, scalar, datatype, residence, vc);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclRedOpCreatePreMulSum,
                (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype,
                 ncclScalarResidence_t residence, ncclComm_t comm));

XCCL_SHIM_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  XCCL_SHIM_FORWARD(ncclRedOpDestroy, comm, op, vc);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

// Revoke stops in-flight work after a failure: xccl's communicator natively (and a vendor
// communicator that exists too; creating one then, a collective, would be wrong).
XCCL_SHIM_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL: nothing to revoke
  if (IsLiveComm(comm) && comm->xccl != nullptr) {
    ncclResult_t r =
        CheckXccl(xcclCommRevoke(comm->xccl, revokeFlags), "ncclCommRevoke", comm->xccl);
    if (r != ncclSuccess || !comm->vendor) return r;
  }
  XCCL_SHIM_FORWARD(ncclCommRevoke, comm, vc, revokeFlags);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags));

// Split makes vendor-only communicators (forwarded); Shrink of an xccl communicator is native.
XCCL_SHIM_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                            ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* name = "ncclCommSplit";
  if (!newcomm) return Fail(ncclInvalidArgument, name, "newcomm is NULL");
  decltype(&ncclCommSplit) fn = nullptr;
  ncclComm_t vc = nullptr;
  ncclResult_t r = PrepareForward(name, comm, &fn, &vc);
  if (r != ncclSuccess) return r;
  std::vector<unsigned char> storage;
  ncclConfig_t* blocking = nullptr;
  XCCL_SHIM_TRY(BlockingConfigCopy(config, name, &storage, &blocking));
  ncclComm_t vendor_new = nullptr;
  r = FinishForward(name, vc, fn(vc, color, key, &vendor_new, blocking));
  if (r != ncclSuccess && r != ncclInProgress) return r;
  *newcomm = nullptr;
  return vendor_new ? WrapVendorComm(vendor_new, newcomm, name) : r;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommSplit,
                (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));

XCCL_SHIM_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                             int excludeRanksCount, ncclComm_t* newcomm,
                                             ncclConfig_t* config, int shrinkFlags) {
  const char* name = "ncclCommShrink";
  if (!newcomm) return Fail(ncclInvalidArgument, name, "newcomm is NULL");
  // xccl's communicators shrink natively: the survivors need nothing of the excluded ranks.
  if (IsLiveComm(comm) && comm->xccl != nullptr)
    return NativeShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  decltype(&ncclCommShrink) fn = nullptr;
  ncclComm_t vc = nullptr;
  ncclResult_t r = PrepareForward(name, comm, &fn, &vc);
  if (r != ncclSuccess) return r;
  std::vector<unsigned char> storage;
  ncclConfig_t* blocking = nullptr;
  XCCL_SHIM_TRY(BlockingConfigCopy(config, name, &storage, &blocking));
  ncclComm_t vendor_new = nullptr;
  r = FinishForward(
      name, vc, fn(vc, excludeRanksList, excludeRanksCount, &vendor_new, blocking, shrinkFlags));
  if (r != ncclSuccess && r != ncclInProgress) return r;
  *newcomm = nullptr;
  return vendor_new ? WrapVendorComm(vendor_new, newcomm, name) : r;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommShrink,
                (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                 ncclConfig_t* config, int shrinkFlags));

// Logging is the vendor's business here (xccl reads its own XCCL_DEBUG once).
XCCL_SHIM_EXPORT void ncclResetDebugInit() {
  auto fn = VendorFunction<decltype(&ncclResetDebugInit)>("ncclResetDebugInit");
  if (fn) fn();
}
XCCL_SHIM_PNCCL(void, ncclResetDebugInit, ());
