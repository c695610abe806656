// The reduction kernel (collectives/reduce/reduce_kernel.h) against the host's ReduceOnHost,
// bit for bit: all 12 types and 5 ops, 1, 3 and 8 inputs, fresh random bits (NaN and infinities
// among them), a poisoned output and in place. A NaN may differ in sign and payload between the
// host's and the device's arithmetic, so where the host gives NaN the device must give a NaN.
// Unlike the rest of this suite it reaches into the library (an internal kernel against an
// internal host function): the arithmetic every reducing engine will share. Skips, saying why,
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

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

TEST(GpuReduceKernel, MatchesTheHostBitForBit) {
  int devices = 0;
  if (gpu::GetDeviceCount(&devices) != gpu::kSuccess || devices == 0)
    GTEST_SKIP() << "no GPU: the device count query failed or found none";
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  gpu::StreamHandle stream = nullptr;
  ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream), gpu::kSuccess);
  std::mt19937_64 rng(std::random_device{}());
  const TypeCase types[] = {{xcclInt8, 1},     {xcclUint8, 1},      {xcclInt32, 4},
                            {xcclUint32, 4},   {xcclInt64, 8},      {xcclUint64, 8},
                            {xcclFloat16, 2},  {xcclFloat32, 4},    {xcclFloat64, 8},
                            {xcclBfloat16, 2}, {xcclFloat8e4m3, 1}, {xcclFloat8e5m2, 1}};
  const size_t count = 100003;  // more than one grid pass, and odd
  for (const TypeCase& t : types) {
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
  ASSERT_EQ(gpu::StreamDestroy(stream), gpu::kSuccess);
}

}  // namespace
}  // namespace xccl_test
