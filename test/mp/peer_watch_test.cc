// The peer watch (src/proxy/peer_watch.h) on the host, processes of one node over a bootstrap of
// their own: a killed peer is named by every other within a second (milliseconds in practice),
// also when a child it forked keeps its socket open (the pidfd says it); a peer that exits
// without closing is dead too; a peer's abort names the rank it blamed; peers that close in
// order, at any moment, are never reported; threads of one process watch nothing; and cycles of
// start and close leave no descriptor behind.
#include "transport/net/proxy/peer_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/params.h"
#include "base/topology.h"
#include "comm/topology_exchange.h"
#include "mp/rank_runner.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl_test {
namespace {

using xccl::Bootstrap;
using xccl::PeerWatch;
using xccl::PlatformFailure;

constexpr int64_t kTimeoutMs = 10000;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The losses one rank's watch reported, and a wait for the first.
class Losses {
 public:
  PeerWatch::OnLoss Callback() {
    return [this](int peer, const PlatformFailure& failure) {
      std::lock_guard<std::mutex> lock(mutex_);
      seen_.push_back({peer, failure, NowNs()});
      changed_.notify_all();
    };
  }
  struct Loss {
    int peer;
    PlatformFailure failure;
    int64_t at_ns;
  };
  bool AwaitFirst(double seconds, Loss* loss) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::duration<double>(seconds),
                           [this] { return !seen_.empty(); }))
      return false;
    *loss = seen_.front();
    return true;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Loss> seen_;
};

// One rank's bootstrap, topology and started watch over the id made before the run.
struct Watched {
  std::unique_ptr<Bootstrap> bootstrap;
  xccl::Topology topology;
  PeerWatch watch;
  Losses losses;
};

bool StartWatch(RankContext& ctx, const xcclUniqueId& id, Watched* w) {
  xccl::Params params;
  if (Bootstrap::Init(id, ctx.rank, ctx.nranks, kTimeoutMs, &w->bootstrap) != xcclSuccess ||
      xccl::ExchangeTopology(w->bootstrap.get(), 0, params, &w->topology) != xcclSuccess) {
    ctx.Fail(std::string("bootstrap: ") + xccl::ThreadLastError());
    return false;
  }
  if (w->watch.Start(w->bootstrap.get(), w->topology, kTimeoutMs, w->losses.Callback()) !=
      xcclSuccess) {
    ctx.Fail(std::string("watch start: ") + xccl::ThreadLastError());
    return false;
  }
  return true;
}

// Every survivor's first loss is of `lost`'s connection, blames `blamed` with xcclRemoteError and
// a message holding `says`, within `patience_s` of the time the victim left (ctx.shared[0]).
void ExpectLoss(RankContext& ctx, Watched& w, int lost, int blamed, const std::string& says,
                double patience_s) {
  Losses::Loss loss{};
  if (!w.losses.AwaitFirst(patience_s, &loss)) {
    ctx.Fail("no loss reported within " + std::to_string(patience_s) + " s");
    return;
  }
  const double after_s = (loss.at_ns - static_cast<int64_t>(ctx.shared[0])) / 1e9;
  RANK_EXPECT(ctx, loss.peer == lost && loss.failure.peer == blamed,
              "lost rank " << loss.peer << " blaming " << loss.failure.peer << ", not " << lost
                           << " blaming " << blamed << ": " << loss.failure.message);
  RANK_EXPECT(ctx, loss.failure.result == xcclRemoteError,
              "result " << xcclGetErrorString(loss.failure.result));
  RANK_EXPECT(ctx, loss.failure.message.find(says) != std::string::npos,
              "message '" << loss.failure.message << "' lacks '" << says << "'");
  RANK_EXPECT(ctx, after_s >= 0 && after_s < 1.0, "reported " << after_s << " s after");
}

// `world` processes; `victim` ends by `leave` once every watch has started; the others expect
// the loss their check describes.
void RunLeaving(int world, int victim, const std::function<void(RankContext&, Watched&)>& leave,
                const std::function<void(RankContext&, Watched&)>& check) {
  xcclUniqueId id;
  ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << xccl::ThreadLastError();
  RunOptions options;
  options.may_die = {victim};
  options.timeout_s = 60;
  auto failures = RunRanks(
      RankMode::kProcesses, world,
      [&](RankContext& ctx) {
        Watched w;
        if (!StartWatch(ctx, id, &w)) return;
        RANK_EXPECT(ctx, w.watch.watched() == ctx.nranks - 1, "watches " << w.watch.watched());
        if (w.bootstrap->Barrier() != xcclSuccess) {
          ctx.Fail("barrier");
          return;
        }
        if (ctx.rank == victim) {
          ctx.shared[0] = static_cast<uint64_t>(NowNs());
          leave(ctx, w);
          return;
        }
        check(ctx, w);
      },
      options);
  for (const auto& f : failures) ADD_FAILURE() << f;
}

