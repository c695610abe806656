// Command-line options of the perf binaries: nccl-tests' flags plus xccl's own -np.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "xccl.h"

namespace xccl_perf {

// How per-rank times become the one reported time (nccl-tests' -a).
enum class Average { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

struct Options {
  // Defaults are nccl-tests' so that a bare invocation means the same thing.
  size_t min_bytes = 32u << 20;
  size_t max_bytes = 32u << 20;
  size_t step_bytes = 1u << 20;
  size_t step_factor = 1;
  int iters = 20;
  int warmup_iters = 5;
  int check = 1;  // number of checked calls per measurement; 0 disables checking
  int threads = 1;
  int gpus = 1;
  int procs = 1;
  // nccl-tests' -z: a barrier between ranks after each timed call, so that calls never overlap
  // across ranks (host calls already complete before they return).
  int blocking = 0;
  Average average = Average::kMean;
  std::vector<xcclDataType_t> types{xcclFloat};
  // nccl-tests' -o for the reducing binaries: the ops each type runs, in nccl-tests' order.
  std::vector<xcclRedOp_t> ops{xcclSum};
  // nccl-tests' -G: 0 times plain launches; N > 0 captures the -n calls of a measurement into a
  // graph once and times N launches of it.
  int graph_launches = 0;
  // --repeats R: every measurement's timed loop runs R times and the median time is reported
  // (each rank's median, then -a across ranks), so a figure is the median of several runs.
  int repeats = 1;
  // nccl-tests' -m: calls per timed iteration; the reported time is per call.
  int agg_iters = 1;
  int root = 0;  // -r: broadcast_perf's root (the others take it as nccl-tests does and ignore it)
  // nccl-tests' -T: every wait's deadline in seconds (sets XCCL_TIMEOUT_MS); 0 leaves it be.
  int timeout_s = 0;
  // nccl-tests' -R: 0 plain buffers, 1 the receive buffer from xcclMemAlloc and both registered
  // (xcclCommRegister), 2 the receive buffer a window in xcclMemAlloc memory.
  int local_register = 0;
  // -J: where to write every row as JSON; empty for none.
  std::string json_path;
  // --compare vendor: time the vendor library (NCCL through XCCL_VENDOR_LIB) beside xccl.
  bool compare_vendor = false;
  // --netns: the network namespaces the processes run in, one node each (empty: this one).
  std::vector<std::string> netns;
  // The command as typed, for the JSON header.
  std::string command_line;

  int RanksPerProcess() const { return threads * gpus; }
  int TotalRanks() const { return procs * threads * gpus; }
  // The size after `size` in the sweep: times the factor, or plus the step.
  size_t NextSize(size_t size) const {
    return step_factor > 1 ? size * step_factor : size + step_bytes;
  }
};

// Which groups of flags a binary takes; the rest are refused rather than silently ignored.
struct FlagSet {
  bool sizes = true;     // -b -e -f -i
  bool check = true;     // -c
  bool types = true;     // -d
  bool blocking = true;  // -z
  // -a -G -J -m --repeats: what the harness's timed loop and report do with the times; off for a
  // binary that times and reports by itself (ag_gemm_perf).
  bool timed_loop = true;
  // -T, and nccl-tests' flags that mean nothing here (-o -r -p -N -R -C), taken so that its
  // scripts run.
  bool nccl_tests = true;
  // -o sum|prod|max|min|avg|all chooses the ops (reduce_scatter_perf, all_reduce_perf); without
  // it -o is one of the flags above that change nothing.
  bool ops = false;
};

// Parses argv into *options. Returns -1 to go on, otherwise the exit code (0 after -h).
int ParseOptions(int argc, char** argv, const FlagSet& flags, Options* options);

// "8", "1K", "32M", "1G" (also lower case, also fractional: "0.5M") in bytes; false if malformed.
bool ParseSize(const char* text, size_t* bytes);

}  // namespace xccl_perf
