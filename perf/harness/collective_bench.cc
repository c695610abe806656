#include "harness/collective_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/mix64.h"
#include "common/gpu_runtime_settings.h"
#include "harness/datatypes.h"
#include "harness/device_buffers.h"
#include "harness/launcher.h"
#include "harness/options.h"
#include "harness/rank_sync.h"
#include "harness/redops.h"
#include "harness/run_report.h"
#include "harness/table_printer.h"
#include "harness/timed_loop.h"
#include "harness/vendor_setup.h"
#include "harness/xccl_check.h"

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

// A row's size in bytes as nccl-tests prints it: the larger of the send and receive buffers.
size_t RowBytes(const RowShape& shape, size_t word) {
  return std::max(shape.send_count, shape.recv_count) * word;
}

// 52 bits of a hash of `bytes` bytes, exactly a double, for comparing results across ranks
// through RankSync's reductions.
double Digest(const char* data, size_t bytes) {
  uint64_t h = bytes;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t word = 0;
    memcpy(&word, data + i, std::min<size_t>(8, bytes - i));
    h = xccl::SplitMix64(h ^ word);
  }
  return static_cast<double>(h >> 12);
}

class CollectiveRank {
 public:
  CollectiveRank(const RankContext& context, const xcclUniqueId& id, const Collective& collective)
      : ctx_(context),
        options_(*context.options),
        sync_(*context.sync),
        id_(id),
        collective_(collective),
        program_(std::string(collective.Name()) + "_perf") {}

  ~CollectiveRank() {
    vendor_.reset();  // before the buffers it may still be using
    if (comm_ != nullptr) xcclCommAbort(comm_);
    // The communicator's end released its window and registrations.
    if (from_mem_alloc_) {
      (void)xcclMemFree(recv_);
      (void)xcclMemFree(send_);
      recv_ = nullptr;
      send_ = nullptr;
    }
    if (buffers_) {
      if (send_ != nullptr) buffers_->Release(send_);
      if (recv_ != nullptr) buffers_->Release(recv_);
    }
  }

