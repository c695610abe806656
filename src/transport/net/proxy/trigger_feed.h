// Ops that reach the proxy without a call of this rank's host thread: a GPU stream's triggers,
// written into host-mapped memory by a kernel when the stream gets there (docs/ARCHITECTURE.md,
// "GPU ranks across nodes"). The proxy thread polls the feed on every pass, so no runtime worker
// thread stands between a stream and the network.
#pragma once

namespace xccl {

class Proxy;

class TriggerFeed {
 public:
  virtual ~TriggerFeed() = default;
  // Proxy thread: queues every op triggered since the last call (Proxy::Enqueue); true if any.
  virtual bool Drain(Proxy& proxy) = 0;
  // True while triggers the host launched have not arrived yet: the proxy keeps polling
  // instead of napping (a stream held on the device fires them late).
  virtual bool Expecting() const = 0;
  // The longest nap that still serves triggers no host call announces (graph replays).
  virtual int MaxNapUs() const = 0;
};

}  // namespace xccl
