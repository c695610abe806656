// The reduction kernels against the host, bit for bit: LaunchReduce
// (collectives/reduce/reduce_kernel.h) against ReduceOnHost, all 12 types and 5 ops, 1, 3 and 8
// inputs, a poisoned output and in place; LaunchGroupedReduce (grouped_reduce_kernel.h, the
// stages across nodes) against ReduceStageOnHost, each stage alone and node by node in one pass,
// aligned and one byte off. Fresh random bits (NaN and infinities among them). A NaN may differ in
// sign and payload between the host's and the device's arithmetic, so where the host gives NaN the
// device must give a NaN. Unlike the rest of this suite it reaches into the library (an internal
// kernel against an internal host function): the arithmetic every reducing engine will share.
// Skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/reduce/grouped_reduce_kernel.h"
#include "collectives/reduce/reduce_kernel.h"
#include "collectives/reduce/reduction.h"
#include "gpu/gpu_runtime.h"

namespace xccl_test {
namespace {

struct TypeCase {
  int type;
  size_t size;
};

bool IsNan(int type, const uint8_t* p) {
  switch (type) {
    case xcclFloat32: {
      float f;
      memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case xcclFloat64: {
      double d;
      memcpy(&d, p, 8);
      return std::isnan(d);
    }
    case xcclFloat16:
      return std::isnan(xccl::Fp16::ToFloat(p[0] | p[1] << 8));
    case xcclBfloat16:
      return std::isnan(xccl::Bf16::ToFloat(p[0] | p[1] << 8));
    case xcclFloat8e4m3:
      return std::isnan(xccl::Fp8E4m3::ToFloat(p[0]));
    case xcclFloat8e5m2:
      return std::isnan(xccl::Fp8E5m2::ToFloat(p[0]));
    default:
      return false;
  }
}

const TypeCase kTypes[] = {{xcclInt8, 1},     {xcclUint8, 1},      {xcclInt32, 4},
                           {xcclUint32, 4},   {xcclInt64, 8},      {xcclUint64, 8},
                           {xcclFloat16, 2},  {xcclFloat32, 4},    {xcclFloat64, 8},
                           {xcclBfloat16, 2}, {xcclFloat8e4m3, 1}, {xcclFloat8e5m2, 1}};

// Whether an accumulator of `type` (fp32 for the 16- and 8-bit floats) at p is NaN.
bool IsAccumulatorNan(int type, const uint8_t* p) {
  if (type == xcclFloat64) return IsNan(type, p);
  if (type == xcclFloat16 || type == xcclBfloat16 || type == xcclFloat8e4m3 ||
      type == xcclFloat8e5m2)
    return IsNan(xcclFloat32, p);
  return IsNan(type, p);
}

// "" or the first of `count` elements of `size` bytes where `got` differs from `want` (a NaN in
// want: any NaN).
template <typename IsNanAt>
std::string FirstDifference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                            size_t count, size_t size, IsNanAt is_nan) {
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* w = want.data() + i * size;
    const uint8_t* g = got.data() + i * size;
    if (is_nan(w) ? !is_nan(g) : memcmp(g, w, size) != 0)
      return "element " + std::to_string(i) + " of " + std::to_string(count);
  }
  return "";
}

// A non-blocking stream on GPU 0 and fresh random bits; skips, saying why, without a GPU.
class GpuReduceKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (gpu::GetDeviceCount(&devices) != gpu::kSuccess || devices == 0)
      GTEST_SKIP() << "no GPU: the device count query failed or found none";
    ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream), gpu::kSuccess);
  }
  void TearDown() override {
    if (stream != nullptr) {
      EXPECT_EQ(gpu::StreamDestroy(stream), gpu::kSuccess);
    }
  }

  gpu::StreamHandle stream = nullptr;
  std::mt19937_64 rng{std::random_device{}()};
};

