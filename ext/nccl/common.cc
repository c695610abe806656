// Handle registry, error bookkeeping and parameters of the shim.
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "shim_internal.h"

namespace xccl_shim {
namespace {

std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex();  // leaked on purpose: usable from atexit paths
  return *mu;
}
std::unordered_set<ncclComm_t>& Registry() {
  static auto* set = new std::unordered_set<ncclComm_t>();
  return *set;
}

std::string& LastErrorStorage() {
  thread_local std::string message;
  return message;
}

// The ops XCCL_NCCL_NATIVE may list, by NativeOp, under their NCCL names (lower case) and
// xccl's.
struct NativeName {
  NativeOp op;
  const char* nccl;
  const char* xccl;
};
constexpr NativeName kNativeNames[] = {
    {NativeOp::kAllGather, "allgather", "all_gather"},
    {NativeOp::kReduceScatter, "reducescatter", "reduce_scatter"},
    {NativeOp::kAllReduce, "allreduce", "all_reduce"},
    {NativeOp::kBroadcast, "broadcast", "bcast"},
};
constexpr int kNativeOpCount = sizeof(kNativeNames) / sizeof(kNativeNames[0]);

struct NativeSet {
  bool on[kNativeOpCount] = {};
};

NativeSet ParseNative() {
  NativeSet set;
  const char* env = getenv("XCCL_NCCL_NATIVE");
  if (!env) {
    for (bool& on : set.on) on = true;
    return set;
  }
  std::stringstream ss(env);
  std::string op;
  while (std::getline(ss, op, ',')) {
    op.erase(std::remove_if(op.begin(), op.end(), [](unsigned char ch) { return isspace(ch); }),
             op.end());
    std::transform(op.begin(), op.end(), op.begin(),
                   [](unsigned char ch) { return static_cast<char>(tolower(ch)); });
    bool known = op.empty() || op == "none";
    for (const NativeName& name : kNativeNames) {
      if (op == name.nccl || op == name.xccl) {
        set.on[static_cast<int>(name.op)] = true;
        known = true;
      }
    }
    if (!known) {
      // Listing an op xccl cannot run yet is not an error: it is simply forwarded.
      fprintf(stderr,
              "xccl nccl shim: WARN XCCL_NCCL_NATIVE lists '%s', which has no native "
              "path; it is forwarded to the vendor library\n",
              op.c_str());
    }
  }
  return set;
}

}  // namespace

void RegisterComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(comm);
}
void UnregisterComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(comm);
}
namespace {
// Vendor communicators the shim made or wrapped and has not yet released; guarded by
// RegistryMutex (a multiset: a vendor may hand out an address again after a release).
std::unordered_multiset<void*>& VendorHandles() {
  static auto* handles = new std::unordered_multiset<void*>();
  return *handles;
}
}  // namespace

void NoteVendorHandle(void* handle) {
  if (!handle) return;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  VendorHandles().insert(handle);
}
void ForgetVendorHandle(void* handle) {
  if (!handle) return;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = VendorHandles().find(handle);
  if (it != VendorHandles().end()) VendorHandles().erase(it);
}
bool IsVendorHandle(ncclComm_t handle) {
  if (!handle) return false;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return VendorHandles().count(handle) != 0;
}
bool IsLiveComm(ncclComm_t comm) {
  if (!comm) return false;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registry().count(comm) != 0;
}

void SetLastError(const std::string& message) { LastErrorStorage() = message; }
const std::string& LastError() { return LastErrorStorage(); }

ncclResult_t Fail(ncclResult_t result, const char* function, const std::string& message) {
  SetLastError(std::string(function) + ": " + message);
  if (GroupDepth() > 0 && GroupError() == ncclSuccess && result != ncclSuccess &&
      result != ncclInProgress)
    GroupError() = result;
  return result;
}

ncclResult_t FromXccl(xcclResult_t result) {
  if (result >= xcclSuccess && result <= xcclInProgress) return static_cast<ncclResult_t>(result);
  // xcclTimeout: a wait passed its deadline because a peer never arrived or stalled. NCCL has
  // no timeout code; ncclRemoteError ("a remote process failed") is what its clients
  // (PyTorch's watchdog among them) treat as a peer problem, which this is.
  if (result == xcclTimeout) return ncclRemoteError;
  return ncclInternalError;
}

ncclResult_t CheckXccl(xcclResult_t result, const char* function, xcclComm_t comm) {
  if (result == xcclSuccess) return ncclSuccess;
  return Fail(FromXccl(result), function, xcclGetLastError(comm));
}

ncclResult_t BlockingConfigCopy(const ncclConfig_t* config, const char* function,
                                std::vector<unsigned char>* storage, ncclConfig_t** copy) {
  *copy = nullptr;
  if (!config) return ncclSuccess;
  // A larger "size" is garbage, not a newer header.
  constexpr size_t kMaxConfigBytes = 4096;
  if (config->magic != XCCL_SHIM_CONFIG_MAGIC)
    return Fail(ncclInvalidArgument, function,
                "ncclConfig_t has a wrong magic (was it set up with NCCL_CONFIG_INITIALIZER?)");
  if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int) ||
      config->size > kMaxConfigBytes)
    return Fail(ncclInvalidArgument, function,
                "ncclConfig_t size " + std::to_string(config->size) + " is not a config's");
  storage->assign(reinterpret_cast<const unsigned char*>(config),
                  reinterpret_cast<const unsigned char*>(config) + config->size);
  *copy = reinterpret_cast<ncclConfig_t*>(storage->data());
  (*copy)->blocking = 1;
  return ncclSuccess;
}

bool Native(NativeOp op) {
  static const NativeSet set = ParseNative();
  return set.on[static_cast<int>(op)];
}

void InfoOnce(const char* function, const std::string& what) {
  static const bool info = [] {
    const char* level = getenv("XCCL_DEBUG");
    return level && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0);
  }();
  if (!info) return;
  static auto* mu = new std::mutex();  // leaked on purpose, as the registry's
  static auto* said = new std::set<std::string>();
  const std::string line = std::string(function) + ": " + what;
  {
    std::lock_guard<std::mutex> lock(*mu);
    if (!said->insert(line).second) return;
  }
  fprintf(stderr, "xccl nccl shim: INFO %s\n", line.c_str());
}

int& GroupDepth() {
  thread_local int depth = 0;
  return depth;
}
int& VendorGroupDepth() {
  thread_local int depth = 0;
  return depth;
}
ncclResult_t& GroupError() {
  thread_local ncclResult_t error = ncclSuccess;
  return error;
}

}  // namespace xccl_shim
