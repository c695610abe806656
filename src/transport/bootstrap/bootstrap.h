// TCP rendezvous: the unique id names a root address and a random secret. Every rank sends
// the root a hello (secret, rank, nranks, its own listening address); the root answers every
// rank with the table of all addresses; the ranks then connect a ring (rank -> rank+1) over
// which AllGather and Barrier run. Every socket operation has a deadline; connections with a
// wrong secret, a bad size or garbage are refused and logged, never crash or stall the root.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "xccl.h"

namespace xccl {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  // xcclGetUniqueId: a fresh secret and the root's address; unless XCCL_COMM_ID is set, starts
  // the root in a detached thread of this process that serves exactly one rendezvous.
  static xcclResult_t CreateUniqueId(xcclUniqueId* id);

  // Joins the rendezvous named by `id` as `rank` of `nranks` (with XCCL_COMM_ID, rank 0 also
  // serves the root). Fails with xcclInvalidUsage for an id this process already used,
  // xcclTimeout naming the missing ranks after `timeout_ms`, xcclInvalidUsage when ranks
  // disagree on nranks or two claim one rank.
  static xcclResult_t Init(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                           std::unique_ptr<Bootstrap>* out);

  virtual int rank() const = 0;
  virtual int nranks() const = 0;

  // In place over the ring: `data` holds nranks blocks of `block_bytes`, this rank's at
  // rank * block_bytes; on return every block is filled. Deadline as given to Init.
  virtual xcclResult_t AllGather(void* data, size_t block_bytes) = 0;
  virtual xcclResult_t Barrier() = 0;

  // Closes every socket so that a bootstrap call blocked in another thread returns an error.
  virtual void Abort() = 0;
};

}  // namespace xccl
