#include "harness/launcher.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "harness/node_namespace.h"

namespace xccl_perf {
namespace {

// Long enough for ranks blocked on a dead peer to print their own error once xccl notices,
// short enough that a broken run ends promptly.
constexpr auto kAbortGrace = std::chrono::seconds(3);

// Runs this process's ranks, one thread each; done counts finished ranks for the monitor.
class LocalRanks {
 public:
  LocalRanks(const Options& options, RankSync* sync, const RankMain& rank_main, int proc)
      : ok_(options.RanksPerProcess()) {
    int per_proc = options.RanksPerProcess();
    for (int local = 0; local < per_proc; ++local) {
      RankContext context{
          proc * per_proc + local, options.TotalRanks(), proc, local, &options, sync};
      threads_.emplace_back([this, context, &rank_main] {
        ok_[context.local] = rank_main(context) ? 1 : 0;
        done_.fetch_add(1, std::memory_order_release);
      });
    }
  }

  bool AllDone() const {
    return done_.load(std::memory_order_acquire) == static_cast<int>(threads_.size());
  }

  // Joins every thread; true if every rank succeeded.
  bool Join() {
    bool ok = true;
    for (size_t i = 0; i < threads_.size(); ++i) {
      threads_[i].join();
      ok = ok && ok_[i] != 0;
    }
    return ok;
  }

 private:
  std::vector<std::thread> threads_;
  std::vector<int> ok_;
  std::atomic<int> done_{0};
};

[[noreturn]] void RunChild(const Options& options, RankSync* sync, const RankMain& rank_main,
                           int proc, pid_t parent) {
  // A child must not outlive the parent: it holds the rendezvous root and prints the results.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  if (!EnterNodeNamespace(options.netns, proc, options.procs)) {
    sync->Abort();
    _exit(1);
  }
  LocalRanks ranks(options, sync, rank_main, proc);
  bool ok = ranks.Join();
  fflush(stdout);
  fflush(stderr);
  // _exit, not exit: static destructors would run on state copied from the parent at fork(),
  // such as the rendezvous root thread that exists only there.
  _exit(ok ? 0 : 1);
}

struct Child {
  pid_t pid;
  int proc;
  bool running;
};

}  // namespace

int LaunchRanks(const Options& options, RankSync* sync, const RankMain& rank_main) {
  // Whatever is buffered would otherwise be printed again by every child.
  fflush(stdout);
  fflush(stderr);
  std::vector<Child> children;
  pid_t self = getpid();
  // Fork before starting any rank thread here, so that children copy as few threads as
  // possible.
  for (int proc = 1; proc < options.procs; ++proc) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "%s: fork failed: %s\n", program_invocation_short_name, strerror(errno));
      sync->Abort();
      break;
    }
    if (pid == 0) RunChild(options, sync, rank_main, proc, self);
    children.push_back({pid, proc, true});
  }

  LocalRanks local(options, sync, rank_main, 0);
  bool failed = false;
  int running = static_cast<int>(children.size());
  bool grace_started = false;
  auto grace_end = std::chrono::steady_clock::now();
  while (running > 0 || !local.AllDone()) {
    for (Child& child : children) {
      if (!child.running) continue;
      int status = 0;
      pid_t got = waitpid(child.pid, &status, WNOHANG);
      if (got == 0) continue;
      child.running = false;
      --running;
      if (got < 0) {
        failed = true;
        continue;
      }
      if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s: process %d (pid %d) was killed by signal %d (%s)\n",
                program_invocation_short_name, child.proc, static_cast<int>(child.pid),
                WTERMSIG(status), strsignal(WTERMSIG(status)));
        failed = true;
        sync->Abort();  // its ranks will never reach another barrier
      } else if (WEXITSTATUS(status) != 0) {
        failed = true;  // its ranks reported why and aborted the run if it was mid-way
      }
    }
    if (sync->Aborted() && !grace_started) {
      grace_started = true;
      grace_end = std::chrono::steady_clock::now() + kAbortGrace;
    }
    if (grace_started && std::chrono::steady_clock::now() >= grace_end) {
      for (Child& child : children) {
        if (!child.running) continue;
        kill(child.pid, SIGKILL);
        waitpid(child.pid, nullptr, 0);
        child.running = false;
        --running;
        failed = true;
      }
      if (!local.AllDone()) {
        // Ranks of this process are still blocked inside xccl on peers that are gone; there is
        // nothing left to report, and waiting for the library's own deadline gains nothing.
        fprintf(stderr, "%s: run aborted; ranks still blocked in xccl, exiting\n",
                program_invocation_short_name);
        fflush(stdout);
        fflush(stderr);
        _exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  bool ok = local.Join();
  return ok && !failed ? 0 : 1;
}

}  // namespace xccl_perf
