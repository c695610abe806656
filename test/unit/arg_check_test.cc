// CheckAllGatherArgs, CheckReduceScatterArgs and CheckAllReduceArgs: data type, reduction op,
// overflow, NULL buffers, in place and overlap.
#include "api/arg_check.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/datatype.h"
#include "base/error.h"
#include "xccl.h"

namespace xccl {
namespace {

// Addresses are only compared, never dereferenced, so tests may name any address.
void* At(uintptr_t address) { return reinterpret_cast<void*>(address); }

constexpr size_t kPoison = 0xDEADBEEFu;

TEST(ArgCheckTest, BadDataTypeRejected) {
  char send[16], recv[64];
  for (int dtype : {-1, 12, 1000, INT32_MIN, INT32_MAX}) {
    SCOPED_TRACE("datatype " + std::to_string(dtype));
    size_t block = kPoison;
    ClearThreadLastError();
    EXPECT_EQ(CheckAllGatherArgs(send, recv, 4, dtype, 0, 4, &block), xcclInvalidArgument);
    EXPECT_FALSE(ThreadLastError().empty());
    // Also with count 0 and NULL buffers: the type is checked regardless.
    EXPECT_EQ(CheckAllGatherArgs(nullptr, nullptr, 0, dtype, 0, 4, &block), xcclInvalidArgument);
  }
}

TEST(ArgCheckTest, OverflowingCountRejected) {
  // Fixed addresses, send far above recv: with a wrapped total nothing else would catch the
  // overflow, so only the overflow check can reject these.
  void* const recv = At(0x10000);
  void* const send = At(uintptr_t{1} << 46);
  struct Case {
    size_t count;
    int dtype;
    int nranks;
  };
  const Case cases[] = {
      {SIZE_MAX, xcclInt8, 2},
      {SIZE_MAX, xcclFloat32, 1},
      {SIZE_MAX / 2, xcclFloat32, 4},
      {SIZE_MAX / 2, xcclInt8, 4},
      {SIZE_MAX / 2 + 1, xcclInt8, 2},
      {SIZE_MAX / 8 + 1, xcclFloat64, 1},
      {SIZE_MAX / 4 / 8 + 1, xcclFloat32, 8},
      // count * size fits, count * size * nranks does not: the rank factor must be counted.
      {SIZE_MAX / 4 / 2 + 1, xcclFloat32, 4},
      {SIZE_MAX / 8 + 1, xcclInt8, 8},
      {(size_t{1} << 62), xcclInt8, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("count " + std::to_string(c.count) + " dtype " + std::to_string(c.dtype) +
                 " nranks " + std::to_string(c.nranks));
    size_t block = kPoison;
    ClearThreadLastError();
    EXPECT_EQ(CheckAllGatherArgs(send, recv, c.count, c.dtype, 0, c.nranks, &block),
              xcclInvalidArgument);
    EXPECT_FALSE(ThreadLastError().empty());
  }
}

TEST(ArgCheckTest, RecvRangeWrappingAddressSpaceRejected) {
  // A count that does not overflow size_t, but recv + total passes the top of the address space.
  size_t block = kPoison;
  const uintptr_t recv = UINTPTR_MAX - 4095;
  EXPECT_EQ(CheckAllGatherArgs(At(0x10000), At(recv), 1024, xcclFloat32, 1, 2, &block),
            xcclInvalidArgument);
  // Ending just below the top does not wrap.
  EXPECT_EQ(
      CheckAllGatherArgs(At(0x10000), At(UINTPTR_MAX - 8192), 1024, xcclFloat32, 1, 2, &block),
      xcclSuccess);
  EXPECT_EQ(block, 4096u);
}

TEST(ArgCheckTest, SendRangeWrappingAddressSpaceRejected) {
  size_t block = kPoison;
  ClearThreadLastError();
  EXPECT_EQ(CheckAllGatherArgs(At(UINTPTR_MAX - 10), At(0x10000), 100, xcclInt8, 0, 2, &block),
            xcclInvalidArgument);
  EXPECT_NE(ThreadLastError().find("sendbuff"), std::string::npos) << ThreadLastError();
}

TEST(ArgCheckTest, NullBufferWithCountRejected) {
  char buffer[64];
  for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    size_t block = kPoison;
    ClearThreadLastError();
    EXPECT_EQ(CheckAllGatherArgs(nullptr, buffer, count, xcclInt8, 0, 2, &block),
              xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("sendbuff"), std::string::npos) << ThreadLastError();
    ClearThreadLastError();
    EXPECT_EQ(CheckAllGatherArgs(buffer, nullptr, count, xcclInt8, 0, 2, &block),
              xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("recvbuff"), std::string::npos) << ThreadLastError();
    EXPECT_EQ(CheckAllGatherArgs(nullptr, nullptr, count, xcclInt8, 0, 2, &block),
              xcclInvalidArgument);
  }
}

TEST(ArgCheckTest, NullWithCountZeroAccepted) {
  char buffer[64];
  for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
    for (int nranks : {1, 2, 8}) {
      size_t block = kPoison;
      EXPECT_EQ(CheckAllGatherArgs(nullptr, nullptr, 0, dtype, nranks - 1, nranks, &block),
                xcclSuccess);
      EXPECT_EQ(block, 0u);
      block = kPoison;
      EXPECT_EQ(CheckAllGatherArgs(nullptr, buffer, 0, dtype, 0, nranks, &block), xcclSuccess);
      EXPECT_EQ(block, 0u);
      block = kPoison;
      EXPECT_EQ(CheckAllGatherArgs(buffer, nullptr, 0, dtype, 0, nranks, &block), xcclSuccess);
      EXPECT_EQ(block, 0u);
    }
  }
}

TEST(ArgCheckTest, InPlaceExactPositionAcceptedForEachRank) {
  const int nranks = 4;
  const size_t count = 24;
  for (int dtype : {xcclInt8, xcclBfloat16, xcclFloat32, xcclFloat64}) {
    const size_t size = DataTypeSize(dtype);
    const size_t bytes = count * size;
    std::vector<char> recv(bytes * nranks);
    for (int rank = 0; rank < nranks; ++rank) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + " rank " + std::to_string(rank));
      size_t block = kPoison;
      EXPECT_EQ(CheckAllGatherArgs(recv.data() + rank * bytes, recv.data(), count, dtype, rank,
                                   nranks, &block),
                xcclSuccess)
          << ThreadLastError();
      EXPECT_EQ(block, bytes);
      // Another rank's in-place position is not this rank's: it overlaps and is rejected.
      for (int other = 0; other < nranks; ++other) {
        if (other == rank) continue;
        EXPECT_EQ(CheckAllGatherArgs(recv.data() + other * bytes, recv.data(), count, dtype, rank,
                                     nranks, &block),
                  xcclInvalidArgument)
            << "send at rank " << other << "'s slot";
      }
    }
  }
}

