// reduce_scatter_perf: nccl-tests' reduce_scatter_perf for xccl (harness/collective_bench.h), -o
// picking the ops. Each rank's send buffer holds nranks blocks of the row's count; rank r receives
// the reduction of every rank's block r, checked element by element against a reference each
// rank computes itself (harness/reduce_check.h).
#include <string>

#include "harness/collective_bench.h"
#include "harness/datatypes.h"
#include "harness/reduce_check.h"
#include "harness/xccl_check.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

class ReduceScatter final : public Collective {
 public:
  const char* Name() const override { return "reduce_scatter"; }
  bool Reduces() const override { return true; }

  // nccl-tests' src/reduce_scatter.cu (51af557, 2022; HEAD a0b82b2 also trims the count to 16
  // bytes): recvcount = size / word / nranks is the count column, sendcount = recvcount * nranks,
  // the size column max(send, recv) bytes, which is the send buffer; in place the receive block
  // is block `rank` of the send buffer.
  RowShape Shape(size_t bytes, size_t word, int nranks) const override {
    RowShape shape;
    shape.count = bytes / word / nranks;
    shape.send_count = shape.count * nranks;
    shape.recv_count = shape.count;
    shape.recv_in_place = shape.count;
    return shape;
  }
  // ReduceScatterGetBw (same file, unchanged at HEAD): algbw = count * typesize * nranks / time,
  // busbw = algbw * (nranks - 1) / nranks.
  double BusFactor(int nranks) const override { return static_cast<double>(nranks - 1) / nranks; }

  bool Call(const CallArgs& a) const override {
    XCCL_PERF_CHECK(xcclReduceScatter(a.send, a.recv, a.count, a.type, a.op, a.comm, a.stream),
                    a.rank, a.comm, return false);
    return true;
  }
  const char* VendorCallName() const override { return "ncclReduceScatter"; }
  bool CallVendor(VendorComm& vendor, const CallArgs& a) const override {
    return vendor.ReduceScatter(a.send, a.recv, a.count, a.type, a.op, a.stream);
  }
  std::string VendorCannot(const VendorLibrary& library, xcclDataType_t type,
                           xcclRedOp_t op) const override {
    return library.CannotReduce(type, op);
  }

  // Result element i of rank r is element r * count + i of the ranks' input vectors.
  void Prepare(const CheckArgs& a) const override {
    const ReduceCheck check(a.type, a.op, a.nranks, a.seed);
    const size_t first = a.rank * a.shape.count;
    // In place the receive block is this rank's input block: the input is what it holds.
    if (!a.in_place) check.FillPoison(a.recv, first, a.shape.count);
    check.FillInput(a.send, a.rank, 0, a.shape.send_count);
  }
  // Every received element, and, out of place, that the send buffer is intact.
  size_t CountWrong(const CheckArgs& a) const override {
    const ReduceCheck check(a.type, a.op, a.nranks, a.seed);
    size_t wrong = check.CountWrong(a.recv, a.rank * a.shape.count, a.shape.count);
    if (!a.in_place) wrong += check.CountInputWrong(a.send, a.rank, 0, a.shape.send_count);
    return wrong;
  }
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  return xccl_perf::CollectiveBenchMain(argc, argv, xccl_perf::ReduceScatter());
}