TEST(PeerWatchTest, KilledPeerIsNamedWithinASecond) {
  for (int world : {2, 4, 8}) {
    const int victim = world - 1 - static_cast<int>(getpid() % world);
    RunLeaving(
        world, victim, [](RankContext&, Watched&) { raise(SIGKILL); },
        [victim](RankContext& ctx, Watched& w) {
          ExpectLoss(ctx, w, victim, victim, "rank " + std::to_string(victim) + " (pid", 1.0);
          ExpectLoss(ctx, w, victim, victim, "died", 1.0);
        });
  }
}

#ifdef SYS_pidfd_open
bool PidfdWorks() {
  const long fd = syscall(SYS_pidfd_open, getpid(), 0);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}
#else
bool PidfdWorks() { return false; }
#endif

// The victim forks a child that keeps every descriptor (its watch sockets too) for 3 s, then is
// killed: the sockets stay open, and only the victim's pidfd tells the others.
TEST(PeerWatchTest, KilledPeerWhoseChildHoldsItsSocketsIsNamed) {
  if (!PidfdWorks()) GTEST_SKIP() << "pidfd_open is not available on this kernel";
  RunLeaving(
      3, 1,
      [](RankContext&, Watched&) {
        if (fork() == 0) {
          usleep(3000000);
          _exit(0);
        }
        raise(SIGKILL);
      },
      [](RankContext& ctx, Watched& w) { ExpectLoss(ctx, w, 1, 1, "died", 1.0); });
}

TEST(PeerWatchTest, PeerExitingWithoutClosingIsDead) {
  RunLeaving(
      4, 2, [](RankContext&, Watched&) { _exit(0); },
      [](RankContext& ctx, Watched& w) { ExpectLoss(ctx, w, 2, 2, "rank 2 (pid", 1.0); });
}

// The victim aborts blaming rank 0 and stays alive: every other rank (rank 0 too) hears that
// rank 0 is to blame, in the victim's words.
TEST(PeerWatchTest, AbortNamesTheBlamedRank) {
  RunLeaving(
      4, 3,
      [](RankContext&, Watched& w) {
        w.watch.Abort(0);
        usleep(300000);
      },
      [](RankContext& ctx, Watched& w) {
        ExpectLoss(ctx, w, 3, 0, "rank 3 aborted its communicator after rank 0 failed", 1.0);
      });
}

// Every rank closes at a random moment, some after others have exited: nobody is reported,
// also by the last rank to close, which saw all the others leave.
TEST(PeerWatchTest, OrderlyClosesAreNeverLosses) {
  for (int round = 0; round < 5; ++round) {
    xcclUniqueId id;
    ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << xccl::ThreadLastError();
    auto failures = RunRanks(RankMode::kProcesses, 4, [&](RankContext& ctx) {
      Watched w;
      if (!StartWatch(ctx, id, &w)) return;
      std::mt19937_64 rng(ctx.seed + ctx.rank);
      const int rest_ms = static_cast<int>(rng() % 200);
      std::this_thread::sleep_for(std::chrono::milliseconds(rest_ms));
      if (ctx.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));  // last
      RANK_EXPECT(ctx, w.losses.count() == 0, w.losses.count() << " loss(es) reported");
      w.watch.Close();
      RANK_EXPECT(ctx, w.watch.watched() == 0, "still watching " << w.watch.watched());
    });
    for (const auto& f : failures) ADD_FAILURE() << "round " << round << ": " << f;
  }
}

// Ranks of one process die together: nothing to watch, and no thread.
TEST(PeerWatchTest, ThreadsOfOneProcessWatchNothing) {
  xcclUniqueId id;
  ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << xccl::ThreadLastError();
  auto failures = RunRanks(RankMode::kThreads, 4, [&](RankContext& ctx) {
    Watched w;
    if (!StartWatch(ctx, id, &w)) return;
    RANK_EXPECT(ctx, w.watch.watched() == 0, "watches " << w.watch.watched());
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// 20 start/close cycles in the same processes: the descriptor count comes back every time.
TEST(PeerWatchTest, StartCloseCyclesLeaveNoDescriptors) {
  constexpr int kCycles = 20;
  std::vector<xcclUniqueId> ids(kCycles);
  for (xcclUniqueId& id : ids)
    ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << xccl::ThreadLastError();
  auto failures = RunRanks(RankMode::kProcesses, 4, [&](RankContext& ctx) {
    const size_t before = OpenFileDescriptors();
    for (int cycle = 0; cycle < kCycles && ctx.failures.empty(); ++cycle) {
      Watched w;
      if (!StartWatch(ctx, ids[cycle], &w)) return;
      RANK_EXPECT(ctx, w.watch.watched() == 3,
                  "cycle " << cycle << " watches " << w.watch.watched());
      if (w.bootstrap->Barrier() != xcclSuccess) ctx.Fail("barrier");
      w.watch.Close();
      // Everyone closed before anyone's bootstrap goes: no loss in any cycle.
      if (w.bootstrap->Barrier() != xcclSuccess) ctx.Fail("barrier");
      RANK_EXPECT(ctx, w.losses.count() == 0, "cycle " << cycle << ": a loss reported");
    }
    RANK_EXPECT(ctx, OpenFileDescriptors() == before,
                "descriptors " << before << " before, " << OpenFileDescriptors() << " after");
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace xccl_test