TEST(ArgCheckTest, OverlappingNotInPlaceRejected) {
  const int nranks = 4;
  const size_t count = 64;  // int32: 256-byte blocks
  const size_t bytes = count * 4;
  std::vector<char> storage(bytes * (nranks + 2));
  char* recv = storage.data() + bytes;  // room on both sides
  const ptrdiff_t offsets[] = {1,
                               -1,
                               -static_cast<ptrdiff_t>(bytes) + 1,
                               static_cast<ptrdiff_t>(bytes) / 2,
                               static_cast<ptrdiff_t>(bytes) + 4,
                               static_cast<ptrdiff_t>(bytes * nranks) - 1,
                               static_cast<ptrdiff_t>(bytes * (nranks - 1)) + 1};
  for (int rank = 0; rank < nranks; ++rank) {
    for (ptrdiff_t offset : offsets) {
      if (offset == static_cast<ptrdiff_t>(rank * bytes)) continue;
      SCOPED_TRACE("rank " + std::to_string(rank) + " send at recv" + std::to_string(offset));
      size_t block = kPoison;
      ClearThreadLastError();
      EXPECT_EQ(CheckAllGatherArgs(recv + offset, recv, count, xcclInt32, rank, nranks, &block),
                xcclInvalidArgument);
      EXPECT_FALSE(ThreadLastError().empty());
    }
  }
}

