// barrier_perf: latency of xcclBarrier per communicator size. Rows run on the first k ranks for
// k = 2, 4, 8, ... and the whole world, each on its own communicator; ranks outside it wait.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "harness/device_buffers.h"
#include "harness/launcher.h"
#include "harness/options.h"
#include "harness/rank_sync.h"
#include "harness/table_printer.h"
#include "harness/xccl_check.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

std::vector<int> RowSizes(int nranks) {
  std::vector<int> sizes;
  for (int k = 2; k < nranks; k *= 2) sizes.push_back(k);
  sizes.push_back(nranks);
  return sizes;
}

class BarrierRank {
 public:
  BarrierRank(const RankContext& context, const std::vector<xcclUniqueId>& ids)
      : ctx_(context), options_(*context.options), sync_(*context.sync), ids_(ids) {}

  ~BarrierRank() {
    if (comm_ != nullptr) xcclCommAbort(comm_);
  }

  bool Run() {
    buffers_ = DeviceBuffers::Create(ctx_.rank);
    if (!buffers_) return Fail();
    RankInfo& info = sync_.Info(ctx_.rank);
    info.pid = static_cast<int32_t>(getpid());
    info.device = buffers_->Device();
    snprintf(info.host, sizeof(info.host), "%s", ShortHostName().c_str());
    snprintf(info.describe, sizeof(info.describe), "%s", buffers_->Describe().c_str());
    if (!sync_.Barrier()) return false;
    if (ctx_.rank == 0) {
      PrintDevices(sync_);
      PrintBarrierTableHeader();
    }
    std::vector<int> sizes = RowSizes(ctx_.nranks);
    double sum = 0;
    for (size_t row = 0; row < sizes.size(); ++row) {
      double usec = 0;
      if (!RunRow(sizes[row], ids_[row], &usec)) return false;
      sum += usec;
    }
    if (ctx_.rank == 0) PrintBarrierFooter(sum / sizes.size());
    return true;
  }

 private:
  bool Fail() {
    sync_.Abort();
    if (comm_ != nullptr) xcclCommAbort(comm_);
    comm_ = nullptr;
    return false;
  }

  bool Barrier() {
    XCCL_PERF_CHECK(xcclBarrier(comm_, buffers_->Stream()), ctx_.rank, comm_, return false);
    return true;
  }

  // Times iters barriers on a communicator of the first k ranks; *usec gets the reported time.
  bool RunRow(int k, const xcclUniqueId& id, double* usec) {
    const bool member = ctx_.rank < k;
    double seconds = 0;
    if (member) {
      XCCL_PERF_CHECK(xcclCommInitRank(&comm_, k, id, ctx_.rank), ctx_.rank, nullptr,
                      return Fail());
      for (int i = 0; i < options_.warmup_iters; ++i) {
        if (!Barrier()) return Fail();
      }
      if (!buffers_->Synchronize()) return Fail();
    }
    if (!sync_.Barrier()) return false;
    if (member) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < options_.iters; ++i) {
        if (!Barrier()) return Fail();
      }
      if (!buffers_->Synchronize()) return Fail();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                options_.iters;
    }
    double reported = 0, low = 0, high = 0;
    if (!sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &reported, k) ||
        !sync_.AllReduce(ctx_.rank, seconds, Reduce::kMin, &low, k) ||
        !sync_.AllReduce(ctx_.rank, seconds, Reduce::kMax, &high, k)) {
      return false;
    }
    if (member) {
      XCCL_PERF_CHECK(xcclCommDestroy(comm_), ctx_.rank, comm_, return Fail());
      comm_ = nullptr;
    }
    if (ctx_.rank == 0)
      printf("%s\n", FormatBarrierRow(k, reported * 1e6, low * 1e6, high * 1e6).c_str());
    *usec = reported * 1e6;
    return true;
  }

  const RankContext& ctx_;
  const Options& options_;
  RankSync& sync_;
  const std::vector<xcclUniqueId>& ids_;
  std::unique_ptr<DeviceBuffers> buffers_;
  xcclComm_t comm_ = nullptr;
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  using namespace xccl_perf;
  setlinebuf(stdout);
  Options options;
  FlagSet flags;
  flags.sizes = false;
  flags.check = false;
  flags.types = false;
  flags.blocking = false;  // a barrier between barriers would measure the harness
  int code = ParseOptions(argc, argv, flags, &options);
  if (code >= 0) return code;
  PrintBarrierRunHeader(options);

  // One id per row, all made before fork: an id serves one communicator, and the children can
  // only inherit what exists when they are forked.
  std::vector<xcclUniqueId> ids(RowSizes(options.TotalRanks()).size());
  for (xcclUniqueId& id : ids) {
    if (!XcclOk(xcclGetUniqueId(&id), "xcclGetUniqueId(&id)", 0, nullptr)) return 1;
  }
  std::unique_ptr<RankSync> sync = RankSync::Create(options.TotalRanks());
  if (!sync) return 1;
  return LaunchRanks(options, sync.get(), [&ids](const RankContext& context) {
    BarrierRank rank(context, ids);
    return rank.Run();
  });
}
