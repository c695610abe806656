// all_gather_perf: nccl-tests' all_gather_perf for xccl. Sizes are the total gathered bytes;
// every rank times -n calls out of place and in place, then checks a fresh call element by
// element, and rank 0 prints the row. With --compare vendor the vendor library's all-gather is
// timed right after each row on the same buffers, and its columns follow xccl's.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu_runtime_settings.h"
#include "harness/data_check.h"
#include "harness/datatypes.h"
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

const char* PlacementName(bool in_place) { return in_place ? "in-place" : "out-of-place"; }

// One placement of one row, as every rank holds it after the reductions.
struct Placement {
  double seconds = 0;
  double algbw = 0;
  double busbw = 0;
  double wrong = 0;
  double vendor_seconds = -1;  // negative: the vendor did not run
  double vendor_algbw = 0;
  double vendor_busbw = 0;
};

// xccl busbw / vendor busbw: above 1, xccl is faster. NaN (printed "-", JSON null) for rows of
// zero elements, where neither side moves a byte.
double Ratio(const Placement& p) {
  return p.vendor_busbw > 0 ? p.busbw / p.vendor_busbw : std::nan("");
}

// algbw and busbw (GB/s) of gathering `bytes` in `seconds` over nranks, as nccl-tests counts.
void Bandwidths(double bytes, double seconds, int nranks, double* algbw, double* busbw) {
  *algbw = seconds > 0 ? bytes / 1.0e9 / seconds : 0;
  *busbw = *algbw * (nranks - 1) / nranks;
}

class AllGatherRank {
 public:
  AllGatherRank(const RankContext& context, const xcclUniqueId& id)
      : ctx_(context), options_(*context.options), sync_(*context.sync), id_(id) {}

  ~AllGatherRank() {
    vendor_.reset();  // before the buffers it may still be using
    if (comm_ != nullptr) xcclCommAbort(comm_);
    // The communicator's end released its window and registrations.
    if (recv_from_mem_alloc_) {
      (void)xcclMemFree(recv_);
      recv_ = nullptr;
    }
    if (buffers_) {
      if (send_ != nullptr) buffers_->Release(send_);
      if (recv_ != nullptr) buffers_->Release(recv_);
    }
  }

  bool Run() {
    if (!Setup()) return false;
    for (xcclDataType_t type : options_.types) {
      if (!RunType(type)) return false;
    }
    double errors = 0;
    if (!sync_.AllReduce(ctx_.rank, static_cast<double>(errors_), Reduce::kSum, &errors)) {
      return false;
    }
    if (ctx_.rank == 0)
      PrintFooter(static_cast<int64_t>(errors), bw_count_ ? bw_sum_ / bw_count_ : 0);
    vendor_.reset();
    XCCL_PERF_CHECK(xcclCommDestroy(comm_), ctx_.rank, comm_, return Fail());
    comm_ = nullptr;
    if (report_ && !report_->Write()) return false;
    return errors == 0;
  }

 private:
  // A failure mid-run: stop every other rank from waiting for this one.
  bool Fail() { return AbandonRank(sync_, &comm_); }

  bool Setup() {
    buffers_ = DeviceBuffers::Create(ctx_.rank);
    if (!buffers_) return Fail();
    XCCL_PERF_CHECK(xcclCommInitRank(&comm_, ctx_.nranks, id_, ctx_.rank), ctx_.rank, nullptr,
                    return Fail());
    sync_.Info(ctx_.rank) = DescribeRank(*buffers_);

    // The largest row gathers at most max_bytes, and each rank contributes an nranks-th of it.
    recv_capacity_ = options_.max_bytes;
    send_capacity_ = options_.max_bytes / ctx_.nranks;
    // One at a time: after a refused receive buffer, allocating (and filling) the send buffer
    // would only hold the failure up.
    if (options_.local_register > 0) {
      XCCL_PERF_CHECK(xcclMemAlloc(&recv_, recv_capacity_), ctx_.rank, nullptr, return Fail());
      recv_from_mem_alloc_ = true;
      if (!buffers_->ReserveHostCopies(recv_capacity_)) return Fail();
    } else {
      recv_ = buffers_->Allocate(recv_capacity_);
    }
    if (recv_ == nullptr) return Fail();
    send_ = buffers_->Allocate(send_capacity_);
    if (send_ == nullptr) return Fail();
    if (!RegisterBuffers()) return Fail();
    if (!buffers_->HostAccessible()) {
      recv_host_.resize(recv_capacity_);
      send_host_.resize(send_capacity_);
    }

    if (!sync_.Barrier()) return false;
    std::string vendor_line;
    vendor_json_.Bool("requested", options_.compare_vendor);
    if (options_.compare_vendor && !SetupVendor(&vendor_line)) return Fail();
    if (ctx_.rank == 0) {
      PrintDevices(sync_);
      printf("# buffers: %s\n", BuffersName());
      if (options_.compare_vendor) printf("%s\n", vendor_line.c_str());
      PrintTableHeader(options_.compare_vendor);
      if (!options_.json_path.empty()) {
        report_ = std::make_unique<RunReport>("all_gather_perf", options_, sync_);
        report_->header().String("op", "all_gather").String("engine", AllGatherEngine());
        report_->header().String("buffers", BuffersName());
        report_->header().Object("vendor", vendor_json_);
      }
    }
    return true;
  }

