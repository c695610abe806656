// Copies into another rank's memory on this node: memcpy for a rank in this process, a single
// cross-memory-attach copy (process_vm_writev) into another process, so a block crosses memory
// once, as it would through a copy engine.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "platform/platform.h"

namespace xccl {

// Writes `bytes` from local `src` to `remote_dst` in process `pid` (whole length, retrying
// partial writes). On failure fills `failure` naming `peer`.
xcclResult_t CopyToProcess(pid_t pid, int peer, void* remote_dst, const void* src, size_t bytes,
                           PlatformFailure* failure);

// Checks that this process may write into `pid` by reading `bytes` at `remote_src` and
// comparing them with `expected`. Used once per peer process at init.
xcclResult_t ProbeCrossProcessCopy(pid_t pid, int peer, const void* remote_src,
                                   const void* expected, size_t bytes, PlatformFailure* failure);

// Lets any process of this user attach (Yama's ptrace_scope=1 allows only ancestors by default).
void AllowCrossProcessCopies();

}  // namespace xccl
