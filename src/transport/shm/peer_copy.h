// Copies into another rank's memory on this node: memcpy for a rank in this process, a single
// cross-memory-attach copy (process_vm_writev) into another process, so a block crosses memory
// once, as it would through a copy engine.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>

#include "base/failure.h"

namespace xccl {

// Writes `bytes` from local `src` to `remote_dst`: in process `pid` (whole length, retrying
// partial writes), or with memcpy where `pid` is 0 (a rank of this process). Copies in pieces
// of at most kCopyPieceBytes and calls `stop` between them: a failure it returns (the receiver
// gave up, this rank aborted) ends the copy there, so a receiver that has returned from its
// call is written at most one piece later. On failure fills `failure` naming `peer`.
constexpr size_t kCopyPieceBytes = size_t(16) << 20;
xcclResult_t CopyToProcess(pid_t pid, int peer, void* remote_dst, const void* src, size_t bytes,
                           const std::function<xcclResult_t(PlatformFailure*)>& stop,
                           PlatformFailure* failure);

// Checks that this process may write into `pid` by reading `bytes` at `remote_src` and
// comparing them with `expected`. Used once per peer process at init.
xcclResult_t ProbeCrossProcessCopy(pid_t pid, int peer, const void* remote_src,
                                   const void* expected, size_t bytes, PlatformFailure* failure);

// Lets any process of this user attach (Yama's ptrace_scope=1 allows only ancestors by default).
void AllowCrossProcessCopies();

}  // namespace xccl
