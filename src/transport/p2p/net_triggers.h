// GPU ranks across nodes: the stream-ordered hand-off of a net op to the proxy. The op's bytes
// are staged on the stream first; then a host function on the same stream (a host node when the
// stream is being captured, run on every replay) queues the op on the proxy with the epoch the
// device held at that point of the stream, mirrored into pinned memory just before. The
// callback makes no GPU runtime call (the runtime forbids it) and only takes the proxy's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "proxy/proxy.h"

namespace xccl {

class NetTriggers {
 public:
  struct Trigger {
    Proxy* proxy = nullptr;
    int peer = -1;
    NetOp op;                                  // its epoch is read from `epoch` when it fires
    const void* src = nullptr;                 // pinned staging holding the op's bytes
    const volatile uint32_t* epoch = nullptr;  // pinned mirror of the device epoch
    NetTriggers* pool = nullptr;
    bool kept = false;  // captured into a graph: fires on every replay, never reused
  };

  NetTriggers() = default;
  NetTriggers(const NetTriggers&) = delete;
  NetTriggers& operator=(const NetTriggers&) = delete;

  // A record for one enqueue. `kept`: the stream is capturing, so the record must live as long
  // as the graph may be replayed (here: as long as this pool, the transport's). Else it returns
  // to the pool once it fired, so a long run of calls reuses a handful of records.
  Trigger* Take(bool kept);
  // A record that was never enqueued (its launch failed).
  void Give(Trigger* trigger);
  // The host function (gpuHostFn_t): queues the op on the proxy.
  static void Fire(void* trigger);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Trigger>> all_;
  std::vector<Trigger*> free_;
};

}  // namespace xccl
