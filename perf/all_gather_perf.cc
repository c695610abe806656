// all_gather_perf: nccl-tests' all_gather_perf for xccl. Sizes are the total gathered bytes;
// every rank times -n calls out of place and in place, then checks a fresh call element by
// element, and rank 0 prints the row.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness/data_check.h"
#include "harness/datatypes.h"
#include "harness/device_buffers.h"
#include "harness/launcher.h"
#include "harness/options.h"
#include "harness/rank_sync.h"
#include "harness/table_printer.h"
#include "harness/xccl_check.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

class AllGatherRank {
 public:
  AllGatherRank(const RankContext& context, const xcclUniqueId& id)
      : ctx_(context), options_(*context.options), sync_(*context.sync), id_(id) {}

  ~AllGatherRank() {
    if (comm_ != nullptr) xcclCommAbort(comm_);
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
    XCCL_PERF_CHECK(xcclCommDestroy(comm_), ctx_.rank, comm_, return Fail());
    comm_ = nullptr;
    return errors == 0;
  }

 private:
  // A failure mid-run: stop every other rank from waiting for this one.
  bool Fail() {
    sync_.Abort();
    if (comm_ != nullptr) xcclCommAbort(comm_);
    comm_ = nullptr;
    return false;
  }

  bool Setup() {
    buffers_ = DeviceBuffers::Create(ctx_.rank);
    if (!buffers_) return Fail();
    XCCL_PERF_CHECK(xcclCommInitRank(&comm_, ctx_.nranks, id_, ctx_.rank), ctx_.rank, nullptr,
                    return Fail());
    RankInfo& info = sync_.Info(ctx_.rank);
    info.pid = static_cast<int32_t>(getpid());
    info.device = buffers_->Device();
    snprintf(info.host, sizeof(info.host), "%s", ShortHostName().c_str());
    snprintf(info.describe, sizeof(info.describe), "%s", buffers_->Describe().c_str());

    // The largest row gathers at most max_bytes, and each rank contributes an nranks-th of it.
    recv_capacity_ = options_.max_bytes;
    send_capacity_ = options_.max_bytes / ctx_.nranks;
    recv_ = buffers_->Allocate(recv_capacity_);
    send_ = buffers_->Allocate(send_capacity_);
    if (recv_ == nullptr || send_ == nullptr) return Fail();
    if (!buffers_->HostAccessible()) {
      recv_host_.resize(recv_capacity_);
      send_host_.resize(send_capacity_);
    }

    if (!sync_.Barrier()) return false;
    if (ctx_.rank == 0) {
      PrintDevices(sync_);
      PrintTableHeader();
    }
    return true;
  }

  bool AllGather(xcclDataType_t type, size_t sendcount, bool in_place) {
    size_t send_bytes = sendcount * TypeSize(type);
    char* recv = static_cast<char*>(recv_);
    const void* send = in_place ? recv + ctx_.rank * send_bytes : send_;
    XCCL_PERF_CHECK(xcclAllGather(send, recv, sendcount, type, comm_, buffers_->Stream()),
                    ctx_.rank, comm_, return false);
    return true;
  }

  bool RunType(xcclDataType_t type) {
    size_t word = TypeSize(type);
    // Warm up at both ends of the sweep, as nccl-tests does, so that neither the first row nor
    // the largest pays for first-use setup inside the library.
    for (size_t bytes : {options_.max_bytes, options_.min_bytes}) {
      for (int i = 0; i < options_.warmup_iters; ++i) {
        if (!AllGather(type, bytes / word / ctx_.nranks, false)) return Fail();
      }
    }
    if (!buffers_->Synchronize()) return Fail();
    for (size_t size = options_.min_bytes; size <= options_.max_bytes;
         size = options_.NextSize(size)) {
      size_t sendcount = size / word / ctx_.nranks;
      std::string row =
          FormatRowStart(sendcount * ctx_.nranks * word, sendcount, TypeName(type), "none", -1);
      for (bool in_place : {false, true}) {
        std::string cell;
        if (!Measure(type, sendcount, in_place, &cell)) return false;
        row += cell;
      }
      if (ctx_.rank == 0) printf("%s\n", row.c_str());
      if (options_.NextSize(size) <= size) break;  // the step would overflow
    }
    return true;
  }

  // Times one placement and checks it; fills *cell with its four columns.
  bool Measure(xcclDataType_t type, size_t sendcount, bool in_place, std::string* cell) {
    // One untimed call, then a barrier, so that the clock starts with every rank ready.
    if (!AllGather(type, sendcount, in_place) || !buffers_->Synchronize()) return Fail();
    if (!sync_.Barrier()) return false;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.iters; ++i) {
      if (!AllGather(type, sendcount, in_place)) return Fail();
      if (options_.blocking) {
        if (!buffers_->Synchronize()) return Fail();
        if (!sync_.Barrier()) return false;
      }
    }
    if (!buffers_->Synchronize()) return Fail();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        options_.iters;
    if (!sync_.AllReduce(ctx_.rank, seconds, ToReduce(options_.average), &seconds)) return false;

    double bytes = static_cast<double>(sendcount) * TypeSize(type) * ctx_.nranks;
    double algbw = seconds > 0 ? bytes / 1.0e9 / seconds : 0;
    double busbw = algbw * (ctx_.nranks - 1) / ctx_.nranks;

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
    *cell = FormatResult(seconds * 1.0e6, algbw, busbw, options_.check > 0,
                         static_cast<int64_t>(wrong));
    return true;
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
    if (!AllGather(type, sendcount, in_place) || !buffers_->Synchronize()) return Fail();
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
  void* send_ = nullptr;
  void* recv_ = nullptr;
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
  setlinebuf(stdout);  // progress shows row by row, also through a pipe
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
