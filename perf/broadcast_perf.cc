// broadcast_perf: nccl-tests' broadcast_perf for xccl (harness/collective_bench.h), -r picking
// the root. Every rank receives the root's `count` elements, checked element by element against
// the pattern only the root filled in (harness/data_check.h); in place the one buffer is the
// root's input and every other rank's output.
#include <string>

#include "harness/collective_bench.h"
#include "harness/data_check.h"
#include "harness/datatypes.h"
#include "harness/xccl_check.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

class Broadcast final : public Collective {
 public:
  const char* Name() const override { return "broadcast"; }
  bool Reduces() const override { return false; }
  bool Rooted() const override { return true; }

  RowShape Shape(size_t bytes, size_t word, int) const override {
    return SameCountInAndOut(bytes, word);
  }
  // BroadcastGetBw (same file): busbw = algbw, every byte leaves the root once.
  double BusFactor(int) const override { return 1.0; }

  bool Call(const CallArgs& a) const override {
    XCCL_PERF_CHECK(xcclBroadcast(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream),
                    a.rank, a.comm, return false);
    return true;
  }
  const char* VendorCallName() const override { return "ncclBroadcast"; }
  bool CallVendor(VendorComm& vendor, const CallArgs& a) const override {
    return vendor.Broadcast(a.send, a.recv, a.count * TypeSize(a.type), a.root, a.stream);
  }
  std::string VendorCannot(const VendorLibrary&, xcclDataType_t, xcclRedOp_t) const override {
    return "";  // bytes, whatever the type
  }

  // The root's input under its rank's pattern; every other rank's output poisoned. Out of place a
  // non-root's send buffer holds its own pattern, which the call must leave alone.
  void Prepare(const CheckArgs& a) const override {
    const size_t n = a.shape.count;
    if (a.in_place) {
      if (a.rank == a.root)
        FillExpected(a.recv, a.type, n, a.root, a.seed);
      else
        FillPoison(a.recv, a.type, n, a.root, a.seed);
      return;
    }
    FillExpected(a.send, a.type, n, a.rank, a.seed);
    FillPoison(a.recv, a.type, n, a.root, a.seed);
  }
  size_t CountWrong(const CheckArgs& a) const override {
    const size_t n = a.shape.count;
    size_t wrong = xccl_perf::CountWrong(a.recv, a.type, n, a.root, a.seed);
    if (!a.in_place) wrong += xccl_perf::CountWrong(a.send, a.type, n, a.rank, a.seed);
    return wrong;
  }
};

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  return xccl_perf::CollectiveBenchMain(argc, argv, xccl_perf::Broadcast());
}
