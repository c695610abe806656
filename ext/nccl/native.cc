// The nccl* calls xccl serves itself: versions, errors, communicator life cycle and queries,
// all_gather, memory, registration and groups.
#include <strings.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "device_memory.h"
#include "shim_internal.h"

using namespace xccl_shim;

namespace {

constexpr unsigned int kFirstConfigVersion = 21400;  // NCCL 2.14 introduced ncclConfig_t

bool HasField(const ncclConfig_t* config, size_t offset, size_t size) {
  return offset + size <= config->size;
}
#define XCCL_SHIM_HAS(config, field) \
  HasField(config, offsetof(ncclConfig_t, field), sizeof(((ncclConfig_t*)nullptr)->field))

// Reads what the caller's config has (its size says which fields exist: older headers are a
// prefix of v22800, newer ones append fields that are ignored), fills xccl's config, and keeps
// a copy for the vendor's later init.
ncclResult_t ParseConfig(const ncclConfig_t* config, ncclComm_t comm, xcclConfig_t* xc,
                         const char* function) {
  if (!config) return ncclSuccess;
  // The vendor communicator is made later, possibly from another call's stack: blocking.
  ncclConfig_t* copy = nullptr;
  XCCL_SHIM_TRY(BlockingConfigCopy(config, function, &comm->config_bytes, &copy));
  if (config->version < kFirstConfigVersion)
    return Fail(
        ncclInvalidArgument, function,
        "ncclConfig_t version " + std::to_string(config->version) + " predates NCCL configs");
  // The switches NCCL takes as 0 or 1 (or unset), and its CTA bounds, refused as NCCL refuses
  // them, where the caller's header has the field.
  auto is_switch = [](int v) { return v == NCCL_CONFIG_UNDEF_INT || v == 0 || v == 1; };
  if (!is_switch(config->blocking))
    return Fail(ncclInvalidArgument, function, "ncclConfig_t blocking must be 0 or 1");
  if (XCCL_SHIM_HAS(config, splitShare) && !is_switch(config->splitShare))
    return Fail(ncclInvalidArgument, function, "ncclConfig_t splitShare must be 0 or 1");
  if (XCCL_SHIM_HAS(config, collnetEnable) && !is_switch(config->collnetEnable))
    return Fail(ncclInvalidArgument, function, "ncclConfig_t collnetEnable must be 0 or 1");
  if (XCCL_SHIM_HAS(config, maxCTAs) && config->minCTAs != NCCL_CONFIG_UNDEF_INT &&
      config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->minCTAs > config->maxCTAs)
    return Fail(ncclInvalidArgument, function,
                "ncclConfig_t minCTAs " + std::to_string(config->minCTAs) + " exceeds maxCTAs " +
                    std::to_string(config->maxCTAs));
  // xccl's init always completes before returning; a non-blocking caller then simply sees
  // ncclSuccess instead of ncclInProgress, which NCCL allows.
  xc->blocking = 1;
  // The copy's strings point at the shim's own copies.
  if (XCCL_SHIM_HAS(config, commName) && config->commName) {
    comm->comm_name = config->commName;
    copy->commName = comm->comm_name.c_str();
    xc->commName = comm->comm_name.c_str();
  }
  if (XCCL_SHIM_HAS(config, netName) && config->netName) {
    comm->net_name = config->netName;
    copy->netName = comm->net_name.c_str();
  }
  comm->have_config = true;
  return ncclSuccess;
}

bool EagerVendorInit() {
  const char* v = getenv("XCCL_NCCL_VENDOR_INIT");
  return v && strcasecmp(v, "eager") == 0;
}

ncclResult_t InitRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config, const char* function) {
  if (!out) return Fail(ncclInvalidArgument, function, "comm is NULL");
  *out = nullptr;
  auto* c = new ncclComm();
  xcclConfig_t xc = XCCL_CONFIG_INITIALIZER;
  ncclResult_t r = ParseConfig(config, c, &xc, function);
  if (r != ncclSuccess) {
    delete c;
    return r;
  }
  // The shim's unique id is xccl's, byte for byte: both are 128 bytes.
  xcclUniqueId xid;
  static_assert(sizeof(xid) == sizeof(id), "unique ids must have one size");
  memcpy(&xid, &id, sizeof(xid));
  r = CheckXccl(xcclCommInitRankConfig(&c->xccl, nranks, xid, rank, &xc), function, nullptr);
  if (r != ncclSuccess) {
    delete c;
    return r;
  }
  c->nranks = nranks;
  c->rank = rank;
  xcclCommDevice(c->xccl, &c->device);
  r = LsaSizeOf(c->xccl, nranks, function, &c->lsa_size);
  if (r == ncclSuccess) r = ExchangeVendorId(c);
  if (r == ncclSuccess && EagerVendorInit() && c->have_vendor_id) {
    void* vendor = nullptr;
    r = EnsureVendorComm(c, function, &vendor);
  }
  if (r != ncclSuccess) {
    xcclCommAbort(c->xccl);
    delete c;
    return r;
  }
  RegisterComm(c);
  *out = c;
  return ncclSuccess;
}

