// all_gather_perf: nccl-tests' all_gather_perf for xccl. Sizes are the total gathered bytes;
// every rank times -n calls out of place and in place, then checks a fresh call element by
// element, and rank 0 prints the row (harness/collective_bench.h). With --compare vendor the
// vendor library's all-gather is timed right after each row on the same buffers, and its columns
// follow xccl's.
#include <string>

#include "harness/collective_bench.h"
#include "harness/data_check.h"
#include "harness/datatypes.h"
#include "harness/run_report.h"
#include "harness/xccl_check.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

class AllGather final : public Collective {
 public:
  const char* Name() const override { return "all_gather"; }
  bool Reduces() const override { return false; }
  std::string Engine() const override { return AllGatherEngine(); }

  // nccl-tests' src/all_gather.cu up to 51af557 (2022): count = sendcount = size / word / nranks,
  // rounded down. Later versions trim it further (4 elements, since 29f4114 16 bytes); these
  // binaries keep the plain division.
  RowShape Shape(size_t bytes, size_t word, int nranks) const override {
    RowShape shape;
    shape.count = bytes / word / nranks;
    shape.send_count = shape.count;
    shape.recv_count = shape.count * nranks;
    shape.send_in_place = shape.count;
    return shape;
  }
  double BusFactor(int nranks) const override { return static_cast<double>(nranks - 1) / nranks; }

  bool Call(const CallArgs& a) const override {
    XCCL_PERF_CHECK(xcclAllGather(a.send, a.recv, a.count, a.type, a.comm, a.stream), a.rank,
                    a.comm, return false);
    return true;
  }
  const char* VendorCallName() const override { return "ncclAllGather"; }
  bool CallVendor(VendorComm& vendor, const CallArgs& a) const override {
    return vendor.AllGather(a.send, a.recv, a.count * TypeSize(a.type), a.stream);
  }
  // Its data travel as bytes, so every type runs.
  std::string VendorCannot(const VendorLibrary&, xcclDataType_t, xcclRedOp_t) const override {
    return "";
  }

  // Every receive block poisoned, this rank's block written where the call reads it (in place,
  // its own receive block).
  void Prepare(const CheckArgs& a) const override {
    const size_t block = a.shape.count * TypeSize(a.type);
    for (int r = 0; r < a.nranks; ++r) {
      FillPoison(a.recv + r * block, a.type, a.shape.count, r, a.seed);
    }
    FillExpected(a.send, a.type, a.shape.count, a.rank, a.seed);
  }
  // Every element of every block, and, out of place, that the send block is intact.
  size_t CountWrong(const CheckArgs& a) const override {
    const size_t block = a.shape.count * TypeSize(a.type);
    size_t wrong = 0;
    for (int r = 0; r < a.nranks; ++r) {
      wrong += xccl_perf::CountWrong(a.recv + r * block, a.type, a.shape.count, r, a.seed);
    }
    if (!a.in_place) wrong += xccl_perf::CountWrong(a.send, a.type, a.shape.count, a.rank, a.seed);
    return wrong;
  }
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  return xccl_perf::CollectiveBenchMain(argc, argv, xccl_perf::AllGather());
}
