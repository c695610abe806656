#include "transport/peer_transports.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "base/logging.h"

namespace xccl {

PeerTransports::PeerTransports(const Topology& topology, std::unique_ptr<Transport> node,
                               std::unique_ptr<NetEndpoint> endpoint,
                               std::unique_ptr<NetTransport> net)
    : topology_(topology),
      node_(std::move(node)),
      node_puts_(node_->direct_puts()),
      endpoint_(std::move(endpoint)),
      net_(std::move(net)) {
  if (net_) node_->WatchRemotePeers(net_.get());
}

PeerTransports::~PeerTransports() {
  if (net_) {
    // Once the device is done, a failure it recorded is seen, and then the endpoint expects no
    // more launched ops (a GPU trigger that gave up never writes its entry), so the close does
    // not wait for them.
    net_->Settle();
    PlatformFailure seen;
    if (node_->PollAsyncFailure(&seen) != xcclSuccess) net_->GiveUp();
  }
  node_->WatchRemotePeers(nullptr);  // before the net transport goes: the node's threads use it
  net_.reset();
  endpoint_.reset();
}

xcclResult_t PeerTransports::BeginOperation(xcclStream_t stream, bool queued,
                                            PlatformFailure* failure) {
  if (net_) net_->Begin(stream);
  XCCL_TRY(node_->BeginOperation(stream, queued, failure));
  // A launch failure the net ops left behind an operation that ended early.
  return net_ ? net_->TakeLaunchFailure(failure) : xcclSuccess;
}

xcclResult_t PeerTransports::Flush(const Deadline& deadline, PlatformFailure* failure) {
  const xcclResult_t node = node_->Flush(deadline, failure);
  if (!net_) return node;
  PlatformFailure net_failure;
  const xcclResult_t net = net_->Flush(deadline, &net_failure);
  if (node != xcclSuccess) return node;
  if (net != xcclSuccess) *failure = net_failure;
  return net;
}

xcclResult_t PeerTransports::WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                                      const Deadline& deadline, xcclStream_t stream,
                                      PlatformFailure* failure) {
  if (peer >= 0 && peer < topology_.nranks && IsRemote(peer)) net_->Kick();
  return node_->WaitSlot(slot, epoch, peer, what, deadline, stream, failure);
}

xcclResult_t PeerTransports::WaitSlotsRaisedBy(int first_slot, uint32_t epoch,
                                               const std::vector<int>& raiser, const char* what,
                                               const Deadline& deadline, xcclStream_t stream,
                                               PlatformFailure* failure) {
  if (net_ && std::any_of(raiser.begin(), raiser.end(),
                          [this](int r) { return r >= 0 && r < topology_.nranks && IsRemote(r); }))
    net_->Kick();  // keeps the proxy polling while the wait is near
  XCCL_TRY(node_->WaitSlotsRaisedBy(first_slot, epoch, raiser, what, deadline, stream, failure));
  return net_ ? net_->TakeLaunchFailure(failure) : xcclSuccess;
}

size_t PeerTransports::region_put_limit() const {
  const size_t node = node_->region_put_limit();
  return net_ ? std::min(node, net_->endpoint().net_slice_bytes()) : node;
}

const char* PeerTransports::Received(int carrier, size_t region_offset) const {
  if (IsRemote(carrier)) return net_->Received(carrier, region_offset);
  return node_->Received(carrier, region_offset);
}

xcclResult_t PeerTransports::PollAsyncFailure(PlatformFailure* failure) {
  const xcclResult_t result = node_->PollAsyncFailure(failure);
  if (result == xcclSuccess || !net_) return result;
  net_->GiveUp();
  // A device wait across nodes that failed: where the net path stood, once, for a diagnosis.
  if (!net_state_logged_.exchange(true))
    XCCL_WARN(kLogPlatform, "rank %d, at its failure (%s): %s", topology_.rank,
              failure->message.c_str(), net_->Describe().c_str());
  return result;
}

void PeerTransports::Abort(int failed_peer) {
  const int blamed = node_->RootCause(failed_peer);
  node_->Abort(failed_peer);
  if (net_) net_->Abort(blamed);
}

xcclResult_t PeerTransports::PutNow(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                                    size_t bytes, int signal_slot, PlatformFailure* failure) {
  if (!IsRemote(peer))
    return node_puts_->PutNow(peer, epoch, src, dst_offset, bytes, signal_slot, failure);
  // Queued on the proxy; the operation's flush waits for it.
  net_->connection(peer).Put(epoch, nullptr, dst_offset, src, bytes, signal_slot);
  return xcclSuccess;
}

}  // namespace xccl
