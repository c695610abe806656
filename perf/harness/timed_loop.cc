#include "harness/timed_loop.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace xccl_perf {

TimedLoop::TimedLoop(DeviceBuffers& device, RankSync& sync, const Options& options,
                     std::function<bool()> call)
    : device_(device), sync_(sync), options_(options), call_(std::move(call)) {}

TimedLoop::~TimedLoop() {
  if (captured_) device_.DropCaptured();
}

bool TimedLoop::Prepare() {
  if (options_.graph_launches <= 0) return true;
  if (!device_.BeginCapture()) return false;
  for (long i = 0; i < static_cast<long>(options_.iters) * options_.agg_iters; ++i) {
    if (!call_()) {
      device_.AbortCapture();
      return false;
    }
  }
  if (!device_.EndCapture()) return false;
  captured_ = true;
  return true;
}

bool TimedLoop::Run(double* seconds) {
  if (options_.graph_launches > 0 && !captured_) return false;  // Prepare failed or was skipped
  std::vector<double> times;
  for (int r = 0; r < options_.repeats; ++r) {
    // Ranks start every repeat together, as they started the first.
    if (r > 0 && (!device_.Synchronize() || !sync_.Barrier())) return false;
    double time = 0;
    if (!RunOnce(&time)) return false;
    times.push_back(time);
  }
  std::sort(times.begin(), times.end());
  *seconds = times[times.size() / 2];
  return true;
}

bool TimedLoop::Attend() {
  const bool per_call_meetings = options_.blocking && options_.graph_launches == 0;
  for (int r = 0; r < options_.repeats; ++r) {
    if (r > 0 && !sync_.Barrier()) return false;
    for (int i = 0; per_call_meetings && i < options_.iters; ++i) {
      if (!sync_.Barrier()) return false;
    }
  }
  return true;
}

bool TimedLoop::RunOnce(double* seconds) {
  if (!device_.StartTimer()) return false;
  long calls = static_cast<long>(options_.iters) * options_.agg_iters;
  if (captured_) {
    for (int l = 0; l < options_.graph_launches; ++l) {
      if (!device_.LaunchCaptured()) return false;
    }
    calls *= options_.graph_launches;
  } else {
    for (int i = 0; i < options_.iters; ++i) {
      for (int a = 0; a < options_.agg_iters; ++a)
        if (!call_()) return false;
      if (options_.blocking && (!device_.Synchronize() || !sync_.Barrier())) return false;
    }
  }
  double total = 0;
  if (!device_.StopTimer(&total)) return false;
  *seconds = total / static_cast<double>(calls);
  return true;
}

}  // namespace xccl_perf
