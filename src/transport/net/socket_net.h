// The net transport over TCP, always built: host memory, one control socket per connection for
// the message headers and XCCL_SOCKET_NSOCKS data sockets, a large message striped over them
// for bandwidth. The device is the interface XCCL_SOCKET_IFNAME chooses (prefix list, ^ excludes,
// = exact), as for the bootstrap.
#pragma once

#include <memory>
#include <string>

#include "transport/net/net.h"

namespace xccl {

// `ifname_spec`: XCCL_SOCKET_IFNAME; `nsocks`: XCCL_SOCKET_NSOCKS (1-16). Fails with a message
// naming the spec where no interface matches.
xcclResult_t CreateSocketNet(const std::string& ifname_spec, int nsocks,
                             std::unique_ptr<NetBackend>* out);

}  // namespace xccl