ncclResult_t CheckComm(ncclComm_t comm, const char* function) {
  if (IsLiveComm(comm)) return ncclSuccess;
  return Fail(ncclInvalidArgument, function,
              comm ? "not a live communicator (destroyed, or not made by this library)"
                   : "communicator is NULL");
}

using VendorCommFn = ncclResult_t (*)(ncclComm_t);

// Frees the vendor communicator (Destroy or Abort), the xccl one, and the handle.
ncclResult_t Release(ncclComm_t comm, const char* function, const char* vendor_name,
                     xcclResult_t (*xccl_release)(xcclComm_t)) {
  ncclResult_t r = CheckComm(comm, function);
  if (r != ncclSuccess) return r;
  UnregisterComm(comm);
  if (comm->clique) {
    // A member that goes before the clique's vendor communicators exist makes creating them
    // impossible later (their vendor init needs all members).
    auto& c = *comm->clique;
    if (!c.vendor_tried) {
      c.vendor_tried = true;
      c.vendor_result = ncclInvalidUsage;
    }
  }
  if (comm->vendor) {
    auto fn = VendorFunction<VendorCommFn>(vendor_name);
    ncclResult_t vr = fn ? fn(static_cast<ncclComm_t>(comm->vendor)) : ncclSuccess;
    ForgetVendorHandle(comm->vendor);  // only now: the release may call back with it
    if (vr != ncclSuccess) {
      auto last = VendorFunction<decltype(&ncclGetLastError)>("ncclGetLastError");
      const char* msg = last ? last(nullptr) : nullptr;  // the handle may be gone
      r = Fail(vr, function,
               std::string("the vendor communicator's release failed (result ") +
                   std::to_string(static_cast<int>(vr)) +
                   "): " + (msg && *msg ? msg : "(no message)"));
    }
  }
  if (comm->xccl) {
    ncclResult_t xr = CheckXccl(xccl_release(comm->xccl), function, nullptr);
    if (r == ncclSuccess) r = xr;
  }
  for (void* handle : comm->registrations) delete static_cast<char*>(handle);
  delete comm;
  return r;
}

}  // namespace

namespace xccl_shim {

ncclResult_t NativeShrink(ncclComm_t comm, int* exclude, int n_exclude, ncclComm_t* newcomm,
                          const ncclConfig_t* config, int flags) {
  const char* function = "ncclCommShrink";
  *newcomm = nullptr;
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return Fail(ncclInvalidArgument, function,
                "shrinkFlags " + std::to_string(flags) +
                    " are neither NCCL_SHRINK_DEFAULT nor NCCL_SHRINK_ABORT");
  auto* c = new ncclComm();
  xcclConfig_t xc = XCCL_CONFIG_INITIALIZER;
  ncclResult_t r = ncclSuccess;
  if (config != nullptr) {
    r = ParseConfig(config, c, &xc, function);
  } else {  // NCCL: the child takes the parent's configuration
    c->have_config = comm->have_config;
    c->config_bytes = comm->config_bytes;
    c->comm_name = comm->comm_name;
    c->net_name = comm->net_name;
  }
  if (r == ncclSuccess)
    r = CheckXccl(
        xcclCommShrink(comm->xccl, exclude, n_exclude, &c->xccl, config != nullptr ? &xc : nullptr,
                       flags == NCCL_SHRINK_ABORT ? XCCL_SHRINK_ABORT : XCCL_SHRINK_DEFAULT),
        function, comm->xccl);
  if (r == ncclSuccess) {
    xcclCommCount(c->xccl, &c->nranks);
    xcclCommUserRank(c->xccl, &c->rank);
    xcclCommDevice(c->xccl, &c->device);
    r = LsaSizeOf(c->xccl, c->nranks, function, &c->lsa_size);
  }
  if (r == ncclSuccess) r = ExchangeVendorId(c);
  if (r != ncclSuccess) {
    if (c->xccl != nullptr) xcclCommAbort(c->xccl);
    delete c;
    return r;
  }
  RegisterComm(c);
  *newcomm = c;
  return ncclSuccess;
}

}  // namespace xccl_shim

