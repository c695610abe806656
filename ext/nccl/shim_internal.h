// State shared by the shim's translation units: the communicator struct behind ncclComm_t,
// the vendor library (the real NCCL/RCCL the shim forwards to), and error bookkeeping.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "nccl_abi.h"
#include "xccl.h"

// Exports a pnccl twin as an alias of the nccl function defined just above it: the profiler
// interface (PMPI-style) expects both names to reach the same code.
#define XCCL_SHIM_EXPORT extern "C" __attribute__((visibility("default")))
#define XCCL_SHIM_PNCCL(ret, name, params) \
  XCCL_SHIM_EXPORT ret p##name params __attribute__((alias(#name)))

namespace xccl_shim {

// Comms that share a single ncclCommInitAll call. One thread drives all of them, so their
// vendor communicators must come from one vendor ncclCommInitAll as well (a per-rank vendor
// ncclCommInitRank would wait for ranks this same thread has not reached yet).
struct Clique {
  std::vector<ncclComm_t> comms;
  std::vector<int> devices;  // empty: the vendor's default (devlist NULL)
  bool vendor_tried = false;
  ncclResult_t vendor_result = ncclSuccess;
};

}  // namespace xccl_shim

// The struct ncclComm_t points to. It is the shim's own, so a handle given to the client is
// always recognisable; the vendor communicator (if any) is created lazily on the first
// forwarded call.
struct ncclComm {
  xcclComm_t xccl = nullptr;  // null for vendor-only comms (ncclCommSplit/Shrink results)
  int nranks = 0;
  int rank = 0;
  int device = 0;
  // Ranks per LSA team of the device API (NCCL's rule, see device_api.cc), from xccl's node
  // split at init; 1 until then.
  int lsa_size = 1;

  // Vendor id chosen by rank 0 at init and spread over xccl, so that every rank can create
  // its vendor communicator later without another rendezvous.
  bool have_vendor_id = false;
  ncclUniqueId vendor_id{};
  // The caller's config (bytes as given, capped) for the vendor's init; strings copied
  // because the caller's pointers need not outlive ncclCommInitRankConfig.
  bool have_config = false;
  std::atomic<bool> finalized{false};  // ncclCommFinalize ran (NCCL refuses a second one)
  std::vector<unsigned char> config_bytes;
  std::string comm_name, net_name;

  std::shared_ptr<xccl_shim::Clique> clique;  // set by ncclCommInitAll

  std::mutex vendor_mu;
  void* vendor = nullptr;  // the vendor's ncclComm_t
  bool vendor_tried = false;
  ncclResult_t vendor_result = ncclSuccess;

  std::mutex reg_mu;
  std::unordered_set<void*> registrations;  // handles given out by ncclCommRegister
};

