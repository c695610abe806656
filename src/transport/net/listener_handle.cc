#include "transport/net/listener_handle.h"

#include <cstring>

#include "base/error.h"
#include "transport/net/wire_word.h"

namespace xccl {

xcclResult_t ListenWithHandle(const sockaddr_storage& address, uint64_t magic, NetHandle* handle,
                              Socket* listener) {
  XCCL_TRY(Socket::Listen(address, listener));
  sockaddr_storage bound{};
  XCCL_TRY(listener->LocalAddress(&bound));
  memset(handle->bytes, 0, sizeof(handle->bytes));
  PutWire(handle->bytes, magic, 8);
  PackAddress(bound, handle->bytes + 8);
  return xcclSuccess;
}

bool ReadListenerHandle(const NetHandle& handle, uint64_t magic, sockaddr_storage* address) {
  *address = sockaddr_storage{};
  return GetWire(handle.bytes, 8) == magic && UnpackAddress(handle.bytes + 8, address);
}

}  // namespace xccl
