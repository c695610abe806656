#include "transport/net/net_transport.h"

#include <utility>

#include "base/error.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"
#include "transport/net/net_choice.h"
#include "transport/net/net_connection.h"

namespace xccl {

xcclResult_t NetEndpoint::NetPutDestination(int peer, const NetOp& /*op*/, char** dst,
                                            PlatformFailure* failure) {
  *dst = nullptr;
  return SetFailure(failure, xcclInvalidUsage, peer,
                    "rank %d put into a buffer of this rank: this platform publishes no buffer "
                    "to other nodes",
                    peer);
}

std::unique_ptr<Connection> NetEndpoint::NetConnect(NetTransport* net, int peer) {
  return std::make_unique<NetConnection>(&net->proxy(), peer, net->rank() * net->slice_bytes());
}

NetTransport::NetTransport(const Topology& topology, const Params& params, int signalled_slots,
                           size_t slice_bytes, int64_t timeout_ms, NetEndpoint* endpoint)
    : topology_(topology),
      params_(params),
      timeout_ms_(timeout_ms),
      signalled_slots_(signalled_slots),
      slice_bytes_(slice_bytes),
      endpoint_(endpoint) {}

xcclResult_t NetTransport::Connect(Bootstrap* bootstrap, bool prepared) {
  int failed = -1;
  XCCL_TRY(ExchangeVerdicts(bootstrap, prepared, &failed));
  if (failed >= 0)
    return Fail(xcclRemoteError, "rank %d could not make its memory for the net transport", failed);
  std::unique_ptr<NetBackend> net, beats;
  XCCL_TRY(OpenNetBackends(bootstrap, params_, topology_, &net, &beats));
  proxy_ = std::make_unique<Proxy>(topology_, this, timeout_ms_);
  if (TriggerFeed* feed = endpoint_->net_feed()) proxy_->SetTriggerFeed(feed);
  XCCL_TRY(proxy_->Connect(bootstrap, std::move(net), std::move(beats)));
  connections_.resize(topology_.nranks);
  for (int peer = 0; peer < topology_.nranks; ++peer)
    if (IsRemote(peer)) connections_[peer] = endpoint_->NetConnect(this, peer);
  return xcclSuccess;
}

NetTransport::~NetTransport() {
  if (!proxy_) return;
  // Everything this rank launched reaches the proxy and goes out before the proxy tells the other
  // nodes that this rank closes in order (a proxy destroyed with ops queued drops them).
  const Deadline deadline(timeout_ms_);
  proxy_->Kick();
  (void)endpoint_->NetDrain(deadline);
  PlatformFailure ignored;
  for (int peer = 0; peer < topology_.nranks; ++peer)
    if (IsRemote(peer)) (void)proxy_->Flush(peer, deadline, &ignored);
  proxy_.reset();
}

xcclResult_t NetTransport::Flush(const Deadline& deadline, PlatformFailure* failure) {
  return FlushEach(connections_, deadline, failure);
}

std::string NetTransport::Describe() const {
  const std::string endpoint = endpoint_->NetDescribe();
  return endpoint.empty() ? proxy_->Describe() : endpoint + "; " + proxy_->Describe();
}

void NetTransport::Abort(int failed_peer) {
  endpoint_->NetGiveUp();
  if (proxy_) proxy_->Abort(failed_peer);
}

xcclResult_t NetTransport::Destination(int peer, const NetOp& op, char** dst,
                                       PlatformFailure* failure) {
  *dst = nullptr;
  XCCL_TRY(CheckWireOp(peer, op, signalled_slots_, failure));
  switch (op.kind) {
    case NetOp::kSignal:
      return xcclSuccess;
    case NetOp::kRegion: {
      const size_t slice = endpoint_->net_slice_bytes();
      if (op.bytes > slice || op.offset > slice - op.bytes)
        return SetFailure(failure, xcclInvalidUsage, peer,
                          "rank %d sent %llu bytes at offset %llu of its slice of %zu bytes: the "
                          "ranks differ in %s",
                          peer, static_cast<unsigned long long>(op.bytes),
                          static_cast<unsigned long long>(op.offset), slice,
                          endpoint_->net_slice_setting());
      *dst = endpoint_->NetRegion(peer, op.offset);
      return xcclSuccess;
    }
    case NetOp::kPut:
      // A put of no bytes lands nothing: it is its flag only.
      if (op.bytes == 0) return xcclSuccess;
      return endpoint_->NetPutDestination(peer, op, dst, failure);
  }
  return SetFailure(failure, xcclRemoteError, peer, "rank %d sent an op of unknown kind %u", peer,
                    op.kind);
}

void NetTransport::Landed(int peer, const NetOp& op) {
  if (op.kind == NetOp::kPut && op.bytes > 0) endpoint_->NetPutEnded(peer, op);
  endpoint_->NetRaise(peer, op);
}

void NetTransport::Abandoned(int peer, const NetOp& op) {
  if (op.kind == NetOp::kPut && op.bytes > 0) endpoint_->NetPutEnded(peer, op);
}

void NetTransport::LinkFailed(int peer, const PlatformFailure& failure) {
  endpoint_->NetLinkFailed(peer, failure);
}

}  // namespace xccl
