// A rank's side of Init: the join of the rendezvous (hello to the root, the ring's connections)
// that yields the rank's RingBootstrap.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/bootstrap/bootstrap.h"
#include "xccl.h"

namespace xccl {
namespace bootstrap_internal {

// Bootstrap::Init's work, which may throw (Init turns exceptions into errors): checks the
// arguments, claims the id, serves the root as rank 0 of an XCCL_COMM_ID id, then joins.
xcclResult_t InitImpl(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                      const std::string& socket_ifname, std::unique_ptr<Bootstrap>* out);

}  // namespace bootstrap_internal
}  // namespace xccl