XCCL_SHIM_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (!version) return Fail(ncclInvalidArgument, "ncclGetVersion", "version is NULL");
  *version = XCCL_SHIM_NCCL_VERSION_CODE;
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGetVersion, (int* version));

XCCL_SHIM_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) return Fail(ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
  xcclUniqueId xid;
  ncclResult_t r = CheckXccl(xcclGetUniqueId(&xid), "ncclGetUniqueId", nullptr);
  if (r == ncclSuccess) memcpy(uniqueId, &xid, sizeof(xid));
  return r;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));

XCCL_SHIM_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                     ncclUniqueId commId, int rank,
                                                     ncclConfig_t* config) {
  return InitRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommInitRankConfig,
                (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank,
                 ncclConfig_t* config));

XCCL_SHIM_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                               int rank) {
  return InitRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommInitRank,
                (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));

// Several ids would only speed up NCCL's bootstrap; every rank holds the same list, so the
// first one names the same rendezvous everywhere.
XCCL_SHIM_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                       int nId, ncclUniqueId* commIds,
                                                       ncclConfig_t* config) {
  if (nId < 1 || !commIds)
    return Fail(ncclInvalidArgument, "ncclCommInitRankScalable", "needs at least one id");
  return InitRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommInitRankScalable,
                (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                 ncclConfig_t* config));

XCCL_SHIM_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  if (!comm || ndev < 1) return Fail(ncclInvalidArgument, fn, "comm is NULL or ndev < 1");
  std::vector<xcclComm_t> xcomms(ndev);
  ncclResult_t r = CheckXccl(xcclCommInitAll(xcomms.data(), ndev, devlist), fn, nullptr);
  if (r != ncclSuccess) return r;
  std::vector<int> lsa_sizes(ndev, 1);
  for (int i = 0; i < ndev && r == ncclSuccess; ++i)
    r = LsaSizeOf(xcomms[i], ndev, fn, &lsa_sizes[i]);
  if (r != ncclSuccess) {
    for (xcclComm_t x : xcomms) xcclCommAbort(x);
    return r;
  }
  auto clique = std::make_shared<Clique>();
  if (devlist) clique->devices.assign(devlist, devlist + ndev);
  for (int i = 0; i < ndev; ++i) {
    auto* c = new ncclComm();
    c->xccl = xcomms[i];
    c->nranks = ndev;
    c->rank = i;
    xcclCommDevice(c->xccl, &c->device);
    c->lsa_size = lsa_sizes[i];
    c->clique = clique;
    clique->comms.push_back(c);
    RegisterComm(c);
    comm[i] = c;
  }
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist));

XCCL_SHIM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommFinalize, comm, comm);
  const char* fn = "ncclCommFinalize";
  ncclResult_t r = CheckComm(comm, fn);
  if (r != ncclSuccess) return r;
  // As NCCL: a communicator is finalized once (then destroyed).
  if (comm->finalized.exchange(true))
    return Fail(ncclInvalidArgument, fn, "the communicator was already finalized");
  if (comm->vendor) {
    auto vfn = VendorFunction<VendorCommFn>("ncclCommFinalize");
    if (vfn) r = vfn(static_cast<ncclComm_t>(comm->vendor));
    if (r != ncclSuccess) return Fail(r, fn, "the vendor's ncclCommFinalize failed");
  }
  return comm->xccl ? CheckXccl(xcclCommFinalize(comm->xccl), fn, comm->xccl) : ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL: nothing to free
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommDestroy, comm, comm);
  return Release(comm, "ncclCommDestroy", "ncclCommDestroy", xcclCommDestroy);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL: nothing to free
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommAbort, comm, comm);
  return Release(comm, "ncclCommAbort", "ncclCommAbort", xcclCommAbort);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommAbort, (ncclComm_t comm));

XCCL_SHIM_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled GPU runtime error";
    case ncclSystemError:
      return "system error (an operating system call failed)";
    case ncclInternalError:
      return "internal error (a bug in the library)";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote error (a peer failed, left or timed out)";
    case ncclInProgress:
      return "operation in progress";
    default:
      return "unknown result code";
  }
}
XCCL_SHIM_PNCCL(const char*, ncclGetErrorString, (ncclResult_t result));

