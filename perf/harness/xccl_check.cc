#include "harness/xccl_check.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>

#include "harness/rank_sync.h"

namespace xccl_perf {

bool AbandonRank(RankSync& sync, xcclComm_t* comm) {
  sync.Abort();
  if (*comm != nullptr) xcclCommAbort(*comm);
  *comm = nullptr;
  return false;
}

bool XcclOk(xcclResult_t result, const char* call, int rank, xcclComm_t comm) {
  if (result == xcclSuccess) return true;
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  // One fprintf per message keeps lines from different ranks from interleaving.
  fprintf(stderr, "%s: %s pid %d rank %d: %s failed: %s (%d): %s\n", program_invocation_short_name,
          host, static_cast<int>(getpid()), rank, call, xcclGetErrorString(result),
          static_cast<int>(result), xcclGetLastError(comm));
  return false;
}

}  // namespace xccl_perf