TEST(ArgCheckTest, DisjointAccepted) {
  const int nranks = 4;
  const size_t count = 64;
  const size_t bytes = count * 4;
  std::vector<char> storage(bytes * (nranks + 2));
  char* recv = storage.data() + bytes;
  std::vector<char> elsewhere(bytes);
  for (int rank = 0; rank < nranks; ++rank) {
    size_t block = kPoison;
    // Touching at either end, but not overlapping.
    EXPECT_EQ(CheckAllGatherArgs(recv - bytes, recv, count, xcclInt32, rank, nranks, &block),
              xcclSuccess);
    EXPECT_EQ(block, bytes);
    block = kPoison;
    EXPECT_EQ(
        CheckAllGatherArgs(recv + bytes * nranks, recv, count, xcclInt32, rank, nranks, &block),
        xcclSuccess);
    EXPECT_EQ(block, bytes);
    block = kPoison;
    EXPECT_EQ(CheckAllGatherArgs(elsewhere.data(), recv, count, xcclInt32, rank, nranks, &block),
              xcclSuccess);
    EXPECT_EQ(block, bytes);
  }
}

TEST(ArgCheckTest, RandomPlacementsAgainstReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uintptr_t recv_base = uintptr_t{1} << 40;
  for (int i = 0; i < 3000; ++i) {
    const int nranks = 1 + static_cast<int>(rng() % 8);
    const int rank = static_cast<int>(rng() % nranks);
    const int dtype = static_cast<int>(rng() % xcclNumTypes);
    const size_t size = DataTypeSize(dtype);
    const size_t count = 1 + rng() % 100000;
    const int64_t bytes = static_cast<int64_t>(count * size);
    const int64_t total = bytes * nranks;
    // Send offsets around recv: before, touching, overlapping, in place, after.
    int64_t offset;
    switch (rng() % 4) {
      case 0:
        offset = rank * bytes;
        break;
      case 1:
        offset = -bytes - static_cast<int64_t>(rng() % 3) + 1;
        break;
      case 2:
        offset = total + static_cast<int64_t>(rng() % 3) - 1;
        break;
      default:
        offset = static_cast<int64_t>(rng() % static_cast<uint64_t>(total + bytes)) - bytes;
        break;
    }
    const bool in_place = offset == rank * bytes;
    const bool overlaps = offset < total && offset + bytes > 0;
    const xcclResult_t expected = (overlaps && !in_place) ? xcclInvalidArgument : xcclSuccess;
    size_t block = kPoison;
    const xcclResult_t got = CheckAllGatherArgs(At(recv_base + offset), At(recv_base), count, dtype,
                                                rank, nranks, &block);
    ASSERT_EQ(got, expected) << "nranks " << nranks << " rank " << rank << " dtype " << dtype
                             << " count " << count << " send offset " << offset;
    if (got == xcclSuccess) {
      ASSERT_EQ(block, static_cast<size_t>(bytes));
    }
  }
}

TEST(ArgCheckTest, BlockBytesComputed) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
    for (int i = 0; i < 20; ++i) {
      const size_t count = 1 + rng() % (size_t{1} << 30);
      const int nranks = 1 + static_cast<int>(rng() % 16);
      size_t block = kPoison;
      ASSERT_EQ(
          CheckAllGatherArgs(At(0x1000), At(uintptr_t{1} << 44), count, dtype, 0, nranks, &block),
          xcclSuccess);
      EXPECT_EQ(block, count * DataTypeSize(dtype)) << "dtype " << dtype << " count " << count;
    }
  }
}

