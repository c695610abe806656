// Runs a test body on several ranks of the host platform, as threads of this process
// (xcclCommInitAll) or as forked processes (xcclCommInitRank). Checks made inside a rank are
// collected as failure strings, because a forked child cannot report to GoogleTest directly;
// the runner turns them into test failures, and a hung rank into a failure after a deadline.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "xccl.h"

namespace xccl_test {

enum class RankMode { kThreads, kProcesses };
const char* ModeName(RankMode mode);

struct RankContext {
  xcclComm_t comm = nullptr;
  int rank = 0;
  int nranks = 0;
  uint64_t seed = 0;  // the same on every rank of one run, fresh for every run
  // 64 KiB of memory shared by every rank of the run (MAP_SHARED, so also across processes),
  // zeroed at start; for checks that need a view across ranks.
  volatile uint64_t* shared = nullptr;
  std::vector<std::string> failures;

  void Fail(const std::string& message) {
    if (failures.size() < 20) failures.push_back(message);
  }
};

struct RunOptions {
  int timeout_s = 240;                // the whole run; a rank still running then is a failure
  std::set<int> may_die;              // ranks expected to die by a signal (killed-rank tests)
  bool skip_destroy = false;          // the body destroys or aborts the communicator itself
  std::function<void()> before_init;  // runs in each process (or once, for threads) before init
  // Processes only: runs in rank r's process after before_init (per-rank parameters).
  std::function<void(int rank)> before_rank_init;
};

// `calls` checked calls on `comm` (made from ctx's, a shrunk one), where this rank is `rank` of
// `nranks`: check(sub, rng, call) makes each on a context for `comm`, its draws from `rng` the
// same on every rank; the failures go into ctx.
template <typename Check>
void CheckedCallsOn(RankContext& ctx, xcclComm_t comm, int rank, int nranks, int calls,
                    Check check) {
  RankContext sub;
  sub.comm = comm;
  sub.rank = rank;
  sub.nranks = nranks;
  sub.seed = ctx.seed ^ 0x5EED;
  std::mt19937_64 rng(sub.seed);
  for (int call = 0; call < calls && sub.failures.empty(); ++call) check(sub, rng, call);
  for (const std::string& f : sub.failures) ctx.Fail("new communicator: " + f);
}

// Waits (30 s at most) until the counter at `word` (in RankContext::shared, which every rank
// increments) reaches `n`: an out-of-band meeting of the ranks. False on the deadline.
bool WaitForCount(volatile uint64_t* word, uint64_t n);

// A killed-rank test's meeting before the kill: every rank counts itself past its warm-up in the
// shared area and waits for the others (WaitForCount), then `victim` is SIGKILLed. So the
// victim's last puts have landed before it dies (a slower peer's warm-up cannot fail on its
// death), and every survivor's next call starts once every rank is warm. A rank that never
// arrives is a failure of those that waited; the victim dies either way.
void KillOnceEveryRankIsWarm(RankContext& ctx, int victim);

// Returns the failures of every rank, each prefixed with "rank N: ".
std::vector<std::string> RunRanks(RankMode mode, int nranks,
                                  const std::function<void(RankContext&)>& body,
                                  const RunOptions& options = RunOptions());

// /dev/shm entries made by xccl for any of `pids` (should be none once init is done).
std::vector<std::string> LeftoverShm(const std::vector<pid_t>& pids);
// Entries of /proc/self/fd: leak checks compare it before and after.
size_t OpenFileDescriptors();
// The pids of the children of the last process-mode run.
const std::vector<pid_t>& LastChildPids();

}  // namespace xccl_test

// Inside a rank body: record a failure with the streamed message when `cond` is false.
#define RANK_EXPECT(ctx, cond, msg)                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::ostringstream rank_expect_stream_;                                              \
      rank_expect_stream_ << __FILE__ << ":" << __LINE__ << ": " #cond " failed: " << msg; \
      (ctx).Fail(rank_expect_stream_.str());                                               \
    }                                                                                      \
  } while (0)
