// The check every net landing makes first (transport/net/proxy/proxy.h, CheckWireOp): the wire is
// not trusted with memory, so an op may raise only an op's slot that a connection may raise
// (from the first op slot to below the laid map's signalled end: never the transport's own
// words, a device-only counter nor past the window) or none, and a signal carries no bytes;
// every refusal names the sending rank.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "base/failure.h"
#include "transport/net/proxy/proxy.h"
#include "transport/slot_map.h"
#include "transport/window.h"

namespace xccl {
namespace {

TEST(CheckWireOp, OnlySignalledSlotsOrNoneAndSignalsWithoutBytes) {
  // A map as a communicator lays it: signalled ranges, then device-only ones after them.
  SlotMap map;
  ASSERT_EQ(map.Reserve("arrivals", 8, SlotReach::kSignalled), xcclSuccess);
  ASSERT_EQ(map.Reserve("counters", 100, SlotReach::kDeviceOnly), xcclSuccess);
  ASSERT_EQ(map.Reserve("barrier", 8, SlotReach::kSignalled), xcclSuccess);
  map.Lay();
  const int signalled = map.signalled_end();
  SlotRange counters;
  ASSERT_EQ(map.Find("counters", &counters), xcclSuccess);

  std::mt19937 rng(std::random_device{}());
  const int peer = 1 + static_cast<int>(rng() % 30);
  auto check = [&](uint32_t kind, int slot, uint64_t bytes, PlatformFailure* failure) {
    NetOp op;
    op.kind = kind;
    op.slot = slot;
    op.epoch = static_cast<uint32_t>(rng());
    op.bytes = bytes;
    return CheckWireOp(peer, op, signalled, failure);
  };
  PlatformFailure none;
  EXPECT_EQ(check(NetOp::kRegion, ControlLayout::kNoSignal, 64, &none), xcclSuccess);
  for (int slot = ControlLayout::kFirstOpSlot; slot < signalled; ++slot) {
    PlatformFailure failure;
    EXPECT_EQ(check(NetOp::kRegion, slot, 1 + rng() % 4096, &failure), xcclSuccess) << slot;
    EXPECT_EQ(check(NetOp::kSignal, slot, 0, &failure), xcclSuccess) << slot;
  }
  for (int slot :
       {signalled, counters.first, counters.end() - 1, map.end(), map.end() + 1000, -2, -1000, 0,
        ControlLayout::kAbort, ControlLayout::kRecvBlockSignal, ControlLayout::kFirstOpSlot - 1}) {
    PlatformFailure failure;
    EXPECT_EQ(check(NetOp::kPut, slot, 64, &failure), xcclRemoteError) << slot;
    EXPECT_EQ(failure.peer, peer);
    EXPECT_NE(failure.message.find("slot " + std::to_string(slot)), std::string::npos)
        << failure.message;
  }
  PlatformFailure failure;
  EXPECT_EQ(check(NetOp::kSignal, ControlLayout::kFirstOpSlot, 8, &failure), xcclRemoteError);
  EXPECT_NE(failure.message.find("a signal with 8 bytes"), std::string::npos) << failure.message;
}

}  // namespace
}  // namespace xccl
