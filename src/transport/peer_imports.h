// Zero-copy between processes without a window: a receiver whose buffer lies in an xcclMemAlloc
// allocation asks each peer process of its node, once per allocation, to map it, and learns
// where that peer addresses it. Every process serves such requests on a thread of its own (an
// abstract unix socket named by its process token), so the peer's host thread, which may be
// anywhere, takes no part and no call waits for a peer's call. The maps are dropped when the
// allocation is freed: xcclMemFree tells every peer that mapped it before the memory goes, and
// the peer closes its map at its own next safe point (allocation_imports.h).
#pragma once

#include <cstdint>

#include "transport/user_memory.h"
#include "xccl.h"

namespace xccl {

// Starts this process's service once (again after a fork: threads are not inherited).
xcclResult_t StartImportService();

// Where the process `peer_token` addresses `allocation` on `peer_device`, asked once and cached;
// nullptr where the peer does not map it (the host platform, a peer that is gone or refused:
// one warning). Blocks for one round trip on first use, at most `timeout_ms`.
char* PeerAddressOf(const UserAllocation& allocation, uint64_t peer_token, int peer_device,
                    int64_t timeout_ms);

// Before `serial` is freed: every peer that mapped it is told to drop its map (bounded waits).
void ReleasePeerImports(uint64_t serial);

}  // namespace xccl