// ---- xcclReduceScatter and xcclAllReduce ----

// The two reducing checks behind one signature, so that every case below runs on both: `send`
// and `recv` as the caller passes them; *bytes is the block (reduce_scatter) or the buffer
// (all_reduce) on success.
enum class Reducing { kReduceScatter, kAllReduce };

const char* Name(Reducing which) {
  return which == Reducing::kReduceScatter ? "reduce_scatter" : "all_reduce";
}

xcclResult_t CheckReducing(Reducing which, const void* send, void* recv, size_t count, int dtype,
                           int op, int rank, int nranks, size_t* bytes) {
  if (which == Reducing::kReduceScatter)
    return CheckReduceScatterArgs(send, recv, count, dtype, op, rank, nranks, bytes);
  return CheckAllReduceArgs(send, recv, count, dtype, op, bytes);
}

constexpr Reducing kReducing[] = {Reducing::kReduceScatter, Reducing::kAllReduce};

TEST(ReduceArgCheckTest, EveryOpOfTheEnumAccepted) {
  std::vector<char> send(4 * 64 * 4), recv(4 * 64);
  for (Reducing which : kReducing) {
    for (int op = xcclSum; op < xcclNumOps; ++op) {
      SCOPED_TRACE(std::string(Name(which)) + " op " + std::to_string(op));
      size_t bytes = kPoison;
      EXPECT_EQ(CheckReducing(which, send.data(), recv.data(), 64, xcclFloat32, op, 1, 4, &bytes),
                xcclSuccess)
          << ThreadLastError();
      EXPECT_EQ(bytes, 256u);
    }
  }
}

// An op outside sum..avg (negative, xcclNumOps itself, the enum's sentinel, far out) is refused
// naming the op, with or without data: a count-0 call is still a call with a bad op, as a bad
// datatype is refused at count 0 too.
TEST(ReduceArgCheckTest, OpOutOfRangeRejected) {
  std::vector<char> send(4 * 64 * 4), recv(4 * 64);
  for (Reducing which : kReducing) {
    for (int op : {-1, static_cast<int>(xcclNumOps), xcclNumOps + 1, 1000, INT32_MIN,
                   static_cast<int>(xcclRedOpMaxEnum)}) {
      SCOPED_TRACE(std::string(Name(which)) + " op " + std::to_string(op));
      size_t bytes = kPoison;
      ClearThreadLastError();
      EXPECT_EQ(CheckReducing(which, send.data(), recv.data(), 64, xcclFloat32, op, 0, 4, &bytes),
                xcclInvalidArgument);
      EXPECT_NE(ThreadLastError().find("op " + std::to_string(op)), std::string::npos)
          << ThreadLastError();
      EXPECT_EQ(CheckReducing(which, nullptr, nullptr, 0, xcclFloat32, op, 0, 4, &bytes),
                xcclInvalidArgument);
      // Every type: the op check does not depend on it.
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        EXPECT_EQ(CheckReducing(which, send.data(), recv.data(), 8, dtype, op, 0, 4, &bytes),
                  xcclInvalidArgument)
            << "dtype " << dtype;
      }
    }
  }
}

TEST(ReduceArgCheckTest, BadDataTypeRejected) {
  std::vector<char> send(4 * 64 * 4), recv(4 * 64);
  for (Reducing which : kReducing) {
    for (int dtype : {-1, 12, 1000, INT32_MIN, INT32_MAX}) {
      SCOPED_TRACE(std::string(Name(which)) + " datatype " + std::to_string(dtype));
      size_t bytes = kPoison;
      ClearThreadLastError();
      EXPECT_EQ(CheckReducing(which, send.data(), recv.data(), 4, dtype, xcclSum, 0, 4, &bytes),
                xcclInvalidArgument);
      EXPECT_NE(ThreadLastError().find("datatype"), std::string::npos) << ThreadLastError();
      EXPECT_EQ(CheckReducing(which, nullptr, nullptr, 0, dtype, xcclMax, 0, 4, &bytes),
                xcclInvalidArgument);
    }
  }
}