TEST_F(GpuReduceKernel, MatchesTheHostBitForBit) {
  const size_t count = 100003;  // more than one grid pass, and odd
  for (const TypeCase& t : kTypes) {
    for (int op = 0; op < 5; ++op) {
      for (int nranks : {1, 3, 8}) {
        const size_t bytes = count * t.size;
        std::vector<std::vector<uint8_t>> host(nranks, std::vector<uint8_t>(bytes));
        for (auto& in : host)
          for (uint8_t& b : in) b = static_cast<uint8_t>(rng());
        std::vector<void*> device(nranks + 1, nullptr);
        for (void*& p : device) ASSERT_EQ(gpu::Malloc(&p, bytes), gpu::kSuccess);
        for (int r = 0; r < nranks; ++r)
          ASSERT_EQ(gpu::MemcpyAsync(device[r], host[r].data(), bytes, stream), gpu::kSuccess);
        ASSERT_EQ(gpu::MemsetAsync(device[nranks], 0xA5, bytes, stream), gpu::kSuccess);
        std::vector<const void*> inputs(device.begin(), device.begin() + nranks);
        ASSERT_EQ(
            xccl::LaunchReduce(t.type, op, inputs.data(), nranks, device[nranks], count, stream),
            gpu::kSuccess);
        // In place over input 0, after the out-of-place launch read it.
        ASSERT_EQ(xccl::LaunchReduce(t.type, op, inputs.data(), nranks, device[0], count, stream),
                  gpu::kSuccess);
        std::vector<uint8_t> got(bytes), got_in_place(bytes), want(bytes);
        ASSERT_EQ(gpu::MemcpyAsync(got.data(), device[nranks], bytes, stream), gpu::kSuccess);
        ASSERT_EQ(gpu::MemcpyAsync(got_in_place.data(), device[0], bytes, stream), gpu::kSuccess);
        ASSERT_EQ(gpu::StreamSynchronize(stream), gpu::kSuccess);
        for (void* p : device) ASSERT_EQ(gpu::Free(p), gpu::kSuccess);
        std::vector<const void*> host_inputs;
        for (auto& in : host) host_inputs.push_back(in.data());
        ASSERT_EQ(xccl::ReduceOnHost(t.type, op, host_inputs.data(), nranks, want.data(), count),
                  xcclSuccess);
        for (size_t i = 0; i < count; ++i) {
          const uint8_t* w = want.data() + i * t.size;
          for (const std::vector<uint8_t>* g : {&got, &got_in_place}) {
            const uint8_t* d = g->data() + i * t.size;
            if (IsNan(t.type, w)) {
              ASSERT_TRUE(IsNan(t.type, d))
                  << "type " << t.type << " op " << op << " element " << i;
            } else {
              ASSERT_EQ(memcmp(d, w, t.size), 0)
                  << "type " << t.type << " op " << op << " ranks " << nranks << " element " << i;
            }
          }
        }
      }
    }
  }
}

