// The rendezvous root, which every rank of a unique id meets first: StartRoot runs it in a
// detached thread that serves one rendezvous, then exits.
#pragma once

#include "base/deadline.h"
#include "transport/bootstrap/bootstrap_secret.h"
#include "transport/bootstrap/socket.h"
#include "xccl.h"

namespace xccl {
namespace bootstrap_internal {

// Serves the rendezvous of `secret` on `listener` in a detached thread that owns both; until
// the first rank joins it waits until `deadline`. Fails only when the thread cannot start.
xcclResult_t StartRoot(Socket listener, const Secret& secret, const Deadline& deadline);

}  // namespace bootstrap_internal
}  // namespace xccl
