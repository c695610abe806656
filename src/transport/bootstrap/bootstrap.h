// TCP rendezvous: the unique id names a root address and a random secret. Every rank sends
// the root a hello (secret, rank, nranks, its own listening address); the root answers every
// rank with the address of rank+1; the ranks then connect a ring (rank -> rank+1) over which
// AllGather and Barrier run, and end Init by gathering every rank's listen address over it
// (the root sends each rank one address, not n: its traffic stays O(n)), for the point-to-point
// messages and the group calls built on them. Every socket operation has a deadline; connections
// with a wrong secret, a bad size or garbage are refused and logged, never crash or stall the root.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/params.h"
#include "xccl.h"

namespace xccl {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  // xcclGetUniqueId: a fresh secret and the root's address; unless params.comm_id
  // (XCCL_COMM_ID, host:port) names one, starts the root in a detached thread of this process
  // that serves exactly one rendezvous (on params.socket_ifname's interface, for at most
  // params.timeout_ms).
  static xcclResult_t CreateUniqueId(xcclUniqueId* id, const Params& params = Params());

  // Joins the rendezvous named by `id` as `rank` of `nranks` (with XCCL_COMM_ID, rank 0 also
  // serves the root). Fails with xcclInvalidUsage for an id this process already used,
  // xcclTimeout naming the missing ranks after `timeout_ms`, xcclInvalidUsage when ranks
  // disagree on nranks or two claim one rank. `socket_ifname` (XCCL_SOCKET_IFNAME) chooses the
  // interface this rank listens on; empty: the one that reached the root.
  static xcclResult_t Init(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                           std::unique_ptr<Bootstrap>* out, const std::string& socket_ifname = "");

  virtual int rank() const = 0;
  virtual int nranks() const = 0;

  // In place over the ring: `data` holds nranks blocks of `block_bytes`, this rank's at
  // rank * block_bytes; on return every block is filled. Deadline as given to Init.
  virtual xcclResult_t AllGather(void* data, size_t block_bytes) = 0;
  virtual xcclResult_t Barrier() = 0;

  // Tagged messages between two ranks; the others take no part. Messages from one rank to
  // another with the same tag are received in the order sent; a Recv may be posted before or
  // after its message arrives, and messages that arrive before anyone waits for them (other
  // tags, other peers) are kept for their own Recv. Send returns once its bytes are with the
  // kernel (the first Send to a peer also waits for that peer, inside some Send, Recv or group
  // call, to accept the connection). Each call waits at most the timeout given to Init
  // (xcclTimeout naming the peer). Send and Recv must agree on the size: the Recv fails with
  // xcclInvalidUsage naming peer, tag and both sizes, and so does the sender, in that Send if
  // still running, else in its next call that involves that peer; the pair is then unusable.
  // peer == rank() and tags with kReservedTagBit are xcclInvalidArgument.
  static constexpr uint32_t kReservedTagBit = 1u << 31;  // the group calls' tag space
  static constexpr size_t kMaxMessageBytes = size_t{1} << 30;
  virtual xcclResult_t Send(int peer, uint32_t tag, const void* data, size_t bytes) = 0;
  virtual xcclResult_t Recv(int peer, uint32_t tag, void* data, size_t bytes) = 0;

  // Collectives over a subset of ranks, built on Send/Recv. `ranks` is sorted, distinct,
  // contains this rank, and every member passes the same list (and the same block_bytes);
  // ranks outside it take no part. GroupAllGather: `data` holds ranks.size() blocks of
  // `block_bytes`, this rank's at its index in `ranks`; on return every block is filled.
  virtual xcclResult_t GroupAllGather(const std::vector<int>& ranks, void* data,
                                      size_t block_bytes) = 0;
  // No member returns before every member has entered.
  virtual xcclResult_t GroupBarrier(const std::vector<int>& ranks) = 0;

  // Makes a bootstrap call blocked in another thread return an error, and every later call
  // fail: the ring's sockets are shut at once, the point-to-point ones by the call it wakes
  // (or the next call). The only call that may overlap another: calls on one Bootstrap must
  // otherwise come one at a time (one thread, or serialised by the caller).
  virtual void Abort() = 0;
};

}  // namespace xccl
