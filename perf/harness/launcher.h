// Starting the ranks. On the host platform an xccl call blocks until this rank's result is
// complete, so every rank needs a thread of its own: -g ranks per -t thread become t*g threads,
// and -np forks np processes on this node (the caller is process 0 and stays in the run, since
// the rendezvous root started by its xcclGetUniqueId lives in it).
#pragma once

#include <functional>

#include "harness/options.h"
#include "harness/rank_sync.h"

namespace xccl_perf {

struct RankContext {
  int rank;    // global rank: (proc * threads + thread) * gpus + gpu, as nccl-tests numbers them
  int nranks;  // np * threads * gpus
  int proc;    // process index, 0 for the caller of LaunchRanks
  int local;   // index of this rank within its process
  const Options* options;
  RankSync* sync;
};

// Returns true on success. A rank that fails mid-run must call sync->Abort() before returning,
// so that the others stop waiting for it.
using RankMain = std::function<bool(const RankContext&)>;

// Runs rank_main once per rank and returns this program's exit status: 0 only if every rank in
// every process returned true. Anything the ranks share (unique ids, RankSync) must exist before
// this call, since children see only what was there at fork(). If a child dies abnormally or a
// rank aborts, the survivors get a grace period to report, then the remaining children are
// killed, so a run never hangs on a dead peer.
int LaunchRanks(const Options& options, RankSync* sync, const RankMain& rank_main);

}  // namespace xccl_perf
