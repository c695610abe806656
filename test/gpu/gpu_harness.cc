#include "gpu/gpu_harness.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "base/datatype.h"
#include "base/params.h"
#include "common/gpu_runtime_settings.h"
#include "mp/data_pattern.h"

namespace xccl_test {

namespace {

// Before main, so before any CUDA call of the test binary (gtest_main).
const bool kGpuRuntimeSettings = RequestGpuRuntimeSettings();

// Set in a re-run child so that it never re-runs itself again.
constexpr const char* kFreshProcessEnv = "XCCL_GPU_TEST_FRESH_PROCESS";

// Every use of the runtime in this process goes through the harness first (the probe, the
// thread runner), so this flag is a complete record. (Whether the driver library is mapped
// says nothing: a build may link it directly, and mapping is not initialisation.)
std::atomic<bool> g_runtime_touched{false};

void MarkRuntimeTouched() { g_runtime_touched = true; }

uint64_t FreshSeed() {
  std::random_device device;
  return (uint64_t(device()) << 32) | device();
}

GpuProbe ProbeHere() {
  MarkRuntimeTouched();
  GpuProbe probe;
  gpu::Error error = gpu::GetDeviceCount(&probe.count);
  if (error != gpu::kSuccess) {
    probe.count = 0;
    probe.error = gpu::ErrorString(error);
  } else if (probe.count == 0) {
    probe.error = "the runtime reports 0 devices";
  }
  return probe;
}

// The same question asked by a child that exits at once, leaving this process fork-safe.
GpuProbe ProbeInChild() {
  struct Answer {
    int count;
    char error[256];
  };
  int fds[2];
  if (pipe(fds) != 0) return {0, std::string("pipe: ") + strerror(errno)};
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return {0, std::string("fork: ") + strerror(errno)};
  if (pid == 0) {
    close(fds[0]);
    GpuProbe probe = ProbeHere();
    Answer answer{};
    answer.count = probe.count;
    snprintf(answer.error, sizeof(answer.error), "%s", probe.error.c_str());
    ssize_t ignored = write(fds[1], &answer, sizeof(answer));
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  Answer answer{};
  ssize_t got = read(fds[0], &answer, sizeof(answer));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof(answer)))
    return {0, "the device probe child died (status " + std::to_string(status) + ")"};
  answer.error[sizeof(answer.error) - 1] = '\0';
  return {answer.count, answer.error};
}

// Runs the current test alone in a fresh copy of this binary, whose runtime is untouched, and
// returns its verdict (its own output goes to the same terminal).
std::vector<std::string> RerunCurrentTestInFreshProcess(int timeout_s) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return {"process-mode run outside a test with the GPU runtime loaded"};
  if (getenv(kFreshProcessEnv) != nullptr) {
    return {"the GPU runtime was loaded in this process before its ranks could be forked"};
  }
  const std::string filter =
      std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  printf(
      "[ xccl    ] the GPU runtime is loaded in this process; re-running %s.%s in a fresh "
      "process so that its ranks can be forked\n",
      info->test_suite_name(), info->name());
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return {std::string("fork: ") + strerror(errno)};
  if (pid == 0) {
    setenv(kFreshProcessEnv, "1", 1);
    execl("/proc/self/exe", "xccl_gpu_tests", filter.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (SecondsSince(start) > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return {"the fresh-process re-run was still running after " + std::to_string(timeout_s) +
              " s; killed"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  return {"the fresh-process re-run failed (wait status " + std::to_string(status) +
          "); its output is above"};
}

// What every rank does before the body: sit on its device (set again on this thread: the
// current device is per thread) and check that the communicator agrees.
bool RankPrologue(RankContext& ctx, int expected_device) {
  int device = -1;
  if (!XCCL_OK(ctx, xcclCommDevice(ctx.comm, &device))) return false;
  if (expected_device >= 0) {
    RANK_EXPECT(
        ctx, device == expected_device,
        "the communicator is on device " << device << ", the device list said " << expected_device);
  } else {
    int current = -1;
    GPU_OK(ctx, gpu::GetDevice(&current));
    RANK_EXPECT(
        ctx, device == current,
        "device " << current << " was current at init, the communicator is on device " << device);
  }
  return GPU_OK(ctx, gpu::SetDevice(device));
}

std::vector<std::string> RunThreads(const std::vector<int>& devices,
                                    const std::function<void(RankContext&)>& body,
                                    const RunOptions& options, volatile uint64_t* shared,
                                    uint64_t seed) {
  MarkRuntimeTouched();
  const int nranks = static_cast<int>(devices.size());
  if (options.before_init) options.before_init();
  std::vector<xcclComm_t> comms(nranks, nullptr);
  xcclResult_t init = xcclCommInitAll(comms.data(), nranks, devices.data());
  if (init != xcclSuccess) {
    return {std::string("xcclCommInitAll: ") + xcclGetErrorString(init) + ": " +
            xcclGetLastError(nullptr)};
  }
  std::vector<RankContext> contexts(nranks);
  std::unique_ptr<std::atomic<bool>[]> done(new std::atomic<bool>[nranks]);
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    done[r] = false;
    contexts[r].comm = comms[r];
    contexts[r].rank = r;
    contexts[r].nranks = nranks;
    contexts[r].seed = seed;
    contexts[r].shared = shared;
    threads.emplace_back([&, r] {
      RankContext& ctx = contexts[r];
      if (GPU_OK(ctx, gpu::SetDevice(devices[r])) && RankPrologue(ctx, devices[r])) body(ctx);
      if (!options.skip_destroy && ctx.comm != nullptr) {
        xcclResult_t result = xcclCommDestroy(ctx.comm);
        if (result != xcclSuccess)
          ctx.Fail(std::string("xcclCommDestroy: ") + xcclGetErrorString(result));
      }
      done[r] = true;
      ++finished;
    });
  }
  auto start = std::chrono::steady_clock::now();
  while (finished < nranks) {
    if (SecondsSince(start) > options.timeout_s) {
      // A thread stuck in a device wait cannot be cancelled; say who and stop the binary
      // rather than leave ctest to kill it without a word.
      fprintf(stderr,
              "xccl_gpu_tests: hang: after %d s these ranks are still running:", options.timeout_s);
      for (int r = 0; r < nranks; ++r)
        if (!done[r]) fprintf(stderr, " %d", r);
      fprintf(stderr, "\n");
      for (int r = 0; r < nranks; ++r)
        if (done[r])
          for (const auto& f : contexts[r].failures)
            fprintf(stderr, "  rank %d: %s\n", r, f.c_str());
      fflush(stderr);
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::string> failures;
  for (int r = 0; r < nranks; ++r)
    for (const auto& f : contexts[r].failures)
      failures.push_back("rank " + std::to_string(r) + ": " + f);
  if (!failures.empty()) {
    failures.insert(failures.begin(), "seed " + std::to_string(seed) + ", Threads, " +
                                          std::to_string(nranks) + " ranks");
  }
  return failures;
}

// In a forked rank: why its device could not be set before init ("" when it was).
std::string g_before_init_error;

std::vector<std::string> RunProcesses(const std::vector<int>& devices,
                                      const std::function<void(RankContext&)>& body,
                                      const RunOptions& options) {
  if (GpuRuntimeTouchedHere()) return RerunCurrentTestInFreshProcess(options.timeout_s + 60);
  // Children take devices in the order they reach before_init, through a shared counter.
  void* counter_page =
      mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (counter_page == MAP_FAILED) return {"mmap of the device counter failed"};
  uint64_t* counter = static_cast<uint64_t*>(counter_page);
  *counter = 0;
  RunOptions wrapped = options;
  wrapped.before_init = [&devices, counter, user = options.before_init] {
    const uint64_t index = __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
    const int device = devices[index % devices.size()];
    gpu::Error error = gpu::SetDevice(device);
    if (error != gpu::kSuccess)
      g_before_init_error = "SetDevice(" + std::to_string(device) + "): " + gpu::ErrorString(error);
    if (user) user();
  };
  std::vector<std::string> failures = RunRanks(
      RankMode::kProcesses, static_cast<int>(devices.size()),
      [&body](RankContext& ctx) {
        RANK_EXPECT(ctx, g_before_init_error.empty(), g_before_init_error);
        if (RankPrologue(ctx, -1)) body(ctx);
      },
      wrapped);
  munmap(counter_page, sizeof(uint64_t));
  for (const auto& name : LeftoverShm(LastChildPids()))
    failures.push_back("left in /dev/shm: " + name);
  return failures;
}

}  // namespace

GpuProbe ProbeGpus(bool keep_process_clean) {
  if (keep_process_clean && !GpuRuntimeTouchedHere()) return ProbeInChild();
  return ProbeHere();
}

bool GpuRuntimeTouchedHere() { return g_runtime_touched; }

std::vector<std::string> RunGpuRanks(RankMode mode, const std::vector<int>& devices,
                                     const std::function<void(RankContext&)>& body,
                                     const RunOptions& options) {
  if (devices.empty()) return {"no ranks"};
  if (mode == RankMode::kProcesses) return RunProcesses(devices, body, options);
  const size_t kSharedBytes = 64 << 10;  // as RunRanks gives process ranks
  void* shared =
      mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return {"mmap of the shared scratch area failed"};
  std::vector<std::string> failures =
      RunThreads(devices, body, options, static_cast<volatile uint64_t*>(shared), FreshSeed());
  munmap(shared, kSharedBytes);
  return failures;
}

bool RanWholeTestInFreshProcess(int timeout_s) {
  if (!GpuRuntimeTouchedHere()) return false;
  ExpectNoFailures(RerunCurrentTestInFreshProcess(timeout_s));
  return true;
}

void ExpectNoFailures(const std::vector<std::string>& failures) {
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

void PrintTo(const GpuWorld& world, std::ostream* os) {
  *os << ModeName(world.mode)
      << (world.placement == Placement::kOneGpu ? ", one GPU, world " : ", all GPUs, per GPU ")
      << world.n;
  if (world.fake_nodes != nullptr) *os << ", fake nodes " << world.fake_nodes;
}

std::string GpuWorldName(const ::testing::TestParamInfo<GpuWorld>& info) {
  const GpuWorld& w = info.param;
  std::string name = std::string(ModeName(w.mode)) +
                     (w.placement == Placement::kOneGpu ? "OneGpuWorld" : "AllGpusX") +
                     std::to_string(w.n);
  if (w.fake_nodes != nullptr) {
    std::string nodes = w.fake_nodes;
    std::replace(nodes.begin(), nodes.end(), ',', 'x');
    name += "Nodes" + nodes;  // "2,1" -> Nodes2x1, as the multi-node suite names its layouts
  }
  return name;
}

std::vector<GpuWorld> StandardGpuWorlds() {
  using M = RankMode;
  using P = Placement;
  return {
      {M::kThreads, P::kOneGpu, 2},   {M::kThreads, P::kOneGpu, 4},
      {M::kThreads, P::kOneGpu, 8},   {M::kProcesses, P::kOneGpu, 2},
      {M::kProcesses, P::kOneGpu, 4}, {M::kThreads, P::kAllGpus, 1},
      {M::kThreads, P::kAllGpus, 2},  {M::kProcesses, P::kAllGpus, 1},
  };
}

std::vector<GpuWorld> FakeNodeGpuWorlds() {
  using M = RankMode;
  using P = Placement;
  return {{M::kThreads, P::kOneGpu, 4, "2,2"},
          {M::kThreads, P::kOneGpu, 3, "2,1"},
          {M::kThreads, P::kOneGpu, 6, "3,1,2"},
          {M::kThreads, P::kOneGpu, 3, "1,1,1"},
          {M::kProcesses, P::kOneGpu, 4, "2,2"}};
}

void GpuWorldTest::SetUp() {
  const GpuWorld& w = GetParam();
  const GpuProbe probe = ProbeGpus(w.mode == RankMode::kProcesses);
  if (probe.count <= 0) GTEST_SKIP() << "no GPU: " << probe.error;
  const int count = probe.count;
  if (w.placement == Placement::kOneGpu) {
    devices_.assign(w.n, 0);
    return;
  }
  if (count < 2) GTEST_SKIP() << "all-GPU placement needs 2 or more GPUs; found " << count;
  for (int r = 0; r < count * w.n; ++r) devices_.push_back(r % count);
}

void GpuWorldTest::Run(const std::function<void(RankContext&)>& body, const RunOptions& options) {
  RunOptions with_timeout = options;
  with_timeout.before_init = [user = options.before_init, nodes = GetParam().fake_nodes] {
    WithTimeoutMs(kWorldTimeoutMs)();
    if (nodes != nullptr) WithFakeNodes(nodes)();
    if (user) user();
  };
  std::vector<std::string> failures = RunGpuRanks(mode(), devices_, body, with_timeout);
  RestoreParams();
  ExpectNoFailures(failures);
}

bool GpuOk(RankContext& ctx, gpu::Error error, const char* expr, const char* file, int line) {
  if (error == gpu::kSuccess) return true;
  ctx.Fail(std::string(file) + ":" + std::to_string(line) + ": " + expr + ": " +
           gpu::ErrorString(error));
  return false;
}

bool XcclOk(RankContext& ctx, xcclResult_t result, const char* expr, const char* file, int line) {
  if (result == xcclSuccess) return true;
  ctx.Fail(std::string(file) + ":" + std::to_string(line) + ": " + expr + ": " +
           xcclGetErrorString(result) + ": " + xcclGetLastError(ctx.comm));
  return false;
}

namespace {
// Device blocks handed back by this rank's thread, reused by its next Allocate of at most that
// size and never freed: cudaFree waits for the whole device, and with ranks sharing a GPU a
// rank blocked there holds up its next call while a peer's kernel waits for that very call
// (docs/perf-history.md, "Moved from code comments").
thread_local std::vector<std::pair<void*, size_t>> t_device_pool;
}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) t_device_pool.emplace_back(ptr_, capacity_);
}

bool DeviceBuffer::Allocate(RankContext& ctx, size_t bytes) {
  // cudaMalloc(0) gives NULL; a real pointer keeps "count 0 with valid buffers" apart from
  // "NULL buffers".
  const size_t wanted = bytes == 0 ? 1 : bytes;
  size_t best = t_device_pool.size();
  for (size_t i = 0; i < t_device_pool.size(); ++i) {
    if (t_device_pool[i].second >= wanted &&
        (best == t_device_pool.size() || t_device_pool[i].second < t_device_pool[best].second))
      best = i;
  }
  if (best < t_device_pool.size()) {
    ptr_ = static_cast<unsigned char*>(t_device_pool[best].first);
    capacity_ = t_device_pool[best].second;
    t_device_pool.erase(t_device_pool.begin() + static_cast<long>(best));
  } else {
    void* ptr = nullptr;
    if (!GPU_OK(ctx, gpu::Malloc(&ptr, wanted))) return false;
    ptr_ = static_cast<unsigned char*>(ptr);
    capacity_ = wanted;
  }
  bytes_ = bytes;
  return true;
}

namespace {
// Blocks handed back, by size; reused by the next TakePinned of at most that size.
thread_local std::vector<std::pair<void*, size_t>> t_pinned_pool;
}  // namespace

void* TakePinned(size_t bytes) {
  if (bytes == 0) bytes = 1;
  for (size_t i = 0; i < t_pinned_pool.size(); ++i) {
    if (t_pinned_pool[i].second >= bytes) {
      void* ptr = t_pinned_pool[i].first;
      t_pinned_pool.erase(t_pinned_pool.begin() + static_cast<long>(i));
      return ptr;
    }
  }
  void* ptr = nullptr;
  if (gpu::MallocHost(&ptr, bytes) != gpu::kSuccess || ptr == nullptr) throw std::bad_alloc();
  return ptr;
}

void GivePinned(void* ptr, size_t bytes) {
  if (ptr != nullptr) t_pinned_pool.emplace_back(ptr, bytes == 0 ? 1 : bytes);
}

Stream::~Stream() {
  if (stream_ != nullptr) (void)gpu::StreamDestroy(stream_);
}

bool Stream::Create(RankContext& ctx) {
  return GPU_OK(ctx, gpu::StreamCreateNonBlocking(&stream_));
}

std::string CheckPoisoned(const unsigned char* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != kPoisonByte) {
      return "byte " + std::to_string(i) + " of " + std::to_string(bytes) + " is " +
             std::to_string(data[i]) + ", not the poison " + std::to_string(kPoisonByte);
    }
  }
  return "";
}

// Bytes kept poisoned after every output, to catch stores past its end.
constexpr size_t kGuardBytes = 64;

void CheckedAllGather(RankContext& ctx, const Stream& stream, size_t count, int dtype,
                      bool in_place, size_t offset, uint64_t call) {
  DeviceBuffer recv_mem;
  if (!recv_mem.Allocate(ctx, CheckedAreaBytes(ctx, count, dtype, offset))) return;
  CheckedAllGatherInto(ctx, stream, recv_mem.get(), count, dtype, in_place, offset, call);
}

size_t CheckedAreaBytes(const RankContext& ctx, size_t count, int dtype, size_t offset) {
  return offset + count * xccl::DataTypeSize(dtype) * ctx.nranks + kGuardBytes;
}

void CheckedAllGatherInto(RankContext& ctx, const Stream& stream, unsigned char* area, size_t count,
                          int dtype, bool in_place, size_t offset, uint64_t call) {
  const size_t elem = xccl::DataTypeSize(dtype);
  const size_t block = count * elem;
  const size_t total = block * ctx.nranks;
  const size_t area_bytes = CheckedAreaBytes(ctx, count, dtype, offset);
  DeviceBuffer send_mem;
  if (!in_place && !send_mem.Allocate(ctx, offset + block)) return;
  unsigned char* recv = area + offset;
  unsigned char* send = in_place ? recv + ctx.rank * block : send_mem.get() + offset;
  HostBytes host_send(block);
  HostBytes host_recv(area_bytes);
  FillBlock(host_send.data(), block, ctx.seed, ctx.rank, call);
  if (!GPU_OK(ctx, gpu::MemsetAsync(area, kPoisonByte, area_bytes, stream.get()))) return;
  if (!GPU_OK(ctx, gpu::MemcpyAsync(send, host_send.data(), block, stream.get()))) return;
  const std::string what = "call " + std::to_string(call) + " (" + xccl::DataTypeName(dtype) +
                           ", count " + std::to_string(count) +
                           (in_place ? ", in place" : ", out of place") + ", offset " +
                           std::to_string(offset) + ")";
  xcclResult_t result =
      xcclAllGather(send, recv, count, static_cast<xcclDataType_t>(dtype), ctx.comm, stream.xccl());
  RANK_EXPECT(ctx, result == xcclSuccess,
              what << ": " << xcclGetErrorString(result) << ": " << xcclGetLastError(ctx.comm));
  if (result != xcclSuccess) return;
  if (!GPU_OK(ctx, gpu::MemcpyAsync(host_recv.data(), area, area_bytes, stream.get()))) return;
  if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
  ExpectNoAsyncError(ctx, what.c_str());
  std::string before = CheckPoisoned(host_recv.data(), offset);
  RANK_EXPECT(ctx, before.empty(), what << ": guard before the output: " << before);
  std::string after = CheckPoisoned(host_recv.data() + offset + total, kGuardBytes);
  RANK_EXPECT(ctx, after.empty(), what << ": guard after the output: " << after);
  std::string wrong = CheckGathered(host_recv.data() + offset, block, ctx.nranks, ctx.seed, call,
                                    elem == 0 ? 1 : elem);
  RANK_EXPECT(ctx, wrong.empty(), what << ": " << wrong);
}

void ExpectNoAsyncError(RankContext& ctx, const char* when) {
  xcclResult_t async = xcclSuccess;
  if (!XCCL_OK(ctx, xcclCommGetAsyncError(ctx.comm, &async))) return;
  RANK_EXPECT(ctx, async == xcclSuccess,
              when << ": asynchronous error " << xcclGetErrorString(async) << ": "
                   << xcclGetLastError(ctx.comm));
}

bool DrainAndCopyBack(RankContext& ctx, const Stream& stream, const unsigned char* device,
                      size_t bytes, const char* when, HostBytes* host) {
  if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return false;
  ExpectNoAsyncError(ctx, when);
  if (!ctx.failures.empty()) return false;
  host->assign(bytes, 0);
  return GPU_OK(ctx, gpu::MemcpyAsync(host->data(), device, bytes, stream.get())) &&
         GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
}

bool HostBarrier(RankContext& ctx, int slot, uint64_t round, double timeout_s) {
  uint64_t* counter = const_cast<uint64_t*>(ctx.shared + slot);
  __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
  const uint64_t target = (round + 1) * static_cast<uint64_t>(ctx.nranks);
  auto start = std::chrono::steady_clock::now();
  while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < target) {
    if (SecondsSince(start) > timeout_s) {
      ctx.Fail("host barrier " + std::to_string(slot) + " round " + std::to_string(round) +
               ": not every rank arrived within " + std::to_string(timeout_s) + " s");
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

size_t ThreadCount() {
  size_t count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') ++count;
    closedir(dir);
  }
  return count;
}

xcclResult_t AwaitAsyncError(xcclComm_t comm, double patience_s, uint64_t* seen_ns) {
  const auto start = std::chrono::steady_clock::now();
  xcclResult_t async = xcclSuccess;
  while (xcclCommGetAsyncError(comm, &async) == xcclSuccess && async == xcclSuccess &&
         SecondsSince(start) < patience_s)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  if (seen_ns != nullptr) *seen_ns = MonotonicNs();
  return async;
}

void HundredCheckedAllGathers(RankContext& ctx, const Stream& stream, xcclComm_t comm, int rank,
                              int nranks) {
  CheckedCallsOn(ctx, comm, rank, nranks, 100,
                 [&stream](RankContext& sub, std::mt19937_64& rng, int call) {
                   const int dtype = static_cast<int>(rng() % xcclNumTypes);
                   CheckedAllGather(sub, stream, 1 + rng() % 70000, dtype, rng() % 2 == 0,
                                    rng() % 4, 1000 + call);
                 });
}

void ExpectNamedThenShrinkAndGoOn(RankContext& ctx, const Stream& stream, int victim,
                                  xcclResult_t async) {
  const std::string message = xcclGetLastError(ctx.comm);
  RANK_EXPECT(ctx, async == xcclRemoteError,
              "async error " << xcclGetErrorString(async) << ": " << message);
  RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
              "the error does not name rank " << victim << ": " << message);
  xcclComm_t small = nullptr;
  const int list[] = {victim};
  if (!XCCL_OK(ctx, xcclCommShrink(ctx.comm, list, 1, &small, nullptr, XCCL_SHRINK_ABORT))) return;
  int rank = -1, count = -1;
  RANK_EXPECT(ctx,
              xcclCommUserRank(small, &rank) == xcclSuccess &&
                  xcclCommCount(small, &count) == xcclSuccess &&
                  rank == ctx.rank - (ctx.rank > victim ? 1 : 0) && count == ctx.nranks - 1,
              "new rank " << rank << " of " << count);
  HundredCheckedAllGathers(ctx, stream, small, rank, count);
  RANK_EXPECT(ctx, xcclCommDestroy(small) == xcclSuccess, xcclGetLastError(nullptr));
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) (void)gpu::GraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)gpu::GraphDestroy(graph_);
}

bool CapturedGraph::Capture(RankContext& ctx, const Stream& stream, int slot,
                            const std::function<bool()>& enqueue) {
  if (!GPU_OK(ctx, gpu::StreamBeginCaptureThreadLocal(stream.get()))) return false;
  bool captured = enqueue();
  captured = GPU_OK(ctx, gpu::StreamEndCapture(stream.get(), &graph_)) && captured;
  if (!HostBarrier(ctx, slot, 0)) return false;
  if (captured) captured = GPU_OK(ctx, gpu::GraphInstantiate(&exec_, graph_));
  return HostBarrier(ctx, slot, 1) && captured;
}

}  // namespace xccl_test