XCCL_SHIM_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  // Every failing shim call (forwarded ones included, with the vendor's text) records its
  // message here; before any failure, a vendor communicator may still have one of its own.
  if (LastError().empty() && IsLiveComm(comm) && comm->vendor) {
    auto vfn = VendorFunction<decltype(&ncclGetLastError)>("ncclGetLastError");
    if (vfn) {
      const char* msg = vfn(static_cast<ncclComm_t>(comm->vendor));
      if (msg) return msg;
    }
  }
  return LastError().c_str();
}
XCCL_SHIM_PNCCL(const char*, ncclGetLastError, (ncclComm_t comm));

XCCL_SHIM_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommGetAsyncError, comm, comm, asyncError);
  const char* fn = "ncclCommGetAsyncError";
  ncclResult_t r = CheckComm(comm, fn);
  if (r != ncclSuccess) return r;
  if (!asyncError) return Fail(ncclInvalidArgument, fn, "asyncError is NULL");
  *asyncError = ncclSuccess;
  if (comm->xccl) {
    xcclResult_t xr = xcclSuccess;
    r = CheckXccl(xcclCommGetAsyncError(comm->xccl, &xr), fn, comm->xccl);
    if (r != ncclSuccess) return r;
    *asyncError = FromXccl(xr);
  }
  if (*asyncError == ncclSuccess && comm->vendor) {
    auto vfn = VendorFunction<decltype(&ncclCommGetAsyncError)>("ncclCommGetAsyncError");
    if (vfn) return vfn(static_cast<ncclComm_t>(comm->vendor), asyncError);
  }
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));

XCCL_SHIM_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommCount, comm, comm, count);
  ncclResult_t r = CheckComm(comm, "ncclCommCount");
  if (r != ncclSuccess) return r;
  if (!count) return Fail(ncclInvalidArgument, "ncclCommCount", "count is NULL");
  *count = comm->nranks;
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));

XCCL_SHIM_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommCuDevice, comm, comm, device);
  ncclResult_t r = CheckComm(comm, "ncclCommCuDevice");
  if (r != ncclSuccess) return r;
  if (!device) return Fail(ncclInvalidArgument, "ncclCommCuDevice", "device is NULL");
  *device = comm->device;
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));

XCCL_SHIM_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommUserRank, comm, comm, rank);
  ncclResult_t r = CheckComm(comm, "ncclCommUserRank");
  if (r != ncclSuccess) return r;
  if (!rank) return Fail(ncclInvalidArgument, "ncclCommUserRank", "rank is NULL");
  *rank = comm->rank;
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));

// ncclMemAlloc is xcclMemAlloc: memory the node's peers can map, so that windows on it (and the
// all_gathers into them) run zero-copy across processes; ncclMemFree takes only such pointers.
XCCL_SHIM_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return CheckXccl(xcclMemAlloc(ptr, size), "ncclMemAlloc", nullptr);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size));

XCCL_SHIM_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  return CheckXccl(xcclMemFree(ptr), "ncclMemFree", nullptr);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclMemFree, (void* ptr));

// Registrations of a communicator with an xccl side are xccl's (xcclCommRegister); one made
// only on the vendor (a split's result) tracks its handles to refuse bogus ones at
// deregistration, and nothing else happens.
XCCL_SHIM_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                               void** handle) {
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommRegister, comm, comm, buff, size, handle);
  const char* fn = "ncclCommRegister";
  ncclResult_t r = CheckComm(comm, fn);
  if (r != ncclSuccess) return r;
  if (comm->xccl)
    return CheckXccl(xcclCommRegister(comm->xccl, buff, size, handle), fn, comm->xccl);
  if (!handle || (!buff && size > 0))
    return Fail(ncclInvalidArgument, fn, "handle is NULL, or buff is NULL with size > 0");
  void* h = new char(0);
  std::lock_guard<std::mutex> lock(comm->reg_mu);
  comm->registrations.insert(h);
  *handle = h;
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommRegister,
                (const ncclComm_t comm, void* buff, size_t size, void** handle));

