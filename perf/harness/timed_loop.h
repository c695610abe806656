// The timed part of a measurement, shared by every benchmark and by the vendor comparison: -n
// plain launches of a call between the device's timer marks, or (-G N, as nccl-tests does) the
// -n calls captured once into a graph and N launches of that graph. Either way the result is
// the time of one call.
#pragma once

#include <functional>

#include "harness/device_buffers.h"
#include "harness/options.h"
#include "harness/rank_sync.h"

namespace xccl_perf {

class TimedLoop {
 public:
  // `call` issues one collective on device.Stream() and returns false (having said why) if it
  // could not. With -z, Run synchronises and meets the other ranks in sync after every call, so
  // every rank must run the loop.
  TimedLoop(DeviceBuffers& device, RankSync& sync, const Options& options,
            std::function<bool()> call);
  ~TimedLoop();
  TimedLoop(const TimedLoop&) = delete;
  TimedLoop& operator=(const TimedLoop&) = delete;

  // With -G, captures the -n calls into the device's graph (nothing runs); otherwise nothing.
  // Done before the ranks meet to start, so that capture time never overlaps a peer's timing.
  bool Prepare();

  // Times the calls (--repeats times, the median kept); *seconds gets the time per call. False
  // on any failure (the caller aborts the run).
  bool Run(double* seconds);

  // For a rank outside the communicator being timed (barrier_perf's rows of the first k
  // ranks): meets the members at every point where Run meets the other ranks (between repeats,
  // and after every call with -z), so that the meetings of all ranks stay paired.
  bool Attend();

 private:
  bool RunOnce(double* seconds);
  DeviceBuffers& device_;
  RankSync& sync_;
  const Options& options_;
  std::function<bool()> call_;
  bool captured_ = false;
};

}  // namespace xccl_perf
