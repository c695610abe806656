// ag_gemm's self-test patterns and the description of a receive slot that came back wrong
// (src/fused/ag_gemm/self_test_pattern.h): a right receive slot gives no text; a stale or misplaced
// receive slot is named by the rank and round whose pattern it holds; lost bytes show in hex with
// their row.
#include "fused/ag_gemm/self_test_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using xccl::DescribeWrongRecvSlot;
using xccl::PatternByte;

std::vector<unsigned char> Slot(uint32_t round, int source, size_t bytes, bool scale) {
  std::vector<unsigned char> slot(bytes);
  for (size_t i = 0; i < bytes; ++i) slot[i] = PatternByte(round, source, i, scale);
  return slot;
}

TEST(SelfTestPattern, PatternsOfOtherRanksRoundsAndScalesDiffer) {
  // Every pair of keys within 8 rounds and 8 ranks of each other, at random base rounds (the
  // wrap included): they agree in about 1 byte of 256, and in no run of 6 bytes.
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const size_t bytes = 2048;
  for (int trial = 0; trial < 4; ++trial) {
    const uint32_t base = trial == 0 ? 0xFFFFFFFCu : static_cast<uint32_t>(rng());
    const int source = static_cast<int>(rng() % 8);
    const bool scale = rng() % 2 == 1;
    const std::vector<unsigned char> mine = Slot(base, source, bytes, scale);
    for (uint32_t d = 0; d <= 16; ++d) {
      for (int s = 0; s < 8; ++s) {
        for (bool other_scale : {false, true}) {
          const uint32_t round = base - 8 + d;
          if (round == base && s == source && other_scale == scale) continue;
          const std::vector<unsigned char> other = Slot(round, s, bytes, other_scale);
          size_t equal = 0, run = 0, longest = 0;
          for (size_t i = 0; i < bytes; ++i) {
            run = mine[i] == other[i] ? run + 1 : 0;
            equal += run > 0;
            longest = std::max(longest, run);
          }
          EXPECT_LT(equal, bytes / 64) << "round " << round << " rank " << s;
          EXPECT_LT(longest, 6u) << "round " << round << " rank " << s;
        }
      }
    }
  }
}

TEST(SelfTestPattern, ARightSlotHasNoDescription) {
  for (bool scale : {false, true}) {
    const std::vector<unsigned char> slot = Slot(41, 5, 1000, scale);
    EXPECT_EQ(DescribeWrongRecvSlot(slot.data(), slot.size(), 100, 41, 5, 8, scale), "");
  }
}

constexpr int kWorld = 8;
constexpr size_t kBytes = 1024, kRowBytes = 64;

// The description of a receive slot of `source`'s round `round` whose rows from `good` on hold
// `other`'s pattern of `held_round` instead.
std::string DescribeStale(uint32_t round, int source, uint32_t held_round, int other, size_t good,
                          bool scale) {
  std::vector<unsigned char> slot = Slot(round, source, kBytes, scale);
  const std::vector<unsigned char> held = Slot(held_round, other, kBytes, scale);
  std::copy(held.begin() + good * kRowBytes, held.end(), slot.begin() + good * kRowBytes);
  return DescribeWrongRecvSlot(slot.data(), kBytes, kRowBytes, round, source, kWorld, scale);
}

std::string Names(int rank, uint32_t round) {
  return "there it holds rank " + std::to_string(rank) + "'s pattern of round " +
         std::to_string(round);
}

// The row number after "from row " in a description.
size_t FirstRow(const std::string& text) {
  const std::string row = "from row ";
  const size_t at = text.find(row);
  return at == std::string::npos ? ~size_t{0} : std::stoul(text.substr(at + row.size()));
}

TEST(SelfTestPattern, AStaleOrMisplacedSlotNamesWhosePatternItHolds) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    const uint32_t round = static_cast<uint32_t>(rng());
    const int source = static_cast<int>(rng() % kWorld);
    const int other = static_cast<int>(rng() % kWorld);
    const int32_t shift = static_cast<int32_t>(rng() % 17) - 8;  // -8 ... 8
    if (shift == 0 && other == source) continue;
    const uint32_t held_round = round + static_cast<uint32_t>(shift);
    const size_t good = rng() % (kBytes / kRowBytes);
    const bool scale = rng() % 2 == 1;
    const std::string text = DescribeStale(round, source, held_round, other, good, scale);
    // The first wrong byte is in row `good` (its 64 bytes all agreeing by chance: 2^-512).
    EXPECT_EQ(FirstRow(text), good) << text;
    EXPECT_NE(text.find(Names(other, held_round)), std::string::npos)
        << text << " (expected rank " << other << ", round " << held_round << "; slot of rank "
        << source << ", round " << round << ")";
  }
}