TEST(ReduceArgCheckTest, NullBufferWithCountRejected) {
  std::vector<char> buffer(8 * 1000 * 8);
  for (Reducing which : kReducing) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
      for (int rank : {0, 2}) {
        SCOPED_TRACE(std::string(Name(which)) + " count " + std::to_string(count) + " rank " +
                     std::to_string(rank));
        size_t bytes = kPoison;
        ClearThreadLastError();
        EXPECT_EQ(
            CheckReducing(which, nullptr, buffer.data(), count, xcclInt8, xcclSum, rank, 3, &bytes),
            xcclInvalidArgument);
        EXPECT_NE(ThreadLastError().find("sendbuff"), std::string::npos) << ThreadLastError();
        ClearThreadLastError();
        EXPECT_EQ(
            CheckReducing(which, buffer.data(), nullptr, count, xcclInt8, xcclSum, rank, 3, &bytes),
            xcclInvalidArgument);
        EXPECT_NE(ThreadLastError().find("recvbuff"), std::string::npos) << ThreadLastError();
        EXPECT_EQ(CheckReducing(which, nullptr, nullptr, count, xcclInt8, xcclSum, rank, 3, &bytes),
                  xcclInvalidArgument);
      }
    }
  }
}

TEST(ReduceArgCheckTest, NullWithCountZeroAccepted) {
  char buffer[64];
  for (Reducing which : kReducing) {
    for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
      for (int op = xcclSum; op < xcclNumOps; ++op) {
        for (int nranks : {1, 2, 8}) {
          SCOPED_TRACE(std::string(Name(which)) + " dtype " + std::to_string(dtype) + " op " +
                       std::to_string(op) + " nranks " + std::to_string(nranks));
          for (const auto& buffers : {std::make_pair<void*, void*>(nullptr, nullptr),
                                      std::make_pair<void*, void*>(nullptr, buffer),
                                      std::make_pair<void*, void*>(buffer, nullptr)}) {
            size_t bytes = kPoison;
            EXPECT_EQ(CheckReducing(which, buffers.first, buffers.second, 0, dtype, op, nranks - 1,
                                    nranks, &bytes),
                      xcclSuccess)
                << ThreadLastError();
            EXPECT_EQ(bytes, 0u);
          }
        }
      }
    }
  }
}

