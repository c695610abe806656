// ag_gemm's self-test patterns and the description of a slot that came back wrong
// (src/fused/self_test_pattern.h): a right slot gives no text; a stale or misplaced slot is named
// by the rank and round whose pattern it holds; lost bytes show in hex with their row.
#include "fused/self_test_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using xccl::DescribeWrongSlot;
using xccl::PatternByte;

std::vector<unsigned char> Slot(uint32_t round, int source, size_t bytes, bool scale) {
  std::vector<unsigned char> slot(bytes);
  for (size_t i = 0; i < bytes; ++i) slot[i] = PatternByte(round, source, i, scale);
  return slot;
}

TEST(SelfTestPattern, PatternsOfOtherRanksRoundsAndScalesDiffer) {
  // Every pair of keys within 8 rounds and 8 ranks of each other, at random base rounds (the
  // wrap included): they agree in about 1 byte of 256, and in no run of 6 bytes.
  std::mt19937 rng(std::random_device{}());
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
    EXPECT_EQ(DescribeWrongSlot(slot.data(), slot.size(), 100, 41, 5, 8, scale), "");
  }
}

TEST(SelfTestPattern, AStaleOrMisplacedSlotNamesWhosePatternItHolds) {
  std::mt19937 rng(std::random_device{}());
  const int world = 8;
  const size_t bytes = 1024, row_bytes = 64;
  for (int trial = 0; trial < 50; ++trial) {
    const uint32_t round = static_cast<uint32_t>(rng());  // also near the wrap
    const int source = static_cast<int>(rng() % world);
    const int other = static_cast<int>(rng() % world);
    const int32_t shift = static_cast<int32_t>(rng() % 17) - 8;  // -8 ... 8
    if (shift == 0 && other == source) continue;
    const uint32_t held_round = round + static_cast<uint32_t>(shift);
    // The first `good` rows are right; from there the slot holds the other pattern.
    const size_t good = rng() % (bytes / row_bytes);
    std::vector<unsigned char> slot = Slot(round, source, bytes, false);
    const std::vector<unsigned char> held = Slot(held_round, other, bytes, false);
    std::copy(held.begin() + good * row_bytes, held.end(), slot.begin() + good * row_bytes);
    const std::string text =
        DescribeWrongSlot(slot.data(), bytes, row_bytes, round, source, world, false);
    // The first wrong byte is at or after the good rows (a byte may agree by chance).
    const std::string row = "from row ";
    ASSERT_NE(text.find(row), std::string::npos) << text;
    const size_t first_row = std::stoul(text.substr(text.find(row) + row.size()));
    EXPECT_EQ(first_row, good) << text;
    EXPECT_NE(text.find("holds rank " + std::to_string(other) + "'s pattern of round " +
                        std::to_string(held_round)),
              std::string::npos)
        << text << " (expected rank " << other << ", round " << held_round << "; slot of rank "
        << source << ", round " << round << ")";
  }
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
  const std::string text = DescribeWrongSlot(slot.data(), bytes, row_bytes, 9, 1, 4, true);
  EXPECT_EQ(text.rfind(std::to_string(expected_wrong) + " of 512 bytes wrong, from row 3", 0), 0u)
      << text;
  EXPECT_NE(text.find("no rank's pattern of the rounds within 8 of 9: 00 00 00"), std::string::npos)
      << text;
}

}  // namespace
