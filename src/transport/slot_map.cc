#include "transport/slot_map.h"

#include "base/error.h"
#include "transport/window.h"

namespace xccl {

xcclResult_t SlotMap::Reserve(const std::string& name, int count, SlotReach reach) {
  if (laid_)
    return Fail(xcclInternalError, "control slots '%s' asked for after the map was laid",
                name.c_str());
  if (count < 0)
    return Fail(xcclInternalError, "control slots '%s': %d slots asked for", name.c_str(), count);
  for (const Entry& entry : entries_)
    if (entry.name == name)
      return Fail(xcclInternalError, "control slots '%s' asked for twice", name.c_str());
  entries_.push_back({name, reach, SlotRange{0, count}});
  return xcclSuccess;
}

xcclResult_t SlotName::Reserve(int count, SlotMap* slots) const {
  return slots->Reserve(name, count, reach);
}

xcclResult_t SlotName::Find(const SlotMap& slots, SlotRange* out) const {
  return slots.Find(name, out);
}

void SlotMap::Lay() {
  if (laid_) return;  // the ranges are placed once; asks after it are refused
  int next = ControlLayout::kFirstOpSlot;
  for (SlotReach reach : {SlotReach::kSignalled, SlotReach::kDeviceOnly}) {
    for (Entry& entry : entries_) {
      if (entry.reach != reach) continue;
      entry.range.first = next;
      next += entry.range.count;
    }
    if (reach == SlotReach::kSignalled) signalled_end_ = next;
  }
  end_ = next;
  laid_ = true;
}

xcclResult_t SlotMap::Find(const char* name, SlotRange* out) const {
  if (!laid_)
    return Fail(xcclInternalError, "control slots '%s' looked up before the map was laid", name);
  for (const Entry& entry : entries_) {
    if (entry.name != name) continue;
    *out = entry.range;
    return xcclSuccess;
  }
  return Fail(xcclInternalError, "no control slots named '%s' were asked for at init", name);
}

}  // namespace xccl
