#include "comm/local_registrations.h"

#include <algorithm>

#include "base/error.h"

namespace xccl {

xcclResult_t LocalRegistrations::Register(void* buff, size_t size, void** handle) {
  if (handle == nullptr) return FailQuietly(xcclInvalidArgument, "handle is NULL");
  if (buff == nullptr || size == 0)
    return FailQuietly(xcclInvalidArgument, "buff %p with size %zu: nothing to register", buff,
                       size);
  auto r = std::make_unique<LocalRegistration>();
  r->buff = buff;
  r->bytes = size;
  if (ExportShareable(buff, &r->exported) != xcclSuccess)
    return FailQuietly(xcclInvalidArgument, "buff %p cannot be exported (not device memory?): %s",
                       buff, ThreadLastError().c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  *handle = r.get();
  registrations_.push_back(std::move(r));
  return xcclSuccess;
}

xcclResult_t LocalRegistrations::Deregister(void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it =
      std::find_if(registrations_.begin(), registrations_.end(),
                   [&](const std::unique_ptr<LocalRegistration>& r) { return r.get() == handle; });
  if (it == registrations_.end())
    return FailQuietly(xcclInvalidArgument,
                       "handle %p is not registered on this communicator (deregistered already, or "
                       "another communicator's)",
                       handle);
  registrations_.erase(it);
  return xcclSuccess;
}

size_t LocalRegistrations::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return registrations_.size();
}

}  // namespace xccl