// Six ranks on three nodes of 2, 1 and 3: each node's partial (kPartial), the partials together
// (kPartials), and node by node in one pass, against the host's two stages.
TEST_F(GpuReduceKernel, GroupedStagesMatchTheHostBitForBit) {
  const size_t count = 50001;
  const int ends[] = {2, 3, 6};
  const int nodes = 3, nranks = 6;
  for (const TypeCase& t : kTypes) {
    const size_t acc = xccl::AccumulatorSize(t.type);
    auto is_nan = [&t](const uint8_t* p) { return IsNan(t.type, p); };
    auto is_acc_nan = [&t](const uint8_t* p) { return IsAccumulatorNan(t.type, p); };
    for (int op = 0; op < 5; ++op) {
      for (size_t misalign : {size_t{0}, size_t{1}}) {
        const size_t bytes = count * t.size, partial_bytes = count * acc;
        std::vector<std::vector<uint8_t>> host(nranks, std::vector<uint8_t>(bytes));
        for (auto& in : host)
          for (uint8_t& b : in) b = static_cast<uint8_t>(rng());
        // The host's two stages: a partial per node, then the partials in node order.
        std::vector<std::vector<uint8_t>> partials(nodes, std::vector<uint8_t>(partial_bytes));
        std::vector<const void*> partial_inputs;
        for (int node = 0, first = 0; node < nodes; first = ends[node++]) {
          std::vector<const void*> ranks;
          for (int r = first; r < ends[node]; ++r) ranks.push_back(host[r].data());
          ASSERT_EQ(xccl::ReduceStageOnHost(xccl::ReduceStage::kPartial, t.type, op, ranks.data(),
                                            static_cast<int>(ranks.size()), partials[node].data(),
                                            count, nranks),
                    xcclSuccess);
          partial_inputs.push_back(partials[node].data());
        }
        std::vector<uint8_t> want(bytes);
        ASSERT_EQ(xccl::ReduceStageOnHost(xccl::ReduceStage::kPartials, t.type, op,
                                          partial_inputs.data(), nodes, want.data(), count, nranks),
                  xcclSuccess);
        // Device buffers `misalign` bytes into their allocations.
        std::vector<void*> allocations;
        auto device_copy = [&](const std::vector<uint8_t>& from, size_t size) -> char* {
          void* p = nullptr;
          EXPECT_EQ(gpu::Malloc(&p, size + 16), gpu::kSuccess);
          allocations.push_back(p);
          char* at = static_cast<char*>(p) + misalign;
          EXPECT_EQ(gpu::MemsetAsync(p, 0xA5, size + 16, stream), gpu::kSuccess);
          if (!from.empty()) {
            EXPECT_EQ(gpu::MemcpyAsync(at, from.data(), size, stream), gpu::kSuccess);
          }
          return at;
        };
        std::vector<const void*> ranks;
        for (int r = 0; r < nranks; ++r) ranks.push_back(device_copy(host[r], bytes));
        char* whole = device_copy({}, bytes);
        char* node_partial = device_copy({}, partial_bytes);  // node 2's, from the device
        std::vector<const void*> device_partials;
        for (int node = 0; node < nodes; ++node)
          device_partials.push_back(device_copy(partials[node], partial_bytes));
        char* from_partials = device_copy({}, bytes);

        xccl::GroupedReduceShape by_node;
        by_node.inputs = ranks.data();
        by_node.group_ends = ends;
        by_node.groups = nodes;
        by_node.avg_ranks = nranks;
        ASSERT_EQ(xccl::LaunchGroupedReduce(t.type, op, by_node, whole, count, stream),
                  gpu::kSuccess);
        xccl::GroupedReduceShape stage;
        const int three = 3;
        stage.inputs = ranks.data() + 3;
        stage.group_ends = &three;
        stage.groups = 1;
        stage.accumulator_out = true;
        stage.avg_ranks = nranks;
        ASSERT_EQ(xccl::LaunchGroupedReduce(t.type, op, stage, node_partial, count, stream),
                  gpu::kSuccess);
        stage.inputs = device_partials.data();
        stage.accumulator_out = false;
        stage.accumulators_in = true;
        ASSERT_EQ(xccl::LaunchGroupedReduce(t.type, op, stage, from_partials, count, stream),
                  gpu::kSuccess);
        std::vector<uint8_t> got_whole(bytes), got_partial(partial_bytes), got_from(bytes);
        ASSERT_EQ(gpu::MemcpyAsync(got_whole.data(), whole, bytes, stream), gpu::kSuccess);
        ASSERT_EQ(gpu::MemcpyAsync(got_partial.data(), node_partial, partial_bytes, stream),
                  gpu::kSuccess);
        ASSERT_EQ(gpu::MemcpyAsync(got_from.data(), from_partials, bytes, stream), gpu::kSuccess);
        ASSERT_EQ(gpu::StreamSynchronize(stream), gpu::kSuccess);
        for (void* p : allocations) ASSERT_EQ(gpu::Free(p), gpu::kSuccess);
        const std::string where = "type " + std::to_string(t.type) + " op " + std::to_string(op) +
                                  " misaligned by " + std::to_string(misalign) + ": ";
        std::string wrong = FirstDifference(got_whole, want, count, t.size, is_nan);
        EXPECT_EQ(wrong, "") << where << "node by node in one pass";
        wrong = FirstDifference(got_partial, partials[2], count, acc, is_acc_nan);
        EXPECT_EQ(wrong, "") << where << "a node's partial";
        wrong = FirstDifference(got_from, want, count, t.size, is_nan);
        EXPECT_EQ(wrong, "") << where << "the nodes' partials";
      }
    }
  }
}

}  // namespace
}  // namespace xccl_test
