// all_reduce_perf: nccl-tests' all_reduce_perf for xccl (harness/collective_bench.h), -o picking
// the ops. Every rank receives the reduction of every rank's `count` elements, checked element
// by element against a reference each rank computes itself (harness/reduce_check.h), and every
// rank's result must carry the same bits (include/xccl.h).
#include <string>

#include "harness/collective_bench.h"
#include "harness/datatypes.h"
#include "harness/reduce_check.h"
#include "harness/xccl_check.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

class AllReduce final : public Collective {
 public:
  const char* Name() const override { return "all_reduce"; }
  bool Reduces() const override { return true; }

  RowShape Shape(size_t bytes, size_t word, int) const override {
    return SameCountInAndOut(bytes, word);
  }
  // AllReduceGetBw (same file): algbw = count * typesize / time, busbw = algbw * 2 (nranks - 1)
  // / nranks (its NVLS factor applies to NCCL_ALGO=NVLS runs of NCCL, which xccl has not).
  double BusFactor(int nranks) const override {
    return 2.0 * static_cast<double>(nranks - 1) / nranks;
  }

  bool Call(const CallArgs& a) const override {
    XCCL_PERF_CHECK(xcclAllReduce(a.send, a.recv, a.count, a.type, a.op, a.comm, a.stream), a.rank,
                    a.comm, return false);
    return true;
  }
  const char* VendorCallName() const override { return "ncclAllReduce"; }
  bool CallVendor(VendorComm& vendor, const CallArgs& a) const override {
    return vendor.AllReduce(a.send, a.recv, a.count, a.type, a.op, a.stream);
  }
  std::string VendorCannot(const VendorLibrary& library, xcclDataType_t type,
                           xcclRedOp_t op) const override {
    return library.CannotReduce(type, op);
  }

  void Prepare(const CheckArgs& a) const override {
    const ReduceCheck check(a.type, a.op, a.nranks, a.seed);
    // In place the receive buffer is the input.
    if (!a.in_place) check.FillPoison(a.recv, 0, a.shape.count);
    check.FillInput(a.send, a.rank, 0, a.shape.count);
  }
  // Every received element, and, out of place, that the send buffer is intact.
  size_t CountWrong(const CheckArgs& a) const override {
    const ReduceCheck check(a.type, a.op, a.nranks, a.seed);
    size_t wrong = check.CountWrong(a.recv, 0, a.shape.count);
    if (!a.in_place) wrong += check.CountInputWrong(a.send, a.rank, 0, a.shape.count);
    return wrong;
  }
  bool SameResultEverywhere() const override { return true; }
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  return xccl_perf::CollectiveBenchMain(argc, argv, xccl_perf::AllReduce());
}