  bool Run() {
    if (!Setup()) return false;
    // nccl-tests' order: every op of a type, then the next type; a sweep of sizes each.
    const std::vector<xcclRedOp_t> ops =
        collective_.Reduces() ? options_.ops : std::vector<xcclRedOp_t>{xcclSum};
    for (xcclDataType_t type : options_.types) {
      for (xcclRedOp_t op : ops) {
        if (!RunSweep(type, op)) return false;
      }
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

    // No row is larger than max_bytes, and in place both pointers lie in the receive buffer; the
    // send buffer is the largest row's, counted in bytes.
    recv_capacity_ = options_.max_bytes;
    send_capacity_ = collective_.Shape(options_.max_bytes, 1, ctx_.nranks).send_count;
    // One at a time: after a refused receive buffer, allocating (and filling) the send buffer
    // would only hold the failure up.
    if (options_.local_register > 0) {
      // Both from xcclMemAlloc, which peer processes map: the zero-copy all_gather writes the
      // receive buffer, the reductions' read engine reads both.
      from_mem_alloc_ = true;
      XCCL_PERF_CHECK(xcclMemAlloc(&recv_, recv_capacity_), ctx_.rank, nullptr, return Fail());
      XCCL_PERF_CHECK(xcclMemAlloc(&send_, send_capacity_), ctx_.rank, nullptr, return Fail());
      if (!buffers_->ReserveHostCopies(std::max(recv_capacity_, send_capacity_))) return Fail();
    } else {
      recv_ = buffers_->Allocate(recv_capacity_);
      if (recv_ == nullptr) return Fail();
      send_ = buffers_->Allocate(send_capacity_);
    }
    if (recv_ == nullptr || send_ == nullptr) return Fail();
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
        report_ = std::make_unique<RunReport>(program_.c_str(), options_, sync_);
        report_->header().String("op", collective_.Name()).String("engine", collective_.Engine());
        if (collective_.Reduces()) {
          std::vector<std::string> names;
          for (xcclRedOp_t op : options_.ops) names.push_back(OpName(op));
          report_->header().Strings("redops", names);
        }
        report_->header().String("buffers", BuffersName());
        report_->header().Object("vendor", vendor_json_);
      }
    }
    return true;
  }

  const char* BuffersName() const {
    return options_.local_register == 2   ? "windows (xcclMemAlloc, xcclCommWindowRegister)"
           : options_.local_register == 1 ? "xcclMemAlloc, registered (xcclCommRegister)"
                                          : "plain";
  }

  // -R 1: both buffers from xcclMemAlloc and registered locally (PyTorch's NCCL memory pool does
  // this); -R 2: both from xcclMemAlloc, each a window (collective).
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
      XCCL_PERF_CHECK(
          xcclCommWindowRegister(comm_, send_, send_capacity_, &window, XCCL_WIN_DEFAULT),
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
    *line = "# vendor: " + library->path() + ", version " + library->VersionText() + " (" +
            collective_.VendorCallName() + " on the same buffers, timed after each xccl row)";
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

  // The arguments of a call of one row and placement on this rank's buffers.
  CallArgs Args(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place) {
    const size_t word = TypeSize(type);
    char* base = static_cast<char*>(recv_);
    CallArgs args{};
    args.send = in_place ? base + ctx_.rank * shape.send_in_place * word : send_;
    args.recv = in_place ? base + ctx_.rank * shape.recv_in_place * word : recv_;
    args.count = shape.count;
    args.type = type;
    args.op = op;
    args.root = options_.root;
    args.comm = comm_;
    args.stream = buffers_->Stream();
    args.rank = ctx_.rank;
    return args;
  }

  bool Call(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place) {
    return collective_.Call(Args(type, op, shape, in_place));
  }

  // The same call through the vendor library, on the same buffers and stream.
  bool VendorCall(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place) {
    return collective_.CallVendor(*vendor_, Args(type, op, shape, in_place));
  }

  const char* RedopLabel(xcclRedOp_t op) const {
    return collective_.Reduces() ? OpName(op) : "none";
  }

  bool RunSweep(xcclDataType_t type, xcclRedOp_t op) {
    const size_t word = TypeSize(type);
    // Where the vendor library cannot run this type and op, its columns show "-".
    bool vendor = vendor_ != nullptr;
    if (vendor) {
      std::string cannot = collective_.VendorCannot(vendor_->library(), type, op);
      if (!cannot.empty() && ctx_.rank == 0) {
        printf("# vendor: not run for %s %s: %s\n", TypeName(type), OpName(op), cannot.c_str());
      }
      vendor = cannot.empty();
    }
    // Warm up at both ends of the sweep, as nccl-tests does, so that neither the first row nor
    // the largest pays for first-use setup inside the library.
    for (size_t bytes : {options_.max_bytes, options_.min_bytes}) {
      const RowShape shape = collective_.Shape(bytes, word, ctx_.nranks);
      for (int i = 0; i < options_.warmup_iters; ++i) {
        if (!Call(type, op, shape, false)) return Fail();
        if (vendor && !VendorCall(type, op, shape, false)) return Fail();
      }
    }
    if (!buffers_->Synchronize()) return Fail();
    for (size_t size = options_.min_bytes; size <= options_.max_bytes;
         size = options_.NextSize(size)) {
      const RowShape shape = collective_.Shape(size, word, ctx_.nranks);
      std::string row = FormatRowStart(RowBytes(shape, word), shape.count, TypeName(type),
                                       RedopLabel(op), collective_.Rooted() ? options_.root : -1);
      Placement results[2];
      for (bool in_place : {false, true}) {
        Placement& result = results[in_place];
        if (!Measure(type, op, shape, in_place, &result)) return false;
        row += FormatResult(result.seconds * 1.0e6, result.algbw, result.busbw, options_.check > 0,
                            static_cast<int64_t>(result.wrong));
      }
      // The vendor runs after xccl's whole row, so that each side's placements run back to back
      // as they would alone, and a noisy moment of the machine hits both sides of one size.
      for (bool in_place : {false, true}) {
        if (vendor && !MeasureVendor(type, op, shape, in_place, &results[in_place])) return false;
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
        for (bool in_place : {false, true}) {
          Record(type, op, shape, in_place, results[in_place]);
        }
      }
      if (options_.NextSize(size) <= size) break;  // the step would overflow
    }
    return true;
  }

  // algbw and busbw (GB/s) of a row of shape's size in `seconds`, as nccl-tests counts them.
  void Bandwidths(const RowShape& shape, size_t word, double seconds, double* algbw,
                  double* busbw) const {
    *algbw = seconds > 0 ? static_cast<double>(RowBytes(shape, word)) / 1.0e9 / seconds : 0;
    *busbw = *algbw * collective_.BusFactor(ctx_.nranks);
  }

  // Times one placement and checks it.
  bool Measure(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place,
               Placement* result) {
    // One untimed call, then a barrier, so that the clock starts with every rank ready.
    if (!Call(type, op, shape, in_place) || !buffers_->Synchronize()) return Fail();
    TimedLoop loop(*buffers_, sync_, options_,
                   [this, type, op, shape, in_place] { return Call(type, op, shape, in_place); });
    if (!loop.Prepare()) return Fail();
    if (!sync_.Barrier()) return false;
    double seconds = 0;
    if (!loop.Run(&seconds) || !AsyncOk()) return Fail();
    if (!sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &seconds)) return false;

    double algbw = 0, busbw = 0;
    Bandwidths(shape, TypeSize(type), seconds, &algbw, &busbw);

    double wrong = 0;
    for (int c = 0; c < options_.check; ++c) {
      double local = 0;
      if (!CheckedCall(type, op, shape, in_place, &local)) return false;
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
  bool MeasureVendor(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place,
                     Placement* result) {
    if (!VendorCall(type, op, shape, in_place) || !buffers_->Synchronize()) return Fail();
    TimedLoop loop(*buffers_, sync_, options_, [this, type, op, shape, in_place] {
      return VendorCall(type, op, shape, in_place);
    });
    if (!loop.Prepare()) return Fail();
    if (!sync_.Barrier()) return false;
    double seconds = 0;
    if (!loop.Run(&seconds)) return Fail();
    if (!sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &seconds)) return false;
    result->vendor_seconds = seconds;
    Bandwidths(shape, TypeSize(type), seconds, &result->vendor_algbw, &result->vendor_busbw);
    return true;
  }

  // Adds one placement of a row to the -J report (rank 0 only).
  void Record(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place,
              const Placement& result) {
    if (!report_) return;
    JsonObject row;
    row.String("op", collective_.Name())
        .String("engine", collective_.Engine())
        .Int("nranks", ctx_.nranks)
        .Int("size", static_cast<int64_t>(RowBytes(shape, TypeSize(type))))
        .Int("count", static_cast<int64_t>(shape.count))
        .String("type", TypeName(type));
    if (collective_.Reduces()) row.String("redop", OpName(op));
    if (collective_.Rooted()) row.Int("root", options_.root);
    row.String("placement", PlacementName(in_place))
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

  // One call on fresh data: the collective writes the inputs and poisons what the call must
  // write, the call runs, and the collective counts the wrong elements.
  bool CheckedCall(xcclDataType_t type, xcclRedOp_t op, const RowShape& shape, bool in_place,
                   double* wrong) {
    const uint64_t seed = ++seed_;  // every rank draws the same sequence of seeds
    const size_t word = TypeSize(type);
    const size_t rank = static_cast<size_t>(ctx_.rank);
    const bool direct = buffers_->HostAccessible();
    char* recv_base = direct ? static_cast<char*>(recv_) : recv_host_.data();
    char* send_base = direct ? static_cast<char*>(send_) : send_host_.data();
    // What the call touches: in place, the receive buffer up to the end of the farther pointer's
    // data; out of place, each buffer's own count.
    const size_t recv_bytes = in_place ? std::max(rank * shape.send_in_place + shape.send_count,
                                                  rank * shape.recv_in_place + shape.recv_count) *
                                             word
                                       : shape.recv_count * word;
    const size_t send_bytes = in_place ? 0 : shape.send_count * word;
    CheckArgs args{in_place ? recv_base + rank * shape.send_in_place * word : send_base,
                   in_place ? recv_base + rank * shape.recv_in_place * word : recv_base,
                   shape,
                   type,
                   op,
                   options_.root,
                   ctx_.rank,
                   ctx_.nranks,
                   seed,
                   in_place};

    collective_.Prepare(args);
    if (!direct && (!buffers_->CopyToDevice(recv_, recv_base, recv_bytes) ||
                    (send_bytes > 0 && !buffers_->CopyToDevice(send_, send_base, send_bytes)))) {
      return Fail();
    }
    // No peer may write into this rank's receive buffer before the poison is in place.
    if (!sync_.Barrier()) return false;
    if (!Call(type, op, shape, in_place) || !buffers_->Synchronize() || !AsyncOk()) return Fail();
    if (!direct && (!buffers_->CopyToHost(recv_base, recv_, recv_bytes) ||
                    (send_bytes > 0 && !buffers_->CopyToHost(send_base, send_, send_bytes)))) {
      return Fail();
    }
    *wrong = static_cast<double>(collective_.CountWrong(args));
    return !collective_.SameResultEverywhere() || SameEverywhere(args, type, op, in_place);
  }

  // Whether every rank received the same bits (include/xccl.h promises it for all_reduce, and
  // the element check alone allows a rounding either way). A difference fails the run: it is
  // counted in the footer and named on stderr.
  bool SameEverywhere(const CheckArgs& args, xcclDataType_t type, xcclRedOp_t op, bool in_place) {
    const double digest = Digest(args.recv, args.shape.recv_count * TypeSize(type));
    double low = 0, high = 0;
    if (!sync_.AllReduce(ctx_.rank, digest, Reduce::kMin, &low) ||
        !sync_.AllReduce(ctx_.rank, digest, Reduce::kMax, &high)) {
      return false;
    }
    if (low != high && ctx_.rank == 0) {
      ++errors_;
      fprintf(stderr, "%s: %s %s count %zu %s: the ranks received different bits\n",
              program_.c_str(), TypeName(type), OpName(op), args.shape.count,
              PlacementName(in_place));
    }
    return true;
  }

  const RankContext& ctx_;
  const Options& options_;
  RankSync& sync_;
  const xcclUniqueId& id_;
  const Collective& collective_;
  const std::string program_;  // "all_gather_perf"
  std::unique_ptr<DeviceBuffers> buffers_;
  xcclComm_t comm_ = nullptr;
  std::unique_ptr<VendorComm> vendor_;  // set only where the vendor runs
  std::string vendor_label_;            // "libnccl.so.2 2.28.3" for the JSON rows
  JsonObject vendor_json_;              // the header's "vendor" object
  std::unique_ptr<RunReport> report_;   // rank 0 with -J only
  void* send_ = nullptr;
  void* recv_ = nullptr;
  bool from_mem_alloc_ = false;  // -R 1, 2: both buffers xcclMemAlloc memory, freed after the comm
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

int CollectiveBenchMain(int argc, char** argv, const Collective& collective) {
  setlinebuf(stdout);                      // progress shows row by row, also through a pipe
  xccl_test::RequestGpuRuntimeSettings();  // before the first runtime call
  Options options;
  FlagSet flags;
  flags.ops = collective.Reduces();
  int code = ParseOptions(argc, argv, flags, &options);
  if (code >= 0) return code;
  if (collective.Rooted() && options.root >= options.TotalRanks()) {
    fprintf(stderr, "%s_perf: -r %d names no rank: the run has %d ranks\n", collective.Name(),
            options.root, options.TotalRanks());
    return 2;
  }
  PrintRunHeader(options);

  // Before fork: the children inherit the id, and its rendezvous root stays in this process.
  xcclUniqueId id;
  if (!XcclOk(xcclGetUniqueId(&id), "xcclGetUniqueId(&id)", 0, nullptr)) return 1;
  std::unique_ptr<RankSync> sync = RankSync::Create(options.TotalRanks());
  if (!sync) return 1;
  return LaunchRanks(options, sync.get(), [&id, &collective](const RankContext& context) {
    CollectiveRank rank(context, id, collective);
    return rank.Run();
  });
}

}  // namespace xccl_perf