TEST(SelfTestPattern, RoundsAreFoundAcrossTheWrapAndUpTo8Away) {
  // Across the wrap, both ways.
  EXPECT_NE(DescribeStale(2, 1, 0xFFFFFFFDu, 1, 0, false).find(Names(1, 0xFFFFFFFDu)),
            std::string::npos);
  EXPECT_NE(DescribeStale(0xFFFFFFFEu, 6, 3, 2, 4, true).find(Names(2, 3)), std::string::npos);
  // 8 rounds away is named, 9 is not.
  EXPECT_NE(DescribeStale(100, 3, 92, 3, 1, false).find(Names(3, 92)), std::string::npos);
  EXPECT_NE(DescribeStale(100, 3, 108, 0, 1, false).find(Names(0, 108)), std::string::npos);
  for (const uint32_t far : {91u, 109u}) {
    const std::string text = DescribeStale(100, 3, far, 3, 1, false);
    EXPECT_NE(text.find("no rank's pattern of the rounds within 8 of 100:"), std::string::npos)
        << text;
  }
}

TEST(SelfTestPattern, AFewWrongBytesAtTheEndAreNotAttributed) {
  // The last 10 bytes hold another key's: too few to name it by, so they show in hex.
  std::vector<unsigned char> slot = Slot(50, 2, kBytes, false);
  const std::vector<unsigned char> held = Slot(49, 2, kBytes, false);
  std::copy(held.end() - 10, held.end(), slot.end() - 10);
  const std::string text =
      DescribeWrongRecvSlot(slot.data(), kBytes, kRowBytes, 50, 2, kWorld, false);
  EXPECT_EQ(FirstRow(text), kBytes / kRowBytes - 1) << text;
  EXPECT_EQ(text.find("holds rank"), std::string::npos) << text;
  EXPECT_NE(text.find("no rank's pattern"), std::string::npos) << text;
}

TEST(SelfTestPattern, LostBytesShowInHexWithTheirCount) {
  const size_t bytes = 512, row_bytes = 32;
  std::vector<unsigned char> slot = Slot(9, 1, bytes, true);
  // Rows 3 and 4 are zeros (written by nobody); a zero byte of the pattern stays right there.
  size_t expected_wrong = 0;
  for (size_t i = 3 * row_bytes; i < 5 * row_bytes; ++i) {
    expected_wrong += slot[i] != 0;
    slot[i] = 0;
  }
  const std::string text = DescribeWrongRecvSlot(slot.data(), bytes, row_bytes, 9, 1, 4, true);
  EXPECT_EQ(text.rfind(std::to_string(expected_wrong) + " of 512 bytes wrong, from row 3", 0), 0u)
      << text;
  EXPECT_NE(text.find("no rank's pattern of the rounds within 8 of 9: 00 00 00"), std::string::npos)
      << text;
}

TEST(SelfTestPattern, PiecesInAnyOrderGiveTheWholeSlotsDescription) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    // A receive slot with a stale tail from a random row, checked in pieces of random sizes (not
    // row multiples) fed in reverse order, and filled by FillPattern at piece offsets.
    std::vector<unsigned char> slot(kBytes);
    for (size_t done = 0; done < kBytes;) {
      const size_t piece = std::min<size_t>(1 + rng() % 200, kBytes - done);
      xccl::FillPattern(slot.data() + done, done, piece, 77, 4, false);
      done += piece;
    }
    EXPECT_EQ(slot, Slot(77, 4, kBytes, false));
    const size_t good = rng() % (kBytes / kRowBytes);
    const std::vector<unsigned char> held = Slot(75, 6, kBytes, false);
    std::copy(held.begin() + good * kRowBytes, held.end(), slot.begin() + good * kRowBytes);
    std::vector<std::pair<size_t, size_t>> pieces;
    for (size_t done = 0; done < kBytes;) {
      const size_t piece = std::min<size_t>(1 + rng() % 300, kBytes - done);
      pieces.emplace_back(done, piece);
      done += piece;
    }
    xccl::RecvSlotCheck check(77, 4, false);
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it)
      check.Check(slot.data() + it->first, it->first, it->second);
    ASSERT_TRUE(check.wrong());
    const size_t first = check.first_wrong();
    EXPECT_EQ(check.Describe(kBytes, kRowBytes, slot.data() + first, kBytes - first, kWorld),
              DescribeWrongRecvSlot(slot.data(), kBytes, kRowBytes, 77, 4, kWorld, false));
    EXPECT_NE(DescribeWrongRecvSlot(slot.data(), kBytes, kRowBytes, 77, 4, kWorld, false)
                  .find(Names(6, 75)),
              std::string::npos);
  }
}

}  // namespace
