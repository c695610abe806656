#include "comm/comm_windows.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "platform/shareable_memory.h"
#include "transport/allocation_imports.h"
#include "transport/bootstrap/verdicts.h"
#include "transport/user_memory.h"

namespace xccl {

namespace {

struct WindowAnnounce {
  ShareableExport exported;
  uint64_t base;    // the allocation, valid in the announcing process only
  uint64_t offset;  // of the segment in it
  uint64_t serial;
  int32_t ok;
  int32_t pad;
};

// This rank's part of a registration: the checks, the pin and the export.
xcclResult_t AnnounceSegment(void* buff, size_t size, xcclWindow_t* win, WindowAnnounce* mine,
                             UserAllocation* allocation) {
  memset(mine, 0, sizeof(*mine));
  if (win == nullptr) return FailQuietly(xcclInvalidArgument, "win is NULL");
  if (buff == nullptr || size == 0)
    return FailQuietly(xcclInvalidArgument, "buff %p with size %zu: a window needs a buffer", buff,
                       size);
  if (!FindUserAllocation(buff, size, /*pin=*/true, allocation))
    return FailQuietly(xcclInvalidArgument,
                       "buff %p (%zu bytes) does not lie inside one xcclMemAlloc allocation", buff,
                       size);
  const xcclResult_t exported = ExportShareable(allocation->base, &mine->exported);
  if (exported != xcclSuccess) {
    UnpinUserAllocation(allocation->serial);
    return exported;
  }
  mine->base = reinterpret_cast<uintptr_t>(allocation->base);
  mine->offset = static_cast<uint64_t>(static_cast<char*>(buff) - allocation->base);
  mine->serial = allocation->serial;
  mine->ok = 1;
  return xcclSuccess;
}

// Every segment of this node as this process addresses it (importing other processes' ones).
xcclResult_t MapSegments(const Topology& topology, const std::vector<WindowAnnounce>& all,
                         xcclWindow* w, std::vector<char*>* at) {
  const int rank = topology.rank;
  for (int r = 0; r < topology.nranks; ++r) {
    if (topology.node_of_rank[r] != topology.node_of_rank[rank]) continue;
    if (!all[r].ok)
      return FailQuietly(xcclRemoteError, "rank %d could not register its window segment", r);
    if (r == rank || topology.SameProcess(r)) {
      (*at)[r] = reinterpret_cast<char*>(static_cast<uintptr_t>(all[r].base)) + all[r].offset;
      continue;
    }
    void* base = nullptr;
    XCCL_TRY(ImportShareable(topology.ranks[r].process_token, all[r].serial, all[r].exported,
                             w->device, &base));
    w->imported_token[r] = topology.ranks[r].process_token;
    w->imported_serial[r] = all[r].serial;
    if (base != nullptr) (*at)[r] = static_cast<char*>(base) + all[r].offset;
  }
  return xcclSuccess;
}

}  // namespace

CommWindows::~CommWindows() {
  for (auto& w : windows_) Release(w.get());
}

void CommWindows::Release(xcclWindow* w) {
  for (size_t r = 0; r < w->imported_serial.size(); ++r) {
    if (w->imported_serial[r] != 0)
      ReleaseImported(w->imported_token[r], w->imported_serial[r], w->device);
    w->imported_serial[r] = 0;
  }
  CloseReleasedImports();
  if (w->serial != 0) UnpinUserAllocation(w->serial);
  w->serial = 0;
}

xcclResult_t CommWindows::Register(Bootstrap* bootstrap, const Topology& topology, void* buff,
                                   size_t size, xcclWindow_t* win) {
  const int nranks = topology.nranks, rank = topology.rank;
  UserAllocation allocation;
  std::vector<WindowAnnounce> all(nranks);
  const xcclResult_t checked = AnnounceSegment(buff, size, win, &all[rank], &allocation);
  auto w = std::make_unique<xcclWindow>();
  w->local = static_cast<char*>(buff);
  w->bytes = size;
  w->serial = checked == xcclSuccess ? allocation.serial : 0;
  w->device = allocation.device;
  w->imported_token.assign(nranks, 0);
  w->imported_serial.assign(nranks, 0);
  const xcclResult_t gathered = bootstrap->AllGather(all.data(), sizeof(WindowAnnounce));
  if (gathered != xcclSuccess) {
    Release(w.get());
    return gathered;
  }
  std::vector<char*> at(nranks, nullptr);
  xcclResult_t mapped = checked;
  if (mapped == xcclSuccess) mapped = MapSegments(topology, all, w.get(), &at);
  int failed = -1;
  xcclResult_t result = ExchangeVerdicts(bootstrap, mapped == xcclSuccess, &failed);
  // Every rank of the node tells every other how it addresses that rank's segment.
  std::vector<uint64_t> views(static_cast<size_t>(nranks) * nranks, 0);
  if (result == xcclSuccess && failed < 0) {
    for (int r = 0; r < nranks; ++r)
      views[static_cast<size_t>(rank) * nranks + r] = reinterpret_cast<uintptr_t>(at[r]);
    result = bootstrap->AllGather(views.data(), nranks * sizeof(uint64_t));
  }
  if (result == xcclSuccess && mapped != xcclSuccess) result = mapped;
  if (result == xcclSuccess && failed >= 0)
    result = FailQuietly(xcclRemoteError, "rank %d could not register its window segment", failed);
  if (result != xcclSuccess) {
    Release(w.get());
    return result;
  }
  w->seen_by.assign(nranks, nullptr);
  for (int s = 0; s < nranks; ++s)
    w->seen_by[s] = reinterpret_cast<char*>(
        static_cast<uintptr_t>(views[static_cast<size_t>(s) * nranks + rank]));
  *win = w.get();
  windows_.push_back(std::move(w));
  return xcclSuccess;
}

xcclResult_t CommWindows::Deregister(xcclWindow_t win) {
  // Compared, never dereferenced: a stale or foreign handle is refused without touching it.
  auto it = std::find_if(windows_.begin(), windows_.end(),
                         [&](const std::unique_ptr<xcclWindow>& w) { return w.get() == win; });
  if (it == windows_.end())
    return FailQuietly(xcclInvalidArgument,
                       "window %p is not registered on this communicator (deregistered already, or "
                       "another communicator's)",
                       static_cast<void*>(win));
  Release(it->get());
  windows_.erase(it);
  return xcclSuccess;
}

const xcclWindow* CommWindows::Find(const void* ptr, size_t bytes) const {
  const char* p = static_cast<const char*>(ptr);
  for (const auto& w : windows_) {
    if (p >= w->local && bytes <= w->bytes && static_cast<size_t>(p - w->local) <= w->bytes - bytes)
      return w.get();
  }
  return nullptr;
}

}  // namespace xccl
