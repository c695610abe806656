#include "transport/user_memory.h"

#include <map>
#include <mutex>

#include "base/error.h"
#include "platform/shareable_memory.h"
#include "transport/allocation_imports.h"
#include "transport/peer_imports.h"

namespace xccl {

namespace {

struct Entry {
  UserAllocation allocation;
  int pins = 0;
};

struct Registry {
  std::mutex mutex;
  std::map<const char*, Entry> by_base;  // ordered: the holder of a pointer is found by bound
  uint64_t next_serial = 1;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: frees may come at exit
  return *registry;
}

// The entry whose allocation holds [ptr, ptr + bytes), under the registry's mutex.
Entry* Holder(Registry& r, const void* ptr, size_t bytes) {
  const char* p = static_cast<const char*>(ptr);
  auto it = r.by_base.upper_bound(p);
  if (it == r.by_base.begin()) return nullptr;
  --it;
  const UserAllocation& a = it->second.allocation;
  if (p < a.base || bytes > a.bytes || static_cast<size_t>(p - a.base) > a.bytes - bytes)
    return nullptr;
  return &it->second;
}

}  // namespace

xcclResult_t AllocateUserMemory(size_t bytes, void** ptr) {
  CloseReleasedImports();  // this thread may wait for the device, as allocating does anyway
  UserAllocation a;
  void* memory = nullptr;
  XCCL_TRY(AllocateShareable(bytes, &memory, &a.device));
  a.base = static_cast<char*>(memory);
  a.bytes = bytes;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  a.serial = r.next_serial++;
  r.by_base[a.base] = Entry{a, 0};
  *ptr = memory;
  return xcclSuccess;
}

xcclResult_t FreeUserMemory(void* ptr) {
  Registry& r = TheRegistry();
  UserAllocation a;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.by_base.find(static_cast<const char*>(ptr));
    if (it == r.by_base.end())
      return FailQuietly(xcclInvalidArgument, "%p was not returned by xcclMemAlloc (or was freed)",
                         ptr);
    if (it->second.pins > 0)
      return FailQuietly(xcclInvalidUsage,
                         "%p lies in %d registered window(s): xcclCommWindowDeregister them first",
                         ptr, it->second.pins);
    a = it->second.allocation;
    r.by_base.erase(it);
  }
  ReleasePeerImports(a.serial);  // before the memory goes: no peer uses a map of it
  CloseReleasedImports();        // this thread may wait for the device, as freeing does anyway
  FreeShareable(a.device, a.base);
  return xcclSuccess;
}

bool FindUserAllocation(const void* ptr, size_t bytes, bool pin, UserAllocation* out) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Entry* e = Holder(r, ptr, bytes);
  if (e == nullptr) return false;
  if (pin) ++e->pins;
  *out = e->allocation;
  return true;
}

void UnpinUserAllocation(uint64_t serial) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& [base, e] : r.by_base) {
    if (e.allocation.serial == serial && e.pins > 0) {
      --e.pins;
      return;
    }
  }
}

}  // namespace xccl