namespace xccl_shim {

// Live handles: a destroyed or foreign pointer is refused with ncclInvalidArgument instead of
// being dereferenced.
void RegisterComm(ncclComm_t comm);
void UnregisterComm(ncclComm_t comm);
bool IsLiveComm(ncclComm_t comm);
// Vendor communicators the shim made or wrapped, from the moment the vendor returns one until
// after its release. The shim's exported nccl* functions can receive one: where the vendor
// library's internal calls to its own exported functions are interposed (LD_PRELOAD puts the
// shim first), those calls arrive here with the vendor's handle, during its destroy too.
void NoteVendorHandle(void* handle);
void ForgetVendorHandle(void* handle);
bool IsVendorHandle(ncclComm_t handle);

// The message ncclGetLastError returns; set by every failing shim call, per thread.
ncclResult_t Fail(ncclResult_t result, const char* function, const std::string& message);
void SetLastError(const std::string& message);
const std::string& LastError();
ncclResult_t FromXccl(xcclResult_t result);
// Maps an xccl failure and records xccl's message under the function's name.
ncclResult_t CheckXccl(xcclResult_t result, const char* function, xcclComm_t comm);

// Returns a failed call's result.
#define XCCL_SHIM_TRY(call)                         \
  do {                                              \
    const ncclResult_t shim_try_ = (call);          \
    if (shim_try_ != ncclSuccess) return shim_try_; \
  } while (0)

// A copy of the caller's config (its `size` bytes, checked first: magic and size) with
// `blocking` set, in `storage`, for calls the shim makes on the vendor: they must complete
// before the shim returns, since a non-blocking vendor would write its new communicator later
// into a variable of the shim's that no longer exists. *copy points at it (NULL for no config).
ncclResult_t BlockingConfigCopy(const ncclConfig_t* config, const char* function,
                                std::vector<unsigned char>* storage, ncclConfig_t** copy);

// The device API's LSA team size (ncclComm::lsa_size) of an xccl communicator of `nranks`
// ranks, from xccl's node split; fails naming `function` where xccl cannot tell it.
ncclResult_t LsaSizeOf(xcclComm_t comm, int nranks, const char* function, int* lsa_size);

// Which collectives run natively (XCCL_NCCL_NATIVE, read once; every one by default).
enum class NativeOp { kAllGather, kReduceScatter, kAllReduce, kBroadcast };
bool Native(NativeOp op);

// One line "xccl nccl shim: INFO <function>: <what>" on stderr where XCCL_DEBUG is INFO or
// TRACE, once per process for each (function, what) pair: which path a call takes, and why.
void InfoOnce(const char* function, const std::string& what);

// Group depth of this thread (ncclGroupStart/End), and how many of those levels have been
// opened on the vendor too (only once a forwarded call happened inside the group).
int& GroupDepth();
int& VendorGroupDepth();
// The first failure of a call made inside this thread's group (Fail records it): the outermost
// ncclGroupEnd returns it, as NCCL's does, and clears it.
ncclResult_t& GroupError();

// The vendor library: null when none is loadable; the message says why.
struct Vendor {
  void* handle = nullptr;
  std::string path;
  std::string why_none;
  void* Symbol(const char* name) const;
};
const Vendor& GetVendor();

// Rank 0's vendor unique id, spread to all ranks through xccl (collective over the comm).
ncclResult_t ExchangeVendorId(ncclComm_t comm);
// The vendor communicator of comm, created on first use (collective over the comm's ranks,
// so it is only called from calls every rank makes). Sets *vendor_comm or fails naming
// `function`.
ncclResult_t EnsureVendorComm(ncclComm_t comm, const char* function, void** vendor_comm);
// Wraps a vendor communicator (from Split/Shrink) into a shim handle.
ncclResult_t WrapVendorComm(void* vendor_comm, ncclComm_t* out, const char* function);
// ncclCommShrink of a communicator xccl made: xcclCommShrink, the child wrapped as at init.
ncclResult_t NativeShrink(ncclComm_t comm, int* exclude, int n_exclude, ncclComm_t* newcomm,
                          const ncclConfig_t* config, int flags);

// Forwarding helpers for calls without a communicator.
template <typename Fn>
Fn VendorFunction(const char* name) {
  return reinterpret_cast<Fn>(GetVendor().Symbol(name));
}
ncclResult_t NoVendor(const char* function);

// The vendor's `name` (or `alt_name`) into *fn: NoVendor or ncclInvalidUsage naming it if the
// vendor library is missing or lacks it.
template <typename Fn>
ncclResult_t PrepareVendorFunction(const char* name, Fn* fn, const char* alt_name = nullptr) {
  if (!GetVendor().handle) return NoVendor(name);
  *fn = VendorFunction<Fn>(name);
  if (!*fn && alt_name) *fn = VendorFunction<Fn>(alt_name);
  if (!*fn)
    return Fail(ncclInvalidUsage, name,
                "xccl has no native path for it and the vendor library " + GetVendor().path +
                    " does not export it");
  return ncclSuccess;
}

// Opens vendor group levels so that the vendor sees the same grouping as the client.
ncclResult_t SyncVendorGroup();

// Everything a forwarded call with a communicator needs before it runs: the shim handle
// checked, the vendor function found, the vendor communicator made on first use, and the
// client's group level mirrored on the vendor.
template <typename Fn>
ncclResult_t PrepareForward(const char* name, ncclComm_t comm, Fn* fn, ncclComm_t* vendor_comm,
                            const char* alt_name = nullptr) {
  const bool live = IsLiveComm(comm);
  if (!live && IsVendorHandle(comm)) {  // the vendor calling itself: pass through
    *vendor_comm = comm;
    return PrepareVendorFunction(name, fn, alt_name);
  }
  if (!live)
    return Fail(ncclInvalidArgument, name,
                comm ? "not a live communicator (destroyed, or not made by this library)"
                     : "communicator is NULL");
  ncclResult_t r = PrepareVendorFunction(name, fn, alt_name);
  if (r != ncclSuccess) return r;
  void* vc = nullptr;
  r = EnsureVendorComm(comm, name, &vc);
  if (r != ncclSuccess) return r;
  r = SyncVendorGroup();
  if (r != ncclSuccess) return r;
  *vendor_comm = static_cast<ncclComm_t>(vc);
  return ncclSuccess;
}

// The vendor's result, its message recorded under `name` on failure.
ncclResult_t FinishForward(const char* name, ncclComm_t vendor_comm, ncclResult_t r);

}  // namespace xccl_shim

// In a native function taking `comm`: a vendor handle (see IsVendorHandle) goes straight to the
// vendor's own `name`.
#define XCCL_SHIM_PASS_VENDOR_HANDLE(name, comm, ...)                      \
  do {                                                                     \
    if (!xccl_shim::IsLiveComm(comm) && xccl_shim::IsVendorHandle(comm)) { \
      auto vendor_fn_ = xccl_shim::VendorFunction<decltype(&name)>(#name); \
      if (vendor_fn_) return vendor_fn_(__VA_ARGS__);                      \
    }                                                                      \
  } while (0)

// Runs the vendor's `name` with the given arguments (vc names the vendor communicator).
#define XCCL_SHIM_FORWARD(name, comm, ...)                               \
  do {                                                                   \
    decltype(&name) fn_ = nullptr;                                       \
    ncclComm_t vc = nullptr;                                             \
    ncclResult_t r_ = xccl_shim::PrepareForward(#name, comm, &fn_, &vc); \
    if (r_ != ncclSuccess) return r_;                                    \
    return xccl_shim::FinishForward(#name, vc, fn_(__VA_ARGS__));        \
  } while (0)
