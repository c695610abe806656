// What an xcclComm_t points to. Handles are never freed: destroy drops the communicator and
// marks the handle dead, so that a call with a destroyed handle gets a clear
// xcclInvalidArgument instead of a use-after-free. A handle costs a few dozen bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/communicator.h"
#include "xccl.h"

struct xcclComm {
  static constexpr uint64_t kLive = 0x78636c6c4c495645ull;  // "xcllLIVE"
  static constexpr uint64_t kDead = 0x78636c6c44454144ull;  // "xcllDEAD"
  uint64_t magic = kLive;
  std::unique_ptr<xccl::Communicator> impl;
  std::mutex last_error_mutex;
  std::string last_error;
};

namespace xccl {

// Resolves a handle for `op`: xcclInvalidArgument for NULL, a destroyed or a foreign handle.
xcclResult_t ResolveComm(xcclComm_t comm, const char* op, Communicator** out);
// Keeps the thread's last error on the handle, for xcclGetLastError(comm).
void RememberLastError(xcclComm_t comm);

}  // namespace xccl
