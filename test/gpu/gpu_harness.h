// Runs a test body on several ranks of a GPU platform: as threads of this process, any number
// of them sharing one GPU or spread over all GPUs (xcclCommInitAll with a device list), or as
// forked processes (xcclCommInitRank, device memory shared through IPC). Builds on the host
// suite's runner (test/mp/rank_runner.h): the same RankContext, failure strings and
// RANK_EXPECT, so a GPU test reads like its host twin.
//
// The GPU runtime does not survive fork: a process that touched it cannot fork ranks that use
// it. Process-mode runs therefore keep this process free of the runtime (devices are probed
// in a short-lived child), and where a thread-mode test already touched it in this process
// (a plain run of the whole binary; ctest runs one test per process), the test re-runs itself
// in a fresh process instead.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "gpu/gpu_runtime.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"
#include "xccl.h"

namespace xccl_test {

// ---- devices ----

struct GpuProbe {
  int count = 0;
  std::string error;  // why there is no usable device ("" when count > 0)
};
// Counts devices. With `keep_process_clean`, while this process has not touched the runtime,
// asks a forked child instead, so that this process can still fork ranks that use the GPU.
GpuProbe ProbeGpus(bool keep_process_clean);
// True once this process touched the GPU runtime (a fork can no longer give a usable child).
bool GpuRuntimeTouchedHere();

// Skips the current test, saying why, when no GPU is usable.
#define XCCL_SKIP_WITHOUT_GPU(keep_process_clean)                                    \
  do {                                                                               \
    const ::xccl_test::GpuProbe probe_ = ::xccl_test::ProbeGpus(keep_process_clean); \
    if (probe_.count <= 0) GTEST_SKIP() << "no GPU: " << probe_.error;               \
  } while (0)

// ---- runs ----

// Ranks on `devices` (rank r on devices[r]), as threads or processes. Process ranks take the
// devices in an arbitrary order (rank numbers are assigned before fork, devices after), which
// is fine: tests ask the communicator for its device. Every rank sets its device before init
// and again on its thread before the body. A thread run that outlives options.timeout_s
// aborts the binary, naming the ranks still running: a hung device wait cannot be cancelled
// from the host.
std::vector<std::string> RunGpuRanks(RankMode mode, const std::vector<int>& devices,
                                     const std::function<void(RankContext&)>& body,
                                     const RunOptions& options = RunOptions());

// Reports each failure of a run to GoogleTest.
void ExpectNoFailures(const std::vector<std::string>& failures);

// For a test that makes several process-mode runs: where this process already touched the
// runtime, runs the whole test once in a fresh process, reports its verdict and returns true
// (the caller returns), instead of each run re-running the whole test and finding nothing.
bool RanWholeTestInFreshProcess(int timeout_s);

// ---- where ranks go: the parameter of the per-world suites ----

enum class Placement {
  kOneGpu,   // n ranks on GPU 0 (xccl allows ranks to share a device; NCCL does not)
  kAllGpus,  // n ranks per GPU on every GPU; skipped with fewer than two
};
struct GpuWorld {
  RankMode mode;
  Placement placement;
  int n;  // kOneGpu: the world size; kAllGpus: ranks per GPU
  // XCCL_FAKE_NODES ("2,2": ranks split into nodes, reached through the proxy), or none.
  const char* fake_nodes = nullptr;
};
std::string GpuWorldName(const ::testing::TestParamInfo<GpuWorld>& info);
// For gtest's listing ("Threads, one GPU, world 4") instead of the struct's bytes.
void PrintTo(const GpuWorld& world, std::ostream* os);
// One GPU with 2, 4, 8 threads and 2, 4 processes; all GPUs with 1 and 2 threads per GPU and
// one process per GPU.
std::vector<GpuWorld> StandardGpuWorlds();
// Ranks sharing GPU 0 split into fake nodes, the multi-node suite's layouts: threads as 2x2, 2+1,
// 3+1+2 and 1+1+1, processes as 2x2.
std::vector<GpuWorld> FakeNodeGpuWorlds();

// Fixture of the per-world suites: probes, skips without a GPU (or without a second one for
// kAllGpus), and lays the ranks out.
class GpuWorldTest : public ::testing::TestWithParam<GpuWorld> {
 protected:
  void SetUp() override;
  RankMode mode() const { return GetParam().mode; }
  int world() const { return static_cast<int>(devices_.size()); }
  const std::vector<int>& devices() const { return devices_; }
  // Runs `body` on the world's ranks with XCCL_TIMEOUT_MS at kWorldTimeoutMs (so a broken
  // library fails with a timeout naming a rank rather than hanging), then restores the
  // parameters (thread ranks share this process's).
  void Run(const std::function<void(RankContext&)>& body, const RunOptions& options = RunOptions());
  static constexpr int64_t kWorldTimeoutMs = 60000;

 private:
  std::vector<int> devices_;
};

// ---- inside a rank ----

bool GpuOk(RankContext& ctx, gpu::Error error, const char* expr, const char* file, int line);
bool XcclOk(RankContext& ctx, xcclResult_t result, const char* expr, const char* file, int line);
// Evaluate to true on success; on failure record the call, the error and (for xccl) the
// communicator's last error text.
#define GPU_OK(ctx, expr) ::xccl_test::GpuOk((ctx), (expr), #expr, __FILE__, __LINE__)
#define XCCL_OK(ctx, expr) ::xccl_test::XcclOk((ctx), (expr), #expr, __FILE__, __LINE__)

// Owners of one rank's GPU objects. Allocate/Create record a failure in ctx and return false.
// Device memory comes from a per-thread pool and goes back to it, never to cudaFree (which
// waits for the whole device: see gpu_harness.cc).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  bool Allocate(RankContext& ctx, size_t bytes);
  unsigned char* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  unsigned char* ptr_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;
};

