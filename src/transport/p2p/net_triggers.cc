#include "transport/p2p/net_triggers.h"

namespace xccl {

NetTriggers::Trigger* NetTriggers::Take(bool kept) {
  std::lock_guard<std::mutex> lock(mutex_);
  Trigger* trigger = nullptr;
  if (!kept && !free_.empty()) {
    trigger = free_.back();
    free_.pop_back();
  } else {
    all_.push_back(std::make_unique<Trigger>());
    trigger = all_.back().get();
  }
  trigger->pool = this;
  trigger->kept = kept;
  return trigger;
}

void NetTriggers::Give(Trigger* trigger) {
  std::lock_guard<std::mutex> lock(mutex_);
  trigger->kept = false;
  free_.push_back(trigger);
}

void NetTriggers::Fire(void* opaque) {
  Trigger* trigger = static_cast<Trigger*>(opaque);
  NetOp op = trigger->op;
  // The stream finished the mirror's copy before this function was called.
  op.epoch = *trigger->epoch;
  Proxy* proxy = trigger->proxy;
  const int peer = trigger->peer;
  const void* src = trigger->src;
  if (!trigger->kept) trigger->pool->Give(trigger);
  proxy->Enqueue(peer, op, src);
}

}  // namespace xccl
