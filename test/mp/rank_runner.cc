#include "mp/rank_runner.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace xccl_test {

namespace {

constexpr size_t kSharedBytes = 64 << 10;
constexpr size_t kMaxReportBytes = 16 << 10;
std::vector<pid_t> g_last_children;

uint64_t FreshSeed() {
  std::random_device device;
  return (uint64_t(device()) << 32) | device();
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

void RunBody(RankContext& ctx, const std::function<void(RankContext&)>& body,
             const RunOptions& options) {
  body(ctx);
  if (!options.skip_destroy && ctx.comm != nullptr) {
    xcclResult_t result = xcclCommDestroy(ctx.comm);
    if (result != xcclSuccess)
      ctx.Fail(std::string("xcclCommDestroy: ") + xcclGetErrorString(result));
  }
}

std::vector<std::string> RunThreads(int nranks, const std::function<void(RankContext&)>& body,
                                    const RunOptions& options, volatile uint64_t* shared,
                                    uint64_t seed) {
  if (options.before_init) options.before_init();
  std::vector<xcclComm_t> comms(nranks, nullptr);
  xcclResult_t init = xcclCommInitAll(comms.data(), nranks, nullptr);
  if (init != xcclSuccess) {
    return {std::string("xcclCommInitAll: ") + xcclGetErrorString(init) + ": " +
            xcclGetLastError(nullptr)};
  }
  std::vector<RankContext> contexts(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    contexts[r].comm = comms[r];
    contexts[r].rank = r;
    contexts[r].nranks = nranks;
    contexts[r].seed = seed;
    contexts[r].shared = shared;
    threads.emplace_back([&, r] { RunBody(contexts[r], body, options); });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::string> failures;
  for (int r = 0; r < nranks; ++r)
    for (const auto& f : contexts[r].failures)
      failures.push_back("rank " + std::to_string(r) + ": " + f);
  return failures;
}

std::vector<std::string> RunProcesses(int nranks, const std::function<void(RankContext&)>& body,
                                      const RunOptions& options, volatile uint64_t* shared,
                                      uint64_t seed) {
  xcclUniqueId id;
  if (xcclGetUniqueId(&id) != xcclSuccess) return {"xcclGetUniqueId failed"};
  std::vector<pid_t> children(nranks, -1);
  std::vector<int> pipes(nranks, -1);
  fflush(nullptr);
  for (int r = 0; r < nranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return {"pipe failed"};
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      if (options.before_init) options.before_init();
      if (options.before_rank_init) options.before_rank_init(r);
      RankContext ctx;
      ctx.rank = r;
      ctx.nranks = nranks;
      ctx.seed = seed;
      ctx.shared = shared;
      xcclResult_t init = xcclCommInitRank(&ctx.comm, nranks, id, r);
      if (init != xcclSuccess) {
        ctx.Fail(std::string("xcclCommInitRank: ") + xcclGetErrorString(init) + ": " +
                 xcclGetLastError(nullptr));
      } else {
        RunBody(ctx, body, options);
      }
      std::string report = Join(ctx.failures).substr(0, kMaxReportBytes);
      ssize_t ignored = write(fds[1], report.data(), report.size());
      (void)ignored;
      close(fds[1]);
      _exit(ctx.failures.empty() ? 0 : 1);  // no GoogleTest teardown in a child
    }
    close(fds[1]);
    children[r] = pid;
    pipes[r] = fds[0];
  }
  g_last_children = children;

  std::vector<std::string> failures;
  std::vector<int> status(nranks, -1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
  int remaining = nranks;
  while (remaining > 0) {
    for (int r = 0; r < nranks; ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (waitpid(children[r], &st, WNOHANG) == children[r]) {
        status[r] = st;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < nranks; ++r) {
        if (status[r] != -1) continue;
        failures.push_back("rank " + std::to_string(r) + ": still running after " +
                           std::to_string(options.timeout_s) + " s (hang); killed");
        kill(children[r], SIGKILL);
        waitpid(children[r], &status[r], 0);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int r = 0; r < nranks; ++r) {
    std::string report;
    char buffer[4096];
    ssize_t got;
    while ((got = read(pipes[r], buffer, sizeof(buffer))) > 0) report.append(buffer, got);
    close(pipes[r]);
    for (const auto& line : SplitLines(report))
      failures.push_back("rank " + std::to_string(r) + ": " + line);
    int st = status[r];
    bool expected_death = options.may_die.count(r) > 0;
    if (WIFSIGNALED(st) && !expected_death) {
      failures.push_back("rank " + std::to_string(r) + ": died of signal " +
                         std::to_string(WTERMSIG(st)));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && report.empty()) {
      failures.push_back("rank " + std::to_string(r) + ": exit status " +
                         std::to_string(WEXITSTATUS(st)));
    }
  }
  return failures;
}

}  // namespace

const char* ModeName(RankMode mode) { return mode == RankMode::kThreads ? "Threads" : "Processes"; }

std::vector<std::string> RunRanks(RankMode mode, int nranks,
                                  const std::function<void(RankContext&)>& body,
                                  const RunOptions& options) {
  void* shared =
      mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return {"mmap of the shared scratch area failed"};
  const uint64_t seed = FreshSeed();
  std::vector<std::string> failures =
      mode == RankMode::kThreads
          ? RunThreads(nranks, body, options, static_cast<volatile uint64_t*>(shared), seed)
          : RunProcesses(nranks, body, options, static_cast<volatile uint64_t*>(shared), seed);
  munmap(shared, kSharedBytes);
  if (!failures.empty()) {
    failures.insert(failures.begin(), "seed " + std::to_string(seed) + ", " + ModeName(mode) +
                                          ", " + std::to_string(nranks) + " ranks");
  }
  return failures;
}

std::vector<std::string> LeftoverShm(const std::vector<pid_t>& pids) {
  std::vector<std::string> found;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (dirent* entry = readdir(dir)) {
    int pid = 0;
    if (sscanf(entry->d_name, "xccl-%d-", &pid) != 1) continue;
    for (pid_t p : pids)
      if (p == pid) found.push_back(entry->d_name);
  }
  closedir(dir);
  return found;
}

size_t OpenFileDescriptors() {
  size_t count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

const std::vector<pid_t>& LastChildPids() { return g_last_children; }

bool WaitForCount(volatile uint64_t* word, uint64_t n) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (__atomic_load_n(word, __ATOMIC_SEQ_CST) < n) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();  // many ranks on few cores: leave the cores to those not yet here
  }
  return true;
}

void KillOnceEveryRankIsWarm(RankContext& ctx, int victim) {
  // A word of the 64 KiB shared area that no test uses for anything else.
  constexpr int kWarmSlot = 8000;
  __atomic_add_fetch(&ctx.shared[kWarmSlot], 1, __ATOMIC_SEQ_CST);
  const bool everyone = WaitForCount(&ctx.shared[kWarmSlot], ctx.nranks);
  if (ctx.rank == victim) raise(SIGKILL);
  RANK_EXPECT(ctx, everyone, "a rank never got past its warm-up");
}

}  // namespace xccl_test