XCCL_SHIM_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  XCCL_SHIM_PASS_VENDOR_HANDLE(ncclCommDeregister, comm, comm, handle);
  const char* fn = "ncclCommDeregister";
  ncclResult_t r = CheckComm(comm, fn);
  if (r != ncclSuccess) return r;
  if (comm->xccl) return CheckXccl(xcclCommDeregister(comm->xccl, handle), fn, comm->xccl);
  std::lock_guard<std::mutex> lock(comm->reg_mu);
  if (comm->registrations.erase(handle) == 0)
    return Fail(ncclInvalidArgument, fn, "handle was not registered on this communicator");
  delete static_cast<char*>(handle);
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));

// Windows of a communicator with an xccl side are xccl's windows (the zero-copy all_gather's);
// a vendor-only communicator's go to the vendor.
XCCL_SHIM_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                                     ncclWindow_t* win, int winFlags) {
  if (IsLiveComm(comm) && comm->xccl) {
    // NCCL_WIN_COLL_SYMMETRIC (1) is the only flag NCCL 2.28 defines; xccl's windows are
    // symmetric in that sense already.
    return CheckXccl(
        xcclCommWindowRegister(comm->xccl, buff, size, reinterpret_cast<xcclWindow_t*>(win),
                               winFlags & ~1 ? winFlags : XCCL_WIN_DEFAULT),
        "ncclCommWindowRegister", comm->xccl);
  }
  XCCL_SHIM_FORWARD(ncclCommWindowRegister, comm, vc, buff, size, win, winFlags);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommWindowRegister,
                (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));

XCCL_SHIM_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  if (IsLiveComm(comm) && comm->xccl) {
    return CheckXccl(xcclCommWindowDeregister(comm->xccl, reinterpret_cast<xcclWindow_t>(win)),
                     "ncclCommWindowDeregister", comm->xccl);
  }
  XCCL_SHIM_FORWARD(ncclCommWindowDeregister, comm, vc, win);
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

// Groups: a depth counter per thread. Native calls inside a group run at once (xccl has no
// deferred launch yet), so one thread cannot drive several ranks of one native collective in
// a group; forwarded calls are grouped on the vendor exactly as the client grouped them.
XCCL_SHIM_EXPORT ncclResult_t ncclGroupStart() {
  ++GroupDepth();
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGroupStart, ());

XCCL_SHIM_EXPORT ncclResult_t ncclGroupEnd() {
  if (GroupDepth() == 0) return Fail(ncclInvalidUsage, "ncclGroupEnd", "no ncclGroupStart to end");
  --GroupDepth();
  ncclResult_t r = ncclSuccess;
  if (VendorGroupDepth() > GroupDepth()) {
    --VendorGroupDepth();
    auto vfn = VendorFunction<decltype(&ncclGroupEnd)>("ncclGroupEnd");
    r = vfn ? vfn() : ncclInternalError;
    if (r != ncclSuccess && r != ncclInProgress)
      r = Fail(r, "ncclGroupEnd", "the vendor's ncclGroupEnd failed");
  }
  // The outermost end reports the group's first failed call (its message is the last error
  // that call left, unless a later failure replaced it), as NCCL's ncclGroupEnd does.
  if (GroupDepth() == 0) {
    const ncclResult_t group = GroupError();
    GroupError() = ncclSuccess;
    if (group != ncclSuccess && (r == ncclSuccess || r == ncclInProgress)) r = group;
  }
  return r;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGroupEnd, ());

XCCL_SHIM_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  const char* fn = "ncclGroupSimulateEnd";
  if (!simInfo) return Fail(ncclInvalidArgument, fn, "simInfo is NULL");
  if (simInfo->magic != XCCL_SHIM_SIM_INFO_MAGIC)
    return Fail(ncclInvalidArgument, fn,
                "ncclSimInfo_t has a wrong magic (was it set up with NCCL_SIM_INFO_INITIALIZER?)");
  if (GroupDepth() == 0) return Fail(ncclInvalidUsage, fn, "no ncclGroupStart to end");
  --GroupDepth();
  if (VendorGroupDepth() > GroupDepth()) {
    --VendorGroupDepth();
    auto vfn = VendorFunction<decltype(&ncclGroupSimulateEnd)>(fn);
    if (!vfn) return Fail(ncclInvalidUsage, fn, "the vendor library lacks it");
    return vfn(simInfo);
  }
  // Only native calls in the group: they already ran, nothing is left to estimate.
  if (simInfo->size >= offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float))
    simInfo->estimatedTime = 0.0f;
  return ncclSuccess;
}
XCCL_SHIM_PNCCL(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));
