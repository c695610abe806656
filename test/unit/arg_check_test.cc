// CheckAllGatherArgs: data type, overflow, NULL buffers, in place and overlap.
#include "api/arg_check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
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

}  // namespace
}  // namespace xccl
