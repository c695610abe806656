// The part of a net handle every backend over TCP shares: a backend's magic word, then the
// listener's address (the bytes after it are the backend's own). Listen binds the socket and
// writes that part; Read checks the magic and takes the address back.
#pragma once

#include <cstdint>

#include "transport/bootstrap/socket.h"
#include "transport/net/net.h"

namespace xccl {

constexpr size_t kListenerHandleBytes = 8 + kWireAddressBytes;

// Listens on `address` and describes the listener in `handle` (zeroed first).
xcclResult_t ListenWithHandle(const sockaddr_storage& address, uint64_t magic, NetHandle* handle,
                              Socket* listener);

// False where `handle` is not of the backend `magic` names.
bool ReadListenerHandle(const NetHandle& handle, uint64_t magic, sockaddr_storage* address);

}  // namespace xccl
