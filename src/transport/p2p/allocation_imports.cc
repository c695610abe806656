#include "transport/allocation_imports.h"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "base/error.h"
#include "platform/gpu.h"

namespace xccl {

namespace {

struct Imported {
  void* base = nullptr;
  int references = 0;
};

using ImportKey = std::tuple<uint64_t, uint64_t, int>;  // process, serial, device

std::mutex& ImportMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<ImportKey, Imported>& Imports() {
  static std::map<ImportKey, Imported>* imports = new std::map<ImportKey, Imported>();
  return *imports;
}

// Maps released but not yet closed, (device, base), under ImportMutex.
std::vector<std::pair<int, void*>>& Closable() {
  static auto* closable = new std::vector<std::pair<int, void*>>();
  return *closable;
}

}  // namespace

xcclResult_t ImportShareable(uint64_t process_token, uint64_t serial, const ShareableExport& from,
                             int device, void** base) {
  std::lock_guard<std::mutex> lock(ImportMutex());
  Imported& imported = Imports()[ImportKey(process_token, serial, device)];
  if (imported.references == 0) {
    gpuIpcMemHandle_t handle;
    memcpy(&handle, from.bytes, sizeof(handle));
    gpuError_t err = gpuSetDevice(device);
    if (err == gpuSuccess)
      err = gpuIpcOpenMemHandle(&imported.base, handle, gpuIpcMemLazyEnablePeerAccess);
    if (err != gpuSuccess) {
      Imports().erase(ImportKey(process_token, serial, device));
      return Fail(xcclUnhandledDeviceError, "mapping a peer's allocation: %s",
                  gpuGetErrorString(err));
    }
  }
  ++imported.references;
  *base = imported.base;
  return xcclSuccess;
}

void ReleaseImported(uint64_t process_token, uint64_t serial, int device) {
  std::lock_guard<std::mutex> lock(ImportMutex());
  auto it = Imports().find(ImportKey(process_token, serial, device));
  if (it == Imports().end() || --it->second.references > 0) return;
  Closable().emplace_back(device, it->second.base);
  Imports().erase(it);
}

void CloseReleasedImports() {
  std::vector<std::pair<int, void*>> closing;
  {
    std::lock_guard<std::mutex> lock(ImportMutex());
    closing.swap(Closable());
  }
  // Outside the lock: a close waits for this process's kernels, and the import service must
  // stay free to map for the peers those kernels wait on.
  for (const auto& [device, base] : closing)
    if (gpuSetDevice(device) == gpuSuccess) (void)gpuIpcCloseMemHandle(base);
}

}  // namespace xccl