TEST(ReduceArgCheckTest, OverflowingCountRejected) {
  // Buffers far apart at fixed addresses: with a wrapped byte count nothing else would refuse
  // these, so only the overflow check can.
  void* const low = At(0x10000);
  void* const high = At(uintptr_t{1} << 46);
  struct Case {
    size_t count;
    int dtype;
    int nranks;
    bool all_reduce_too;  // count * size alone overflows (all_reduce has no rank factor)
  };
  const Case cases[] = {
      {SIZE_MAX, xcclInt8, 2, false},
      {SIZE_MAX, xcclFloat32, 1, true},
      {SIZE_MAX / 2, xcclFloat32, 4, true},
      {SIZE_MAX / 2, xcclInt8, 4, false},
      {SIZE_MAX / 8 + 1, xcclFloat64, 1, true},
      {SIZE_MAX / 2 + 1, xcclFloat16, 1, true},
      {SIZE_MAX / 4 / 8 + 1, xcclFloat32, 8, false},
      // count * size fits, count * size * nranks does not: reduce_scatter's send buffer holds
      // nranks blocks, so the rank factor must be counted.
      {SIZE_MAX / 4 / 2 + 1, xcclFloat32, 4, false},
      {SIZE_MAX / 8 + 1, xcclInt8, 8, false},
      {(size_t{1} << 62), xcclInt8, 4, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("count " + std::to_string(c.count) + " dtype " + std::to_string(c.dtype) +
                 " nranks " + std::to_string(c.nranks));
    size_t bytes = kPoison;
    ClearThreadLastError();
    EXPECT_EQ(CheckReduceScatterArgs(high, low, c.count, c.dtype, xcclSum, 0, c.nranks, &bytes),
              xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("overflow"), std::string::npos) << ThreadLastError();
    EXPECT_EQ(CheckReduceScatterArgs(low, high, c.count, c.dtype, xcclSum, 0, c.nranks, &bytes),
              xcclInvalidArgument);
    if (c.all_reduce_too) {
      ClearThreadLastError();
      EXPECT_EQ(CheckAllReduceArgs(high, low, c.count, c.dtype, xcclSum, &bytes),
                xcclInvalidArgument);
      EXPECT_NE(ThreadLastError().find("overflow"), std::string::npos) << ThreadLastError();
    }
  }
  // The largest all_reduce count that fits is not an overflow (the buffers then wrap the
  // address space instead, a different refusal: at least not a success).
  size_t bytes = kPoison;
  ClearThreadLastError();
  EXPECT_EQ(CheckAllReduceArgs(high, low, SIZE_MAX / 4, xcclFloat32, xcclSum, &bytes),
            xcclInvalidArgument);
  EXPECT_EQ(ThreadLastError().find("overflows"), std::string::npos) << ThreadLastError();
}

TEST(ReduceArgCheckTest, RangesWrappingTheAddressSpaceRejected) {
  size_t bytes = kPoison;
  // reduce_scatter: send holds nranks blocks; a send range ending past the top wraps.
  ClearThreadLastError();
  EXPECT_EQ(CheckReduceScatterArgs(At(UINTPTR_MAX - 4095), At(0x10000), 1024, xcclFloat32, xcclSum,
                                   0, 2, &bytes),
            xcclInvalidArgument);
  EXPECT_NE(ThreadLastError().find("sendbuff"), std::string::npos) << ThreadLastError();
  // Ending just below the top does not wrap.
  EXPECT_EQ(CheckReduceScatterArgs(At(UINTPTR_MAX - 8192), At(0x10000), 1024, xcclFloat32, xcclSum,
                                   0, 2, &bytes),
            xcclSuccess)
      << ThreadLastError();
  EXPECT_EQ(bytes, 4096u);
  ClearThreadLastError();
  EXPECT_EQ(CheckReduceScatterArgs(At(0x10000), At(UINTPTR_MAX - 10), 100, xcclInt8, xcclMax, 1, 2,
                                   &bytes),
            xcclInvalidArgument);
  EXPECT_NE(ThreadLastError().find("recvbuff"), std::string::npos) << ThreadLastError();
  // all_reduce: both ranges are the buffer size.
  ClearThreadLastError();
  EXPECT_EQ(CheckAllReduceArgs(At(UINTPTR_MAX - 10), At(0x10000), 100, xcclInt8, xcclSum, &bytes),
            xcclInvalidArgument);
  EXPECT_NE(ThreadLastError().find("sendbuff"), std::string::npos) << ThreadLastError();
  ClearThreadLastError();
  EXPECT_EQ(CheckAllReduceArgs(At(0x10000), At(UINTPTR_MAX - 10), 100, xcclInt8, xcclSum, &bytes),
            xcclInvalidArgument);
  EXPECT_NE(ThreadLastError().find("recvbuff"), std::string::npos) << ThreadLastError();
  EXPECT_EQ(CheckAllReduceArgs(At(0x10000), At(UINTPTR_MAX - 100), 100, xcclInt8, xcclSum, &bytes),
            xcclSuccess)
      << ThreadLastError();
  EXPECT_EQ(bytes, 100u);
}

// reduce_scatter in place: recvbuff == sendbuff + rank * recvcount elements, for each rank and
// each element size (one rank too: then recv == send); any other rank's slot is refused.
TEST(ReduceArgCheckTest, ReduceScatterInPlaceAcceptedForEachRankOnly) {
  const size_t count = 24;
  for (int nranks : {1, 2, 3, 4, 8}) {
    for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
      const size_t bytes = count * DataTypeSize(dtype);
      std::vector<char> send(bytes * nranks);
      for (int rank = 0; rank < nranks; ++rank) {
        SCOPED_TRACE("nranks " + std::to_string(nranks) + " dtype " + std::to_string(dtype) +
                     " rank " + std::to_string(rank));
        size_t block = kPoison;
        EXPECT_EQ(CheckReduceScatterArgs(send.data(), send.data() + rank * bytes, count, dtype,
                                         xcclAvg, rank, nranks, &block),
                  xcclSuccess)
            << ThreadLastError();
        EXPECT_EQ(block, bytes);
        for (int other = 0; other < nranks; ++other) {
          if (other == rank) continue;
          ClearThreadLastError();
          EXPECT_EQ(CheckReduceScatterArgs(send.data(), send.data() + other * bytes, count, dtype,
                                           xcclAvg, rank, nranks, &block),
                    xcclInvalidArgument)
              << "recv at rank " << other << "'s slot";
          EXPECT_NE(ThreadLastError().find("in place"), std::string::npos) << ThreadLastError();
        }
      }
    }
  }
}