  const char* BuffersName() const {
    return options_.local_register == 2   ? "window (xcclMemAlloc, xcclCommWindowRegister)"
           : options_.local_register == 1 ? "xcclMemAlloc, registered (xcclCommRegister)"
                                          : "plain";
  }

  // -R 1: the receive buffer from xcclMemAlloc and both registered locally (PyTorch's NCCL memory
  // pool does this); -R 2: the receive buffer from xcclMemAlloc, a window (collective).
  bool RegisterBuffers() {
    if (options_.local_register == 1) {
      void* handle = nullptr;
      XCCL_PERF_CHECK(xcclCommRegister(comm_, recv_, recv_capacity_, &handle), ctx_.rank, comm_,
                      return false);
      XCCL_PERF_CHECK(xcclCommRegister(comm_, send_, send_capacity_, &handle), ctx_.rank, comm_,
                      return false);
    }
    if (options_.local_register == 2) {
      xcclWindow_t window = nullptr;
      XCCL_PERF_CHECK(
          xcclCommWindowRegister(comm_, recv_, recv_capacity_, &window, XCCL_WIN_DEFAULT),
          ctx_.rank, comm_, return false);
    }
    return true;
  }

  // Joins the vendor communicator of all ranks where it can run; *line is the "# vendor" line
  // rank 0 prints either way. False only on a failure that ends the run.
  bool SetupVendor(std::string* line) {
    std::string why;
    const VendorLibrary* library = AgreeOnVendor(sync_, ctx_.rank, &why);
    if (library != nullptr) why = VendorBlocked(sync_, ctx_.nranks);
    if (library != nullptr) {
      vendor_json_.String("library", library->path()).String("version", library->VersionText());
      vendor_label_ = library->path() + " " + library->VersionText();
    }
    vendor_json_.Bool("ran", library != nullptr && why.empty());
    if (library == nullptr || !why.empty()) {
      vendor_json_.String("reason", why);
      *line = "# vendor: not run: " + why;
      return true;
    }
    *line = "# vendor: " + library->path() + ", version " + library->VersionText() +
            " (ncclAllGather on the same buffers, timed after each xccl row)";
    return JoinVendorComm(*library, sync_, ctx_.rank, ctx_.nranks, &vendor_);
  }

  // The first failure the device side of this communicator recorded (a dead peer, a missed
  // deadline): on a GPU platform a launch returns before the work runs, so this is where a
  // problem found by the device surfaces.
  bool AsyncOk() {
    xcclResult_t async = xcclSuccess;
    XCCL_PERF_CHECK(xcclCommGetAsyncError(comm_, &async), ctx_.rank, comm_, return false);
    return XcclOk(async, "asynchronous xccl work (xcclCommGetAsyncError)", ctx_.rank, comm_);
  }

  bool AllGather(xcclDataType_t type, size_t sendcount, bool in_place) {
    size_t send_bytes = sendcount * TypeSize(type);
    char* recv = static_cast<char*>(recv_);
    const void* send = in_place ? recv + ctx_.rank * send_bytes : send_;
    XCCL_PERF_CHECK(xcclAllGather(send, recv, sendcount, type, comm_, buffers_->Stream()),
                    ctx_.rank, comm_, return false);
    return true;
  }

  // The same call through the vendor library, on the same buffers and stream.
  bool VendorAllGather(xcclDataType_t type, size_t sendcount, bool in_place) {
    size_t send_bytes = sendcount * TypeSize(type);
    char* recv = static_cast<char*>(recv_);
    const void* send = in_place ? recv + ctx_.rank * send_bytes : send_;
    return vendor_->AllGather(send, recv, send_bytes, buffers_->Stream());
  }

