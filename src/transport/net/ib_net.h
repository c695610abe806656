// The net backend over libibverbs (XCCL_NET=ib, or auto where a device exists): RC queue pairs,
// RDMA write with immediate into registered buffers, a clear-to-send FIFO (ib_comm.h). The
// library is dlopen'd (XCCL_IBVERBS_LIB), the ports chosen by XCCL_IB_HCA; a connection's QPs
// meet over a TCP socket on the XCCL_SOCKET_IFNAME interface, which stays open as a watch on
// the peer. Not run on RDMA hardware: tested against the fake provider of test/ib_fake.
#pragma once

#include <memory>
#include <string>

#include "transport/net/net.h"

namespace xccl {

struct IbNetOptions {
  std::string library;        // XCCL_IBVERBS_LIB
  std::string hca;            // XCCL_IB_HCA
  std::string socket_ifname;  // XCCL_SOCKET_IFNAME: where the setup sockets listen
  int gid_index = 0;          // XCCL_IB_GID_INDEX
};

// False with *why (no library, no device, no active port matching XCCL_IB_HCA, no interface for
// the setup sockets), recording no error: the caller decides between failing and falling back.
bool OpenIbNet(const IbNetOptions& options, std::unique_ptr<NetBackend>* out, std::string* why);

}  // namespace xccl
