// Whether a peer process still runs. A killed rank must be reported by name within the
// deadline, and a dead process that its parent has not reaped yet (a zombie) counts as dead.
#pragma once

#include <sys/types.h>

namespace xccl {

bool ProcessAlive(pid_t pid);

}  // namespace xccl
