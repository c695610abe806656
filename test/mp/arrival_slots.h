// For the transport tests below the collectives: a slot map laid as a communicator lays its map,
// one signalled slot per source (as all_gather's arrivals) after `others` slots of another op, so
// that a slot's index is not its source's.
#pragma once

#include <gtest/gtest.h>

#include "transport/slot_map.h"
#include "transport/transport.h"

namespace xccl {

struct ArrivalSlots {
  SlotRange arrivals;
  WindowGeometry geometry;
};

inline ArrivalSlots LayArrivalSlots(int others, int sources) {
  SlotMap map;
  ArrivalSlots made;
  EXPECT_EQ(map.Reserve("other", others, SlotReach::kSignalled), xcclSuccess);
  EXPECT_EQ(map.Reserve("arrivals", sources, SlotReach::kSignalled), xcclSuccess);
  map.Lay();
  EXPECT_EQ(map.Find("arrivals", &made.arrivals), xcclSuccess);
  made.geometry.slot_count = map.end();
  made.geometry.signalled_slots = map.signalled_end();
  return made;
}

}  // namespace xccl
