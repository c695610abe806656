// The control slots handed out by name (transport/slot_map.h): ranges are disjoint and start
// after the transport's own words, signalled ones before device-only ones whatever the order
// asked, every rank asking alike gets the same map, and misuse is refused with a message.
#include "transport/slot_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "transport/transport.h"
#include "transport/window.h"

namespace xccl {
namespace {

struct Ask {
  std::string name;
  int count;
  SlotReach reach;
};

std::vector<Ask> RandomAsks(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Ask> asks(2 + rng() % 10);
  for (size_t i = 0; i < asks.size(); ++i)
    asks[i] = {"op" + std::to_string(i), static_cast<int>(rng() % 300),
               rng() % 2 ? SlotReach::kSignalled : SlotReach::kDeviceOnly};
  return asks;
}

SlotMap Laid(const std::vector<Ask>& asks) {
  SlotMap map;
  for (const Ask& ask : asks) EXPECT_EQ(map.Reserve(ask.name, ask.count, ask.reach), xcclSuccess);
  map.Lay();
  return map;
}

TEST(SlotMap, RangesAreDisjointAfterTheTransportsWordsSignalledFirst) {
  const uint64_t seed = std::random_device{}();
  for (uint64_t round = 0; round < 50; ++round) {
    const std::vector<Ask> asks = RandomAsks(seed + round);
    const SlotMap map = Laid(asks);
    std::vector<std::pair<int, int>> taken;  // [first, end)
    int signalled = 0, device_only = 0;
    for (const Ask& ask : asks) {
      SlotRange range;
      ASSERT_EQ(map.Find(ask.name.c_str(), &range), xcclSuccess) << ThreadLastError();
      EXPECT_EQ(range.count, ask.count) << ask.name << " seed " << seed + round;
      EXPECT_GE(range.first, ControlLayout::kFirstOpSlot);
      EXPECT_LE(range.end(), map.end());
      if (ask.reach == SlotReach::kSignalled) {
        EXPECT_LE(range.end(), map.signalled_end()) << ask.name;
        signalled += ask.count;
      } else {
        EXPECT_GE(range.first, map.signalled_end()) << ask.name;
        device_only += ask.count;
      }
      if (ask.count > 0) taken.emplace_back(range.first, range.end());
    }
    std::sort(taken.begin(), taken.end());
    for (size_t i = 1; i < taken.size(); ++i)
      EXPECT_LE(taken[i - 1].second, taken[i].first) << "overlap, seed " << seed + round;
    // Nothing is wasted: the map is exactly the words plus what was asked.
    EXPECT_EQ(map.signalled_end(), ControlLayout::kFirstOpSlot + signalled);
    EXPECT_EQ(map.end(), ControlLayout::kFirstOpSlot + signalled + device_only);
  }
}

TEST(SlotMap, RanksAskingAlikeGetTheSameMap) {
  const uint64_t seed = std::random_device{}();
  const std::vector<Ask> asks = RandomAsks(seed);
  const SlotMap a = Laid(asks), b = Laid(asks);
  for (const Ask& ask : asks) {
    SlotRange ra, rb;
    ASSERT_EQ(a.Find(ask.name.c_str(), &ra), xcclSuccess);
    ASSERT_EQ(b.Find(ask.name.c_str(), &rb), xcclSuccess);
    EXPECT_EQ(ra.first, rb.first) << ask.name << " seed " << seed;
  }
  EXPECT_EQ(a.end(), b.end());
}

// A transport takes only counts from a laid map: an empty geometry would put the ops' slots on
// the transport's own words.
TEST(SlotMap, TransportsRefuseCountsNotFromALaidMap) {
  WindowGeometry empty;
  EXPECT_EQ(CheckSlotCounts(empty), xcclInternalError);
  EXPECT_NE(ThreadLastError().find("not a laid slot map"), std::string::npos) << ThreadLastError();
  SlotMap map;
  ASSERT_EQ(map.Reserve("arrivals", 3, SlotReach::kSignalled), xcclSuccess);
  ASSERT_EQ(map.Reserve("rings", 7, SlotReach::kDeviceOnly), xcclSuccess);
  map.Lay();
  WindowGeometry laid;
  laid.slot_count = map.end();
  laid.signalled_slots = map.signalled_end();
  EXPECT_EQ(CheckSlotCounts(laid), xcclSuccess) << ThreadLastError();
  WindowGeometry inverted = laid;
  std::swap(inverted.slot_count, inverted.signalled_slots);
  EXPECT_EQ(CheckSlotCounts(inverted), xcclInternalError);
}

TEST(SlotMap, MisuseIsRefusedWithAMessage) {
  SlotMap map;
  ASSERT_EQ(map.Reserve("barrier", 4, SlotReach::kSignalled), xcclSuccess);
  EXPECT_EQ(map.Reserve("barrier", 4, SlotReach::kDeviceOnly), xcclInternalError);
  EXPECT_NE(ThreadLastError().find("'barrier' asked for twice"), std::string::npos)
      << ThreadLastError();
  EXPECT_EQ(map.Reserve("negative", -1, SlotReach::kSignalled), xcclInternalError);
  SlotRange range;
  EXPECT_EQ(map.Find("barrier", &range), xcclInternalError);
  EXPECT_NE(ThreadLastError().find("before the map was laid"), std::string::npos)
      << ThreadLastError();
  map.Lay();
  EXPECT_EQ(map.Find("barrier", &range), xcclSuccess);
  EXPECT_EQ(range.first, ControlLayout::kFirstOpSlot);
  map.Lay();  // once laid, the map stays as it is
  SlotRange again;
  EXPECT_EQ(map.Find("barrier", &again), xcclSuccess);
  EXPECT_EQ(again.first, range.first);
  EXPECT_EQ(map.end(), ControlLayout::kFirstOpSlot + 4);
  EXPECT_EQ(map.Find("missing", &range), xcclInternalError);
  EXPECT_NE(ThreadLastError().find("no control slots named 'missing'"), std::string::npos)
      << ThreadLastError();
  EXPECT_EQ(map.Reserve("late", 1, SlotReach::kSignalled), xcclInternalError);
  EXPECT_NE(ThreadLastError().find("after the map was laid"), std::string::npos)
      << ThreadLastError();
}

}  // namespace
}  // namespace xccl
