// A communicator's local registrations (xcclCommRegister): the buffer and its export, made once
// per registration. Handles are compared, never dereferenced, until found, so a stale, foreign or
// doubly deregistered one is refused with a message.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "platform/shareable_memory.h"
#include "xccl.h"

namespace xccl {

struct LocalRegistration {
  void* buff = nullptr;
  size_t bytes = 0;
  ShareableExport exported;  // GPU: the IPC handle of the allocation holding buff
};

class LocalRegistrations {
 public:
  xcclResult_t Register(void* buff, size_t size, void** handle);
  xcclResult_t Deregister(void* handle);
  size_t count() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<LocalRegistration>> registrations_;
};

}  // namespace xccl
