// Meeting points and small exchanges between the benchmark's ranks, kept outside xccl so that
// measuring xccl never depends on xccl: timings, error counts and device lines travel through
// one shared-memory block mapped before fork(), which threads and child processes all see.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "harness/options.h"

namespace xccl_perf {

enum class Reduce { kRank0, kMean, kMin, kMax, kSum };

// The reduction that nccl-tests' -a (average) flag asks for.
Reduce ToReduce(Average average);

// What each rank publishes about itself for the "# Using devices" lines, the JSON header and
// the vendor library's one-GPU-per-rank rule.
struct RankInfo {
  int32_t pid;
  int32_t device;
  char host[64];
  char describe[96];
  char name[64];
  char bus_id[32];
};

class DeviceBuffers;
// This process's and `buffers`' device's description, as a rank publishes it.
RankInfo DescribeRank(const DeviceBuffers& buffers);

class RankSync {
 public:
  // Maps the block for `nranks` ranks; must run before the processes are forked. nullptr (and
  // a message) if the mapping fails.
  static std::unique_ptr<RankSync> Create(int nranks);
  ~RankSync();
  RankSync(const RankSync&) = delete;
  RankSync& operator=(const RankSync&) = delete;

  int nranks() const { return nranks_; }

  // Every rank calls it; returns when all have, or false once any rank aborted the run.
  bool Barrier();

  // Every rank passes its value; all get the reduction over ranks [0, over) (all ranks when
  // over is 0), so ranks outside a sub-communicator can take part without counting.
  bool AllReduce(int rank, double value, Reduce op, double* result, int over = 0);

  // Every rank calls it; afterwards all hold root's `bytes` bytes of data (at most
  // kBroadcastBytes). This is how an id made by one rank after fork() reaches the others.
  static constexpr size_t kBroadcastBytes = 256;
  bool Broadcast(int rank, int root, void* data, size_t bytes);

  // Marks the run as failed: every Barrier, now or later, returns false instead of waiting for
  // a rank that will never arrive.
  void Abort();
  bool Aborted() const;

  RankInfo& Info(int rank);

 private:
  RankSync(void* memory, size_t bytes, int nranks)
      : memory_(memory), bytes_(bytes), nranks_(nranks) {}
  double* Values();
  char* BroadcastArea();

  void* memory_;  // the shared mapping; layout in rank_sync.cc
  size_t bytes_;
  int nranks_;
};

}  // namespace xccl_perf
