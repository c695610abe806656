// The references of the reduction suites (mp/reduce_check.h) checked themselves, so that a
// failure there means the library: they accept the library's own host arithmetic (ReduceOnHost,
// unit-tested against textbook formulas in reduction_test.cc) on every type, op and data
// flavor, and they refuse outputs that are wrong by one code, accumulated in the narrow type,
// or (with one rank) not a copy.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "collectives/reduce/reduction.h"
#include "mp/reduce_check.h"

namespace xccl_test {
namespace {

// Every rank's send buffer of `count` elements for call c.
std::vector<std::vector<unsigned char>> Inputs(const ReduceCall& c, size_t count, uint64_t seed,
                                               int nranks) {
  const size_t elem = xccl::DataTypeSize(c.dtype);
  std::vector<std::vector<unsigned char>> in(nranks, std::vector<unsigned char>(count * elem));
  for (int r = 0; r < nranks; ++r)
    FillReduceInput(in[r].data(), 0, count, c.dtype, c.op, c.flavor, seed, r, c.call);
  return in;
}

std::vector<unsigned char> LibraryResult(const ReduceCall& c, size_t count, uint64_t seed,
                                         int nranks) {
  const auto in = Inputs(c, count, seed, nranks);
  std::vector<const void*> pointers;
  for (const auto& buffer : in) pointers.push_back(buffer.data());
  std::vector<unsigned char> out(count * xccl::DataTypeSize(c.dtype));
  EXPECT_EQ(xccl::ReduceOnHost(c.dtype, c.op, pointers.data(), nranks, out.data(), count),
            xcclSuccess);
  return out;
}

TEST(ReduceScatterAllReduceReferenceTest, AcceptTheLibraryHostArithmetic) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const size_t count = 3000;
  uint64_t call = 0;
  for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
    for (int op = 0; op < xcclNumOps; ++op) {
      for (Flavor flavor : {Flavor::kPlain, Flavor::kSpecials, Flavor::kNearMax}) {
        for (int nranks : {2, 3, 8}) {
          const ReduceCall c{dtype, op, flavor, call++};
          const std::vector<unsigned char> out = LibraryResult(c, count, seed, nranks);
          EXPECT_EQ(CheckReduced(out.data(), 0, count, c, seed, nranks), "") << nranks << " ranks";
        }
      }
    }
  }
}

// One element off by one code (where the right result is not a NaN, which may come with any
// payload) fails, naming that element.
TEST(ReduceScatterAllReduceReferenceTest, RefuseAnOutputOneCodeOff) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t count = 500;
  uint64_t call = 0;
  for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
    const size_t elem = xccl::DataTypeSize(dtype);
    for (int op = 0; op < xcclNumOps; ++op) {
      for (Flavor flavor : {Flavor::kPlain, Flavor::kSpecials}) {
        const int nranks = 2 + static_cast<int>(rng() % 7);
        const ReduceCall c{dtype, op, flavor, call++};
        std::vector<unsigned char> out = LibraryResult(c, count, seed, nranks);
        for (int attempt = 0; attempt < 20; ++attempt) {
          const size_t k = rng() % count;
          uint64_t code = 0;
          memcpy(&code, out.data() + k * elem, elem);
          const bool nan = reduce_check::WithType(dtype, [&](auto t) {
            using T = decltype(t);
            return reduce_check::IsNan<T>(reduce_check::FromCode<T>(code));
          });
          if (nan) continue;
          std::vector<unsigned char> wrong = out;
          const uint64_t off = code + 1;
          memcpy(wrong.data() + k * elem, &off, elem);
          const std::string message = CheckReduced(wrong.data(), 0, count, c, seed, nranks);
          EXPECT_NE(message.find("element " + std::to_string(k) + " "), std::string::npos)
              << c.Describe() << ", " << nranks << " ranks, element " << k
              << " one code off: " << message;
          break;
        }
      }
    }
  }
}

// Accumulating fp16 / bf16 / fp8 in their own format (rounding after every step) instead of
// in fp32 is caught by both references on 8 ranks of plain data.
TEST(ReduceScatterAllReduceReferenceTest, RefuseNarrowAccumulation) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const size_t count = 4000;
  const int nranks = 8;
  for (int dtype : {xcclFloat16, xcclBfloat16, xcclFloat8e4m3, xcclFloat8e5m2}) {
    const ReduceCall c{dtype, xcclSum, Flavor::kPlain, 7};
    const auto in = Inputs(c, count, seed, nranks);
    std::vector<unsigned char> out(count * xccl::DataTypeSize(dtype));
    reduce_check::WithType(dtype, [&](auto t) {
      using T = decltype(t);
      using S = typename T::Storage;
      if constexpr (T::kNarrow) {
        for (size_t i = 0; i < count; ++i) {
          S acc;
          memcpy(&acc, in[0].data() + i * sizeof(S), sizeof(S));
          for (int r = 1; r < nranks; ++r) {
            S x;
            memcpy(&x, in[r].data() + i * sizeof(S), sizeof(S));
            acc = static_cast<S>(
                T::Codec::FromFloat(reduce_check::Widen<T>(acc) + reduce_check::Widen<T>(x)));
          }
          memcpy(out.data() + i * sizeof(S), &acc, sizeof(S));
        }
      }
      return 0;
    });
    const std::string message = CheckReduced(out.data(), 0, count, c, seed, nranks);
    EXPECT_NE(message.find("differ from the rank-order reference"), std::string::npos)
        << ReduceTypeName(dtype) << ": " << message;
    EXPECT_EQ(message.find(" 0 from the exact one"), std::string::npos)
        << ReduceTypeName(dtype)
        << ": the exact reference let narrow accumulation through: " << message;
  }
}

// With one rank the output is the input's bits: widening and narrowing back (which quiets a
// signalling NaN and saturates an fp8 e5m2 infinity) is not a copy.
TEST(ReduceScatterAllReduceReferenceTest, OneRankMeansACopy) {
  const uint64_t seed = std::random_device{}();
  const size_t count = 2000;
  for (int dtype : {xcclBfloat16, xcclFloat8e5m2}) {
    const ReduceCall c{dtype, xcclSum, Flavor::kSpecials, 3};
    const auto in = Inputs(c, count, seed, 1);
    EXPECT_EQ(CheckReduced(in[0].data(), 0, count, c, seed, 1), "");
    const std::vector<unsigned char> out = LibraryResult(c, count, seed, 1);
    EXPECT_NE(CheckReduced(out.data(), 0, count, c, seed, 1), "") << ReduceTypeName(dtype);
  }
}

}  // namespace
}  // namespace xccl_test