TEST(ReduceArgCheckTest, AllReduceInPlaceAccepted) {
  for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
    for (size_t count : {size_t{1}, size_t{3}, size_t{1000}}) {
      std::vector<char> buffer(count * DataTypeSize(dtype));
      size_t bytes = kPoison;
      EXPECT_EQ(CheckAllReduceArgs(buffer.data(), buffer.data(), count, dtype, xcclProd, &bytes),
                xcclSuccess)
          << ThreadLastError();
      EXPECT_EQ(bytes, buffer.size());
    }
  }
}

// Every overlap other than the in-place layout is refused, whichever buffer starts first, one
// byte or almost all of it: reduce_scatter's recv block placed anywhere in or around send
// except this rank's slot, all_reduce's recv anywhere over send except on it.
TEST(ReduceArgCheckTest, OverlappingNotInPlaceRejected) {
  const size_t count = 64;  // int32: 256-byte blocks
  const ptrdiff_t block = static_cast<ptrdiff_t>(count * 4);
  for (int nranks : {1, 2, 4}) {
    const ptrdiff_t total = block * nranks;
    std::vector<char> storage(static_cast<size_t>(total + 2 * block));
    char* send = storage.data() + block;  // room on both sides
    const ptrdiff_t offsets[] = {1,         -1,        -block + 1,   block / 2,         block + 4,
                                 total - 1, total - 4, block - 1,    total - block + 1, 2,
                                 -2,        block / 4, 3 * block / 2};
    for (int rank = 0; rank < nranks; ++rank) {
      for (ptrdiff_t offset : offsets) {
        if (offset == rank * block || offset <= -block || offset >= total) continue;
        SCOPED_TRACE("nranks " + std::to_string(nranks) + " rank " + std::to_string(rank) +
                     " recv at send" + (offset < 0 ? "" : "+") + std::to_string(offset));
        size_t bytes = kPoison;
        ClearThreadLastError();
        EXPECT_EQ(CheckReduceScatterArgs(send, send + offset, count, xcclInt32, xcclSum, rank,
                                         nranks, &bytes),
                  xcclInvalidArgument);
        EXPECT_NE(ThreadLastError().find("overlaps"), std::string::npos) << ThreadLastError();
      }
    }
  }
  std::vector<char> storage(static_cast<size_t>(3 * block));
  char* send = storage.data() + block;
  for (ptrdiff_t offset : {ptrdiff_t{1}, ptrdiff_t{-1}, block - 1, -block + 1, block / 2,
                           -block / 2, ptrdiff_t{4}, ptrdiff_t{-4}}) {
    SCOPED_TRACE("all_reduce recv at send" + std::string(offset < 0 ? "" : "+") +
                 std::to_string(offset));
    size_t bytes = kPoison;
    ClearThreadLastError();
    EXPECT_EQ(CheckAllReduceArgs(send, send + offset, count, xcclInt32, xcclSum, &bytes),
              xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("overlaps"), std::string::npos) << ThreadLastError();
  }
}

