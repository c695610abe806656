// Control windows of the host platform: each rank creates one POSIX shared-memory object (mode
// 0600, a random name), every rank of the node maps every other's, and once all have mapped it
// (a bootstrap round) the creator unlinks the name, so nothing stays in /dev/shm after destroy,
// abort or a killed process. Names left by processes that died inside that short window of
// init are removed by the next init on the node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "xccl.h"

namespace xccl {

class Bootstrap;

class ShmWindows {
 public:
  ShmWindows() = default;
  ~ShmWindows();
  ShmWindows(const ShmWindows&) = delete;
  ShmWindows& operator=(const ShmWindows&) = delete;

  // Collective over every rank of `bootstrap`; a rank maps the windows of `node` (the ranks of
  // its node, itself included) only, ranks of other nodes just take part. Each window holds
  // `slot_count` 32-bit slots, initialised by `init_slots` before anyone maps it, then a data
  // area of `data_bytes`. Every rank must pass the same sizes (a peer's window mapped larger
  // than it is would fault past its end): where they differ, every rank fails with
  // xcclInvalidUsage naming `sized_by`, the parameter that set them, before anyone maps.
  xcclResult_t Create(Bootstrap* bootstrap, const std::vector<int>& node, size_t slot_count,
                      size_t data_bytes, const char* sized_by,
                      void (*init_slots)(uint32_t* slots, size_t count, void* arg), void* arg);

  // nullptr for a rank of another node.
  uint32_t* slots(int rank) const { return maps_[rank]; }
  char* data(int rank) const { return reinterpret_cast<char*>(maps_[rank]) + slots_bytes_; }

 private:
  size_t slots_bytes_ = 0;
  size_t bytes_ = 0;
  std::vector<uint32_t*> maps_;
};

// Unlinks /dev/shm/xccl-<pid>-* objects whose creating process no longer runs.
void RemoveStaleShmObjects();

}  // namespace xccl
