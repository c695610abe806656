// The control slots of every rank's window, handed out by name at init (docs/ARCHITECTURE.md,
// "Control slots"): each op that signals or counts in a window asks here for the slots it needs
// before the transport maps the windows, so no op keeps a first index of its own and the window
// is sized from what was asked. Every rank runs the same code, so asks in the same order and
// gets the same map.
#pragma once

#include <string>
#include <vector>

#include "xccl.h"

namespace xccl {

// `count` slots from `first`: slot i of the range is first + i.
struct SlotRange {
  int first = 0;
  int count = 0;
  int at(int i) const { return first + i; }
  int end() const { return first + count; }
};

// Who raises a range's slots. Signalled ones may be raised by a connection (a Signal, a put's
// flag), also one from another node, whose landing area mirrors only them; device-only ones are
// read and written by kernels of the node's ranks alone.
enum class SlotReach { kSignalled, kDeviceOnly };

class SlotMap;

// An op's range, named once where the op lives: asked for at init, found once the map is laid.
struct SlotName {
  const char* name;
  SlotReach reach;
  xcclResult_t Reserve(int count, SlotMap* slots) const;
  xcclResult_t Find(const SlotMap& slots, SlotRange* out) const;
};

class SlotMap {
 public:
  // Asks for `count` (>= 0) slots under `name`. A name asked twice is refused (two ops would
  // share slots), as is any ask after Lay.
  xcclResult_t Reserve(const std::string& name, int count, SlotReach reach);
  // Places every range: the transport's own words first (ControlLayout), then the signalled
  // ranges, then the device-only ones, each group in the order asked. Once: again, nothing.
  void Lay();
  // The range asked for under `name`; xcclInternalError where none was, or before Lay. A plain
  // string, as host paths look their ranges up per call.
  xcclResult_t Find(const char* name, SlotRange* out) const;
  // Slots a connection may raise lie below this.
  int signalled_end() const { return signalled_end_; }
  // Slots in all.
  int end() const { return end_; }
  bool laid() const { return laid_; }

 private:
  struct Entry {
    std::string name;
    SlotReach reach;
    SlotRange range;
  };
  std::vector<Entry> entries_;
  int signalled_end_ = 0;
  int end_ = 0;
  bool laid_ = false;
};

}  // namespace xccl
