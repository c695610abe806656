// A communicator's registered windows (xcclCommWindowRegister): each rank's segment, inside one
// of its xcclMemAlloc allocations, as every rank of its node addresses it, so that the zero-copy
// all_gather can tell a peer of another process where to write. Registration and lookups run
// under the communicator's operation guard (one operation at a time), so no lock is needed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/topology.h"
#include "transport/bootstrap/bootstrap.h"
#include "xccl.h"

struct xcclWindow {
  char* local = nullptr;  // this rank's segment
  size_t bytes = 0;
  uint64_t serial = 0;  // of the allocation it lies in (pinned while registered)
  int device = 0;
  std::vector<char*> seen_by;  // [rank s]: this rank's segment as s addresses it, or nullptr
  // What ImportShareable mapped here, released at deregistration: [rank] process token, serial.
  std::vector<uint64_t> imported_token, imported_serial;
};

namespace xccl {

class CommWindows {
 public:
  CommWindows() = default;
  ~CommWindows();  // releases every window still registered
  CommWindows(const CommWindows&) = delete;
  CommWindows& operator=(const CommWindows&) = delete;

  // Collective over the communicator's ranks; `win` may be NULL (this rank then fails, and so do
  // its peers). Every rank takes part whatever its own checks found.
  xcclResult_t Register(Bootstrap* bootstrap, const Topology& topology, void* buff, size_t size,
                        xcclWindow_t* win);
  // Local: releases this rank's mappings of the peers' segments and unpins the allocation.
  xcclResult_t Deregister(xcclWindow_t win);
  // The window whose segment holds [ptr, ptr + bytes), or nullptr.
  const xcclWindow* Find(const void* ptr, size_t bytes) const;

 private:
  static void Release(xcclWindow* win);
  std::vector<std::unique_ptr<xcclWindow>> windows_;
};

}  // namespace xccl
