// barrier_perf: latency of xcclBarrier per communicator size. Rows run on the first k ranks for
// k = 2, 4, 8, ... and the whole world, each on its own communicator; ranks outside it wait.
// NCCL has no barrier, so --compare vendor times what stands in for one there: an allreduce of
// a single float, on a vendor communicator of the same k ranks.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu_runtime_settings.h"
#include "harness/device_buffers.h"
#include "harness/launcher.h"
#include "harness/options.h"
#include "harness/rank_sync.h"
#include "harness/run_report.h"
#include "harness/table_printer.h"
#include "harness/timed_loop.h"
#include "harness/vendor_nccl.h"
#include "harness/vendor_setup.h"
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
    vendor_.reset();
    if (comm_ != nullptr) xcclCommAbort(comm_);
    if (buffers_ && scalar_ != nullptr) buffers_->Release(scalar_);
  }

  bool Run() {
    buffers_ = DeviceBuffers::Create(ctx_.rank);
    if (!buffers_) return Fail();
    sync_.Info(ctx_.rank) = DescribeRank(*buffers_);
    if (!sync_.Barrier()) return false;
    std::string why;
    if (options_.compare_vendor) {
      library_ = AgreeOnVendor(sync_, ctx_.rank, &why);
      if (library_ != nullptr && (scalar_ = buffers_->Allocate(sizeof(float))) == nullptr) {
        return Fail();
      }
    }
    if (ctx_.rank == 0) {
      PrintDevices(sync_);
      if (options_.compare_vendor && library_ == nullptr)
        printf("# vendor: not run: %s\n", why.c_str());
      if (library_ != nullptr) {
        printf("# vendor: %s, version %s (ncclAllReduce of 1 float: NCCL has no barrier)\n",
               library_->path().c_str(), library_->VersionText().c_str());
      }
      PrintBarrierTableHeader(options_.compare_vendor);
      if (!options_.json_path.empty()) {
        report_ = std::make_unique<RunReport>("barrier_perf", options_, sync_);
        JsonObject vendor;
        vendor.Bool("requested", options_.compare_vendor);
        if (library_ != nullptr) {
          vendor.String("library", library_->path())
              .String("version", library_->VersionText())
              .String("op", "allreduce of 1 float");
        } else if (options_.compare_vendor) {
          vendor.String("reason", why);
        }
        report_->header()
            .String("op", "barrier")
            .String("engine", "default")
            .Object("vendor", vendor);
      }
    }
    std::vector<int> sizes = RowSizes(ctx_.nranks);
    double sum = 0;
    for (size_t row = 0; row < sizes.size(); ++row) {
      double usec = 0;
      if (!RunRow(sizes[row], ids_[row], &usec)) return false;
      sum += usec;
    }
    if (ctx_.rank == 0) PrintBarrierFooter(sum / sizes.size());
    if (report_ && !report_->Write()) return false;
    return true;
  }

 private:
  // A failure mid-run: stop every other rank from waiting for this one.
  bool Fail() { return AbandonRank(sync_, &comm_); }

  bool Barrier() {
    XCCL_PERF_CHECK(xcclBarrier(comm_, buffers_->Stream()), ctx_.rank, comm_, return false);
    return true;
  }

  bool AsyncOk() {
    xcclResult_t async = xcclSuccess;
    XCCL_PERF_CHECK(xcclCommGetAsyncError(comm_, &async), ctx_.rank, comm_, return false);
    return XcclOk(async, "asynchronous xccl work (xcclCommGetAsyncError)", ctx_.rank, comm_);
  }

  // Per-call time over the first k ranks: as -a asks, the fastest and the slowest.
  struct Times {
    double reported = 0;
    double low = 0;
    double high = 0;
  };

  // Times `call` on the members (the first k ranks); every rank takes part in the meetings.
  bool TimeRow(int k, const std::function<bool()>& call, Times* times) {
    const bool member = ctx_.rank < k;
    TimedLoop loop(*buffers_, sync_, options_, call);
    if (member) {
      for (int i = 0; i < options_.warmup_iters; ++i) {
        if (!call()) return Fail();
      }
      if (!buffers_->Synchronize() || !loop.Prepare()) return Fail();
    }
    if (!sync_.Barrier()) return false;
    double seconds = 0;
    if (member ? !loop.Run(&seconds) : !loop.Attend()) return Fail();
    return sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &times->reported, k) &&
           sync_.AllReduce(ctx_.rank, seconds, Reduce::kMin, &times->low, k) &&
           sync_.AllReduce(ctx_.rank, seconds, Reduce::kMax, &times->high, k);
  }

  // Times iters barriers on a communicator of the first k ranks (then, with --compare vendor,
  // the vendor's stand-in on the same ranks); *usec gets xccl's reported time.
  bool RunRow(int k, const xcclUniqueId& id, double* usec) {
    const bool member = ctx_.rank < k;
    if (member) {
      XCCL_PERF_CHECK(xcclCommInitRank(&comm_, k, id, ctx_.rank), ctx_.rank, nullptr,
                      return Fail());
    }
    Times xccl;
    auto barrier = [this] { return Barrier(); };
    if (!TimeRow(k, barrier, &xccl)) return false;
    if (member) {
      if (!AsyncOk()) return Fail();
      XCCL_PERF_CHECK(xcclCommDestroy(comm_), ctx_.rank, comm_, return Fail());
      comm_ = nullptr;
    }
    std::string row = FormatBarrierRow(k, xccl.reported * 1e6, xccl.low * 1e6, xccl.high * 1e6);

    Times vendor;
    bool vendor_ran = false;
    if (library_ != nullptr) {
      std::string blocked = VendorBlocked(sync_, k);
      if (blocked.empty()) {
        if (!JoinVendorComm(*library_, sync_, ctx_.rank, k, &vendor_)) return Fail();
        auto call = [this] {
          return vendor_->AllReduceFloatSum(scalar_, scalar_, 1, buffers_->Stream());
        };
        if (!TimeRow(k, call, &vendor)) return false;
        vendor_.reset();
        vendor_ran = true;
      } else if (ctx_.rank == 0) {
        printf("# vendor: not run: %s\n", blocked.c_str());
      }
    }
    if (options_.compare_vendor) {
      row += vendor_ran ? FormatBarrierVendor(vendor.reported * 1e6, vendor.low * 1e6,
                                              vendor.high * 1e6, vendor.reported / xccl.reported)
                        : FormatBarrierVendorMissing();
    }
    if (ctx_.rank == 0) {
      printf("%s\n", row.c_str());
      if (report_) {
        JsonObject json;
        json.String("op", "barrier")
            .String("engine", "default")
            .Int("nranks", k)
            .Number("time_us", xccl.reported * 1e6)
            .Number("min_us", xccl.low * 1e6)
            .Number("max_us", xccl.high * 1e6);
        if (vendor_ran) {
          json.String("vendor", library_->path() + " " + library_->VersionText())
              .String("vendor_op", "allreduce of 1 float")
              .Number("vendor_time_us", vendor.reported * 1e6)
              .Number("vendor_min_us", vendor.low * 1e6)
              .Number("vendor_max_us", vendor.high * 1e6)
              .Number("ratio", vendor.reported / xccl.reported);
        }
        report_->AddRow(json);
      }
    }
    *usec = xccl.reported * 1e6;
    return true;
  }

  const RankContext& ctx_;
  const Options& options_;
  RankSync& sync_;
  const std::vector<xcclUniqueId>& ids_;
  std::unique_ptr<DeviceBuffers> buffers_;
  xcclComm_t comm_ = nullptr;
  const VendorLibrary* library_ = nullptr;  // with --compare vendor, where it loaded everywhere
  std::unique_ptr<VendorComm> vendor_;      // the current row's, on its members
  void* scalar_ = nullptr;                  // the one float the vendor's allreduce sums
  std::unique_ptr<RunReport> report_;       // rank 0 with -J only
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  using namespace xccl_perf;
  setlinebuf(stdout);
  xccl_test::RequestGpuRuntimeSettings();  // before the first runtime call
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