  bool RunType(xcclDataType_t type) {
    size_t word = TypeSize(type);
    // Warm up at both ends of the sweep, as nccl-tests does, so that neither the first row nor
    // the largest pays for first-use setup inside the library.
    for (size_t bytes : {options_.max_bytes, options_.min_bytes}) {
      for (int i = 0; i < options_.warmup_iters; ++i) {
        if (!AllGather(type, bytes / word / ctx_.nranks, false)) return Fail();
        if (vendor_ && !VendorAllGather(type, bytes / word / ctx_.nranks, false)) return Fail();
      }
    }
    if (!buffers_->Synchronize()) return Fail();
    for (size_t size = options_.min_bytes; size <= options_.max_bytes;
         size = options_.NextSize(size)) {
      size_t sendcount = size / word / ctx_.nranks;
      std::string row =
          FormatRowStart(sendcount * ctx_.nranks * word, sendcount, TypeName(type), "none", -1);
      Placement results[2];
      for (bool in_place : {false, true}) {
        Placement& result = results[in_place];
        if (!Measure(type, sendcount, in_place, &result)) return false;
        row += FormatResult(result.seconds * 1.0e6, result.algbw, result.busbw, options_.check > 0,
                            static_cast<int64_t>(result.wrong));
      }
      // The vendor runs after xccl's whole row, so that each side's placements run back to back
      // as they would alone, and a noisy moment of the machine hits both sides of one size.
      for (bool in_place : {false, true}) {
        if (vendor_ && !MeasureVendor(type, sendcount, in_place, &results[in_place])) {
          return false;
        }
        if (!options_.compare_vendor) continue;
        const Placement& result = results[in_place];
        if (result.vendor_seconds < 0) {
          row += FormatVendorMissing();
        } else {
          row +=
              FormatVendorResult(result.vendor_seconds * 1.0e6, result.vendor_busbw, Ratio(result));
        }
      }
      if (ctx_.rank == 0) {
        printf("%s\n", row.c_str());
        for (bool in_place : {false, true}) Record(type, sendcount, in_place, results[in_place]);
      }
      if (options_.NextSize(size) <= size) break;  // the step would overflow
    }
    return true;
  }

  // Times one placement and checks it.
  bool Measure(xcclDataType_t type, size_t sendcount, bool in_place, Placement* result) {
    // One untimed call, then a barrier, so that the clock starts with every rank ready.
    if (!AllGather(type, sendcount, in_place) || !buffers_->Synchronize()) return Fail();
    TimedLoop loop(*buffers_, sync_, options_, [this, type, sendcount, in_place] {
      return AllGather(type, sendcount, in_place);
    });
    if (!loop.Prepare()) return Fail();
    if (!sync_.Barrier()) return false;
    double seconds = 0;
    if (!loop.Run(&seconds) || !AsyncOk()) return Fail();
    if (!sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &seconds)) return false;

    double algbw = 0, busbw = 0;
    Bandwidths(static_cast<double>(sendcount) * TypeSize(type) * ctx_.nranks, seconds, ctx_.nranks,
               &algbw, &busbw);

