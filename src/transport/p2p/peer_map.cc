#include "transport/p2p/peer_map.h"

#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/device_bytes_now.h"
#include "platform/gpu/gpu_call.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"

namespace xccl {

namespace {

struct BufferAnnounce {
  gpuIpcMemHandle_t handle;
  uint64_t address;  // valid in the announcing process only
  int32_t device;
  int32_t ok;
};

// Peer access from `device` to `peer_device` (rank r's), where they differ.
xcclResult_t EnablePeerAccess(int device, int peer_device, int r) {
  if (peer_device == device) return xcclSuccess;
  int can = 0;
  XCCL_GPU_TRY(gpuDeviceCanAccessPeer(&can, device, peer_device));
  if (!can)
    return Fail(xcclInvalidUsage, "GPU %d cannot access GPU %d (rank %d): no peer path", device,
                peer_device, r);
  const gpuError_t err = gpuDeviceEnablePeerAccess(peer_device, 0);
  if (err != gpuSuccess && err != gpuErrorPeerAccessAlreadyEnabled) XCCL_GPU_TRY(err);
  (void)gpuGetLastError();  // clear a sticky "already enabled"
  return xcclSuccess;
}

// Rank r's announced buffer as this process addresses it.
xcclResult_t OpenPeerBuffer(const Topology& topology, int r, const BufferAnnounce& announce,
                            void** ptr, bool* opened) {
  *opened = false;
  if (topology.SameProcess(r)) {
    *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(announce.address));
    return xcclSuccess;
  }
  XCCL_GPU_TRY(gpuIpcOpenMemHandle(ptr, announce.handle, gpuIpcMemLazyEnablePeerAccess));
  *opened = true;
  return xcclSuccess;
}

}  // namespace

xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, const Topology& topology, int device, void* local,
                            bool enable_peer_access, const char* what, PeerBuffers* out) {
  const int nranks = topology.nranks, rank = topology.rank;
  BufferAnnounce mine;
  memset(&mine, 0, sizeof(mine));
  mine.address = reinterpret_cast<uintptr_t>(local);
  mine.device = device;
  mine.ok = local != nullptr && gpuIpcGetMemHandle(&mine.handle, local) == gpuSuccess ? 1 : 0;
  std::vector<BufferAnnounce> all(nranks);
  all[rank] = mine;
  XCCL_TRY(bootstrap->AllGather(all.data(), sizeof(BufferAnnounce)));
  out->device = device;
  out->at.assign(nranks, nullptr);
  out->opened.assign(nranks, false);
  xcclResult_t mapped = xcclSuccess;
  for (int r = 0; r < nranks && mapped == xcclSuccess; ++r) {
    // A rank of another node is not mapped (its memory is not reachable; the net connections
    // carry its traffic): its entry stays null. Its own failure comes in the verdict round.
    if (topology.node_of_rank[r] != topology.node_of_rank[rank]) continue;
    if (!all[r].ok) {
      mapped = r == rank ? Fail(xcclUnhandledDeviceError, "rank %d could not share its %s", r, what)
                         : Fail(xcclRemoteError, "rank %d could not share its %s", r, what);
      break;
    }
    if (r == rank) {
      out->at[r] = local;
      continue;
    }
    if (enable_peer_access) mapped = EnablePeerAccess(device, all[r].device, r);
    bool opened = false;
    if (mapped == xcclSuccess) mapped = OpenPeerBuffer(topology, r, all[r], &out->at[r], &opened);
    out->opened[r] = opened;
  }
  int failed = -1;
  const xcclResult_t exchanged = ExchangeVerdicts(bootstrap, mapped == xcclSuccess, &failed);
  if (exchanged != xcclSuccess || failed >= 0) ClosePeerBuffers(out);
  XCCL_TRY(exchanged);
  if (mapped != xcclSuccess) return mapped;  // this rank's own cause first
  if (failed >= 0)
    return Fail(xcclRemoteError, "rank %d could not share or map its %s", failed, what);
  return xcclSuccess;
}

void ClosePeerBuffers(PeerBuffers* buffers) {
  bool any = false;
  for (bool opened : buffers->opened) any = any || opened;
  if (!any || gpuSetDevice(buffers->device) != gpuSuccess) return;
  for (size_t r = 0; r < buffers->opened.size(); ++r) {
    if (buffers->opened[r]) (void)gpuIpcCloseMemHandle(buffers->at[r]);
    buffers->opened[r] = false;
  }
}

xcclResult_t UploadPointerTable(const std::vector<void*>& table, void*** device_table) {
  void* memory = nullptr;
  const size_t bytes = table.size() * sizeof(void*);
  XCCL_GPU_TRY(gpuMalloc(&memory, bytes > 0 ? bytes : sizeof(void*)));
  const xcclResult_t copied = CopyToDeviceNow(memory, table.data(), bytes);
  if (copied != xcclSuccess) {
    (void)gpuFree(memory);
    return copied;
  }
  *device_table = static_cast<void**>(memory);
  return xcclSuccess;
}

}  // namespace xccl