// Host memory for copies to and from the device: pinned, from a per-thread pool that only
// grows and is never given back. Copies from pageable memory are staged by the runtime through
// buffers shared by the whole process, so with several ranks on one GPU one rank's copy can
// wait behind a peer's copy that is queued after a collective waiting for this very rank (a
// deadlock); freeing pinned memory may wait for the whole device.
void* TakePinned(size_t bytes);
void GivePinned(void* ptr, size_t bytes);

template <typename T>
struct PinnedAllocator {
  using value_type = T;
  PinnedAllocator() = default;
  template <typename U>
  PinnedAllocator(const PinnedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(TakePinned(n * sizeof(T))); }
  void deallocate(T* ptr, size_t n) { GivePinned(ptr, n * sizeof(T)); }
  bool operator==(const PinnedAllocator&) const { return true; }
  bool operator!=(const PinnedAllocator&) const { return false; }
};
using HostBytes = std::vector<unsigned char, PinnedAllocator<unsigned char>>;

class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  bool Create(RankContext& ctx);
  gpu::StreamHandle get() const { return stream_; }
  // As the library takes it.
  xcclStream_t xccl() const { return static_cast<xcclStream_t>(stream_); }

 private:
  gpu::StreamHandle stream_ = nullptr;
};

// The poison byte of data_pattern.h's Poison(), for device buffers.
constexpr int kPoisonByte = 0xA5;
// "" or where the first of `bytes` bytes at `data` differs from the poison byte.
std::string CheckPoisoned(const unsigned char* data, size_t bytes);

// One checked all_gather on `stream`, synchronised: fresh data for `call`, the output
// poisoned with `offset` bytes of misalignment before it and guard bytes after it, in or out
// of place; every byte of the output and the guards compared on the host.
void CheckedAllGather(RankContext& ctx, const Stream& stream, size_t count, int dtype,
                      bool in_place, size_t offset, uint64_t call);
// The same into `area` (a window, xcclMemAlloc memory), which must hold CheckedAreaBytes.
size_t CheckedAreaBytes(const RankContext& ctx, size_t count, int dtype, size_t offset);
void CheckedAllGatherInto(RankContext& ctx, const Stream& stream, unsigned char* area, size_t count,
                          int dtype, bool in_place, size_t offset, uint64_t call);

// After a stream drained: the communicator must have recorded no asynchronous failure.
void ExpectNoAsyncError(RankContext& ctx, const char* when);

// After a run of calls on `stream`: drains it, expects no asynchronous failure (`when`), then
// copies `bytes` of `device` into *host. False (the failure recorded) if anything went wrong.
bool DrainAndCopyBack(RankContext& ctx, const Stream& stream, const unsigned char* device,
                      size_t bytes, const char* when, HostBytes* host);

// Polls xcclCommGetAsyncError for up to `patience_s` (the host records a drained device wait a
// moment after the stream drains); *seen_ns, where given: when it was first seen.
xcclResult_t AwaitAsyncError(xcclComm_t comm, double patience_s, uint64_t* seen_ns = nullptr);

// 100 checked all_gathers (random types, counts, in and out of place, misaligned outputs) on
// `stream` over `comm`, where this rank is `rank` of `nranks`; failures into ctx.
void HundredCheckedAllGathers(RankContext& ctx, const Stream& stream, xcclComm_t comm, int rank,
                              int nranks);

// After `victim` died or aborted: expects `async` to be a remote error whose message names it,
// then shrinks it away (XCCL_SHRINK_ABORT), checks the new rank and count, makes
// HundredCheckedAllGathers on the new communicator and destroys it. Failures into ctx.
void ExpectNamedThenShrinkAndGoOn(RankContext& ctx, const Stream& stream, int victim,
                                  xcclResult_t async);

// A host-side meeting point of every rank of the run (threads or processes), through
// ctx.shared[slot]; `round` counts the meetings on that slot from 0. Fails after `timeout_s`.
bool HostBarrier(RankContext& ctx, int slot, uint64_t round, double timeout_s = 60);

// A graph captured from `enqueue` (the calls it makes on `stream`; false if one failed) on every
// rank, then instantiated, with a host barrier on `slot` (rounds 0 and 1) after each phase: the
// phases of a framework that captures a whole step on every rank, then runs it. The capture ends
// whatever happened, so the stream leaves capture mode. Owns the graph.
class CapturedGraph {
 public:
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph();
  // False (recorded on ctx) where any phase failed on this rank.
  bool Capture(RankContext& ctx, const Stream& stream, int slot,
               const std::function<bool()>& enqueue);
  gpu::GraphExecHandle exec() const { return exec_; }

 private:
  gpu::GraphHandle graph_ = nullptr;
  gpu::GraphExecHandle exec_ = nullptr;
};

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
// CLOCK_MONOTONIC in ns: one clock for every thread and process of the machine.
uint64_t MonotonicNs();

// Resource counts of this process, for leak checks.
size_t ThreadCount();

}  // namespace xccl_test