    double wrong = 0;
    for (int c = 0; c < options_.check; ++c) {
      double local = 0;
      if (!CheckedCall(type, sendcount, in_place, &local)) return false;
      if (local > 0) ++errors_;
      if (!sync_.AllReduce(ctx_.rank, local, Reduce::kSum, &wrong)) return false;
      if (wrong > 0) break;
    }
    bw_sum_ += busbw;
    ++bw_count_;
    result->seconds = seconds;
    result->algbw = algbw;
    result->busbw = busbw;
    result->wrong = wrong;
    return true;
  }

  // Times one placement through the vendor library, exactly as Measure times xccl (unchecked:
  // the comparison is about time, and the vendor is the reference).
  bool MeasureVendor(xcclDataType_t type, size_t sendcount, bool in_place, Placement* result) {
    if (!VendorAllGather(type, sendcount, in_place) || !buffers_->Synchronize()) return Fail();
    TimedLoop loop(*buffers_, sync_, options_, [this, type, sendcount, in_place] {
      return VendorAllGather(type, sendcount, in_place);
    });
    if (!loop.Prepare()) return Fail();
    if (!sync_.Barrier()) return false;
    double seconds = 0;
    if (!loop.Run(&seconds)) return Fail();
    if (!sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &seconds)) return false;
    result->vendor_seconds = seconds;
    Bandwidths(static_cast<double>(sendcount) * TypeSize(type) * ctx_.nranks, seconds, ctx_.nranks,
               &result->vendor_algbw, &result->vendor_busbw);
    return true;
  }

  // Adds one placement of a row to the -J report (rank 0 only).
  void Record(xcclDataType_t type, size_t sendcount, bool in_place, const Placement& result) {
    if (!report_) return;
    JsonObject row;
    row.String("op", "all_gather")
        .String("engine", AllGatherEngine())
        .Int("nranks", ctx_.nranks)
        .Int("size", static_cast<int64_t>(sendcount * ctx_.nranks * TypeSize(type)))
        .Int("count", static_cast<int64_t>(sendcount))
        .String("type", TypeName(type))
        .String("placement", PlacementName(in_place))
        .Number("time_us", result.seconds * 1.0e6)
        .Number("algbw", result.algbw)
        .Number("busbw", result.busbw);
    if (options_.check > 0) {
      row.Int("wrong", static_cast<int64_t>(result.wrong));
    } else {
      row.Null("wrong");
    }
    if (result.vendor_seconds >= 0) {
      row.String("vendor", vendor_label_)
          .Number("vendor_time_us", result.vendor_seconds * 1.0e6)
          .Number("vendor_algbw", result.vendor_algbw)
          .Number("vendor_busbw", result.vendor_busbw)
          .Number("ratio", Ratio(result));
    }
    report_->AddRow(row);
  }

  // One call on fresh data: poison every receive block, write this rank's block, call, then
  // compare every element of every block (and, out of place, that the send block is intact).
  bool CheckedCall(xcclDataType_t type, size_t sendcount, bool in_place, double* wrong) {
    const uint64_t seed = ++seed_;  // every rank draws the same sequence of seeds
    const size_t word = TypeSize(type);
    const size_t block = sendcount * word;
    const size_t total = block * ctx_.nranks;
    const bool direct = buffers_->HostAccessible();
    char* recv = direct ? static_cast<char*>(recv_) : recv_host_.data();
    char* send = direct ? static_cast<char*>(send_) : send_host_.data();

    for (int r = 0; r < ctx_.nranks; ++r) FillPoison(recv + r * block, type, sendcount, r, seed);
    char* own = in_place ? recv + ctx_.rank * block : send;
    FillExpected(own, type, sendcount, ctx_.rank, seed);
    if (!direct && (!buffers_->CopyToDevice(recv_, recv, total) ||
                    (!in_place && !buffers_->CopyToDevice(send_, send, block)))) {
      return Fail();
    }
    // No peer may write into this rank's receive buffer before the poison is in place.
    if (!sync_.Barrier()) return false;
    if (!AllGather(type, sendcount, in_place) || !buffers_->Synchronize() || !AsyncOk()) {
      return Fail();
    }
    if (!direct && (!buffers_->CopyToHost(recv, recv_, total) ||
                    (!in_place && !buffers_->CopyToHost(send, send_, block)))) {
      return Fail();
    }
    size_t count = 0;
    for (int r = 0; r < ctx_.nranks; ++r)
      count += CountWrong(recv + r * block, type, sendcount, r, seed);
    if (!in_place) count += CountWrong(send, type, sendcount, ctx_.rank, seed);
    *wrong = static_cast<double>(count);
    return true;
  }

  const RankContext& ctx_;
  const Options& options_;
  RankSync& sync_;
  const xcclUniqueId& id_;
  std::unique_ptr<DeviceBuffers> buffers_;
  xcclComm_t comm_ = nullptr;
  std::unique_ptr<VendorComm> vendor_;  // set only where the vendor runs
  std::string vendor_label_;            // "libnccl.so.2 2.28.3" for the JSON rows
  JsonObject vendor_json_;              // the header's "vendor" object
  std::unique_ptr<RunReport> report_;   // rank 0 with -J only
  void* send_ = nullptr;
  void* recv_ = nullptr;
  bool recv_from_mem_alloc_ = false;  // -R 1, 2: xcclMemAlloc memory, freed after the comm
  size_t send_capacity_ = 0;
  size_t recv_capacity_ = 0;
  std::vector<char> send_host_;  // staging, only when the device memory is not host-visible
  std::vector<char> recv_host_;
  uint64_t seed_ = 0;
  int64_t errors_ = 0;  // placements whose check found a wrong element on this rank
  double bw_sum_ = 0;
  int bw_count_ = 0;
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  using namespace xccl_perf;
  setlinebuf(stdout);                      // progress shows row by row, also through a pipe
  xccl_test::RequestGpuRuntimeSettings();  // before the first runtime call
  Options options;
  int code = ParseOptions(argc, argv, FlagSet{}, &options);
  if (code >= 0) return code;
  PrintRunHeader(options);

  // Before fork: the children inherit the id, and its rendezvous root stays in this process.
  xcclUniqueId id;
  if (!XcclOk(xcclGetUniqueId(&id), "xcclGetUniqueId(&id)", 0, nullptr)) return 1;
  std::unique_ptr<RankSync> sync = RankSync::Create(options.TotalRanks());
  if (!sync) return 1;
  return LaunchRanks(options, sync.get(), [&id](const RankContext& context) {
    AllGatherRank rank(context, id);
    return rank.Run();
  });
}
