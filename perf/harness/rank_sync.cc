#include "harness/rank_sync.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

#include "harness/device_buffers.h"
#include "harness/table_printer.h"

namespace xccl_perf {
namespace {

// The start of the shared mapping. It is seen by several processes, so it holds only lock-free
// atomics and plain data, never pointers. After it come nranks doubles (each rank writes only
// its own, between barriers), nranks RankInfo and the broadcast area.
struct Control {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
  std::atomic<uint32_t> aborted;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "atomics must work across processes");

constexpr size_t kValuesOffset = (sizeof(Control) + 63) / 64 * 64;

size_t InfosOffset(int nranks) { return (kValuesOffset + sizeof(double) * nranks + 63) / 64 * 64; }

size_t BroadcastOffset(int nranks) {
  return (InfosOffset(nranks) + sizeof(RankInfo) * nranks + 63) / 64 * 64;
}

size_t MappingBytes(int nranks) { return BroadcastOffset(nranks) + RankSync::kBroadcastBytes; }

Control* GetControl(void* memory) { return static_cast<Control*>(memory); }

// Waiting in the kernel rather than spinning matters here: a rank that reaches a barrier early
// would otherwise take CPU from ranks (and xccl worker threads) still inside a timed loop. The
// futex is process-shared (no FUTEX_PRIVATE_FLAG) because children wait on it too; the timeout
// lets a waiter notice an abort that raced with its sleep.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  struct timespec timeout = {0, 100 * 1000 * 1000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

std::unique_ptr<RankSync> RankSync::Create(int nranks) {
  size_t bytes = MappingBytes(nranks);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    fprintf(stderr, "mmap of %zu bytes for the rank exchange failed: %s\n", bytes, strerror(errno));
    return nullptr;
  }
  Control* control = new (memory) Control;
  control->arrived.store(0);
  control->generation.store(0);
  control->aborted.store(0);
  return std::unique_ptr<RankSync>(new RankSync(memory, bytes, nranks));
}

RankSync::~RankSync() { munmap(memory_, bytes_); }

double* RankSync::Values() {
  return reinterpret_cast<double*>(static_cast<char*>(memory_) + kValuesOffset);
}

char* RankSync::BroadcastArea() { return static_cast<char*>(memory_) + BroadcastOffset(nranks_); }

RankInfo& RankSync::Info(int rank) {
  return reinterpret_cast<RankInfo*>(static_cast<char*>(memory_) + InfosOffset(nranks_))[rank];
}

bool RankSync::Barrier() {
  Control* control = GetControl(memory_);
  uint32_t generation = control->generation.load(std::memory_order_acquire);
  if (control->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(nranks_)) {
    // Reset before releasing: a rank leaving this barrier may enter the next one at once.
    control->arrived.store(0, std::memory_order_relaxed);
    control->generation.fetch_add(1, std::memory_order_release);
    FutexWakeAll(&control->generation);
  } else {
    while (control->generation.load(std::memory_order_acquire) == generation) {
      if (Aborted()) return false;
      FutexWait(&control->generation, generation);
    }
  }
  return !Aborted();
}

bool RankSync::AllReduce(int rank, double value, Reduce op, double* result, int over) {
  if (over <= 0 || over > nranks_) over = nranks_;
  double* values = Values();
  values[rank] = value;
  if (!Barrier()) return false;
  double acc = values[0];
  for (int r = 1; r < over; ++r) {
    switch (op) {
      case Reduce::kRank0:
        break;
      case Reduce::kMean:
      case Reduce::kSum:
        acc += values[r];
        break;
      case Reduce::kMin:
        acc = std::min(acc, values[r]);
        break;
      case Reduce::kMax:
        acc = std::max(acc, values[r]);
        break;
    }
  }
  if (op == Reduce::kMean) acc /= over;
  *result = acc;
  // Nobody may overwrite a slot until everyone has read them all.
  return Barrier();
}

bool RankSync::Broadcast(int rank, int root, void* data, size_t bytes) {
  if (bytes > kBroadcastBytes) {
    fprintf(stderr, "RankSync::Broadcast: %zu bytes exceed the %zu-byte area\n", bytes,
            kBroadcastBytes);
    Abort();
    return false;
  }
  if (rank == root) memcpy(BroadcastArea(), data, bytes);
  if (!Barrier()) return false;
  if (rank != root) memcpy(data, BroadcastArea(), bytes);
  // The area is reused by the next broadcast only after everyone has read this one.
  return Barrier();
}

void RankSync::Abort() {
  Control* control = GetControl(memory_);
  control->aborted.store(1, std::memory_order_release);
  // Bump the generation too so that sleepers wake now rather than at their timeout.
  control->generation.fetch_add(1, std::memory_order_release);
  FutexWakeAll(&control->generation);
}

bool RankSync::Aborted() const {
  return GetControl(memory_)->aborted.load(std::memory_order_acquire) != 0;
}

Reduce ToReduce(Average average) {
  switch (average) {
    case Average::kRank0:
      return Reduce::kRank0;
    case Average::kMin:
      return Reduce::kMin;
    case Average::kMax:
      return Reduce::kMax;
    case Average::kMean:
      break;
  }
  return Reduce::kMean;
}

RankInfo DescribeRank(const DeviceBuffers& buffers) {
  RankInfo info{};
  info.pid = static_cast<int32_t>(getpid());
  info.device = buffers.Device();
  snprintf(info.host, sizeof(info.host), "%s", ShortHostName().c_str());
  snprintf(info.describe, sizeof(info.describe), "%s", buffers.Describe().c_str());
  snprintf(info.name, sizeof(info.name), "%s", buffers.Name().c_str());
  snprintf(info.bus_id, sizeof(info.bus_id), "%s", buffers.BusId().c_str());
  return info;
}

}  // namespace xccl_perf
