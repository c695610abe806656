// The transport to the ranks of other nodes (docs/ARCHITECTURE.md, "Transports per peer"): the
// proxy under it, a connection per remote peer, and the one NetLanding, which checks every op
// that comes off the wire and asks the rank's NetEndpoint where it lands. The memory an op lands
// in is the rank's own (its window on the host platform, pinned staging on GPUs): the endpoint
// says where, and raises the slot the rank waits on, whatever carried the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "transport/connection.h"
#include "transport/net/proxy/proxy.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;
class NetTransport;

// What the platform gives the net transport: this rank's landing memory and how its own sources
// reach the proxy.
class NetEndpoint {
 public:
  virtual ~NetEndpoint() = default;
  // The bytes of this rank's landing memory for each rank of another node (its slice of the
  // region, or less), and the setting that sizes it (for the error when ranks differ in it).
  virtual size_t net_slice_bytes() const = 0;
  virtual const char* net_slice_setting() const = 0;
  // Where `peer`'s region op at `slice_offset` of its slice lands; read by the algorithm after
  // the slot was raised (Transport::Received).
  virtual char* NetRegion(int peer, size_t slice_offset) const = 0;
  // Where a put into a published receive buffer lands (xcclSuccess with *dst nullptr: not
  // published yet, asked again). By default refused: nothing of this rank is published.
  virtual xcclResult_t NetPutDestination(int peer, const NetOp& op, char** dst,
                                         PlatformFailure* failure);
  // A put given a destination has landed or never will.
  virtual void NetPutEnded(int /*peer*/, const NetOp& /*op*/) {}
  // After an op's bytes have landed: its slot (ControlLayout::kNoSignal: none) <- its epoch.
  virtual void NetRaise(int peer, const NetOp& op) = 0;
  // A link failed (proxy thread, once per link): waits that the host does not poll end here.
  virtual void NetLinkFailed(int /*peer*/, const PlatformFailure& /*failure*/) {}
  // A connection to `peer` for this rank's sources; by default host memory queued straight on
  // the proxy (NetConnection).
  virtual std::unique_ptr<Connection> NetConnect(NetTransport* net, int peer);
  // Stream-ordered connections: the operation's stream; ops before the next flush use it.
  virtual void NetBegin(xcclStream_t /*stream*/) {}
  // Ops this rank launched that the proxy must still take before it may close (a GPU trigger
  // FIFO), drained before the close; given up after a failure.
  virtual TriggerFeed* net_feed() { return nullptr; }
  // At destroy, first: the device has finished what it was given (so a launched op either wrote
  // its entry or gave up), before the rank's failure is polled and the feed drained.
  virtual void NetSettle() {}
  virtual xcclResult_t NetDrain(const Deadline& /*deadline*/) { return xcclSuccess; }
  // A launch failure of this rank's net ops not yet reported by a flush (GPU), else success.
  virtual xcclResult_t NetTakeLaunchFailure(PlatformFailure* /*failure*/) { return xcclSuccess; }
  virtual void NetGiveUp() {}
  virtual std::string NetDescribe() const { return std::string(); }
};

class NetTransport final : public NetLanding, public RemotePeers {
 public:
  // `signalled_slots`: the slots an op may raise (WindowGeometry); `slice_bytes`: the node
  // transport's (Transport::slice_bytes), where this rank's own slice of a peer's region starts.
  NetTransport(const Topology& topology, const Params& params, int signalled_slots,
               size_t slice_bytes, int64_t timeout_ms, NetEndpoint* endpoint);
  ~NetTransport() override;
  NetTransport(const NetTransport&) = delete;
  NetTransport& operator=(const NetTransport&) = delete;

  // Collective over every rank (those without a remote peer take part too): the net backend
  // (XCCL_NET, one choice for all), the proxy's connections, a connection per remote peer.
  // `prepared`: whether this rank's endpoint could make its memory (a verdict for all).
  xcclResult_t Connect(Bootstrap* bootstrap, bool prepared);

  bool IsRemote(int peer) const {
    return topology_.node_of_rank[peer] != topology_.node_of_rank[topology_.rank];
  }
  Connection& connection(int peer) { return *connections_[peer]; }
  Proxy& proxy() { return *proxy_; }
  int rank() const { return topology_.rank; }
  size_t slice_bytes() const { return slice_bytes_; }
  int64_t timeout_ms() const { return timeout_ms_; }
  // Where `carrier`'s put at `region_offset` of this rank's region landed (an offset within the
  // carrier's own slice: a rank of another node puts nowhere else).
  const char* Received(int carrier, size_t region_offset) const {
    return endpoint_->NetRegion(carrier, region_offset - carrier * slice_bytes_);
  }

  void Begin(xcclStream_t stream) { endpoint_->NetBegin(stream); }
  // Every remote connection flushed; the first failure.
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure);
  // RemotePeers: the proxy polls while a wait is near; a peer's links failed.
  void Kick() override { proxy_->Kick(); }
  bool PeerFailed(int peer, PlatformFailure* failure) const override {
    return proxy_->PeerFailed(peer, failure);
  }
  const NetEndpoint& endpoint() const { return *endpoint_; }
  // After this rank failed: the endpoint stops expecting launched ops.
  void GiveUp() override { endpoint_->NetGiveUp(); }
  void Settle() { endpoint_->NetSettle(); }
  xcclResult_t TakeLaunchFailure(PlatformFailure* failure) {
    return endpoint_->NetTakeLaunchFailure(failure);
  }
  std::string Describe() const;
  // Tells every remote peer that this rank failed because of `failed_peer`, closes the links.
  void Abort(int failed_peer);

  // NetLanding.
  xcclResult_t Destination(int peer, const NetOp& op, char** dst,
                           PlatformFailure* failure) override;
  void Landed(int peer, const NetOp& op) override;
  void Abandoned(int peer, const NetOp& op) override;
  void LinkFailed(int peer, const PlatformFailure& failure) override;

 private:
  Topology topology_;
  Params params_;
  int64_t timeout_ms_;
  int signalled_slots_;
  size_t slice_bytes_;
  NetEndpoint* endpoint_;
  std::unique_ptr<Proxy> proxy_;
  std::vector<std::unique_ptr<Connection>> connections_;  // null on this node
};

}  // namespace xccl