TEST(ReduceArgCheckTest, DisjointAccepted) {
  const size_t count = 64;
  const size_t block = count * 4;
  for (int nranks : {1, 2, 4}) {
    std::vector<char> storage(block * (nranks + 2));
    char* send = storage.data() + block;
    std::vector<char> elsewhere(block);
    for (int rank = 0; rank < nranks; ++rank) {
      // Touching at either end, but not overlapping.
      for (char* recv : {send - block, send + block * nranks, elsewhere.data()}) {
        size_t bytes = kPoison;
        EXPECT_EQ(
            CheckReduceScatterArgs(send, recv, count, xcclInt32, xcclMin, rank, nranks, &bytes),
            xcclSuccess)
            << ThreadLastError();
        EXPECT_EQ(bytes, block);
      }
    }
  }
  std::vector<char> storage(block * 3);
  char* send = storage.data() + block;
  for (char* recv : {send - block, send + block}) {
    size_t bytes = kPoison;
    EXPECT_EQ(CheckAllReduceArgs(send, recv, count, xcclInt32, xcclMin, &bytes), xcclSuccess)
        << ThreadLastError();
    EXPECT_EQ(bytes, block);
  }
}

// Random placements of recv around send against the rule written here: refused exactly when
// the ranges overlap and recv is not at the in-place position.
TEST(ReduceArgCheckTest, RandomPlacementsAgainstReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uintptr_t send_base = uintptr_t{1} << 40;
  for (int i = 0; i < 6000; ++i) {
    const Reducing which = i % 2 == 0 ? Reducing::kReduceScatter : Reducing::kAllReduce;
    const int nranks = 1 + static_cast<int>(rng() % 8);
    const int rank = static_cast<int>(rng() % nranks);
    const int dtype = static_cast<int>(rng() % xcclNumTypes);
    const int op = static_cast<int>(rng() % xcclNumOps);
    const size_t count = 1 + rng() % 100000;
    const int64_t bytes = static_cast<int64_t>(count * DataTypeSize(dtype));
    const int64_t send_bytes = which == Reducing::kReduceScatter ? bytes * nranks : bytes;
    const int64_t in_place = which == Reducing::kReduceScatter ? rank * bytes : 0;
    // recv offsets from send: in place, touching before, touching after, anywhere around.
    int64_t offset;
    switch (rng() % 4) {
      case 0:
        offset = in_place;
        break;
      case 1:
        offset = -bytes - static_cast<int64_t>(rng() % 3) + 1;
        break;
      case 2:
        offset = send_bytes + static_cast<int64_t>(rng() % 3) - 1;
        break;
      default:
        offset = static_cast<int64_t>(rng() % static_cast<uint64_t>(send_bytes + bytes)) - bytes;
        break;
    }
    const bool overlaps = offset < send_bytes && offset + bytes > 0;
    const xcclResult_t expected =
        (overlaps && offset != in_place) ? xcclInvalidArgument : xcclSuccess;
    size_t got_bytes = kPoison;
    const xcclResult_t got = CheckReducing(which, At(send_base), At(send_base + offset), count,
                                           dtype, op, rank, nranks, &got_bytes);
    ASSERT_EQ(got, expected) << Name(which) << " nranks " << nranks << " rank " << rank << " dtype "
                             << dtype << " count " << count << " recv offset " << offset << ": "
                             << ThreadLastError();
    if (got == xcclSuccess) {
      ASSERT_EQ(got_bytes, static_cast<size_t>(bytes));
    }
  }
}

}  // namespace
}  // namespace xccl
