// How this rank reaches each peer, chosen once at init from the topology and logged at
// XCCL_DEBUG=INFO: itself, a rank of this process, a rank of another process on this node over
// GPU peer mappings (p2p) or over shared memory (shm), a rank of another node over the network
// (net). A Connection per peer then carries puts
// and their flags to that peer, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/deadline.h"
#include "base/failure.h"
#include "base/topology.h"
#include "xccl.h"

namespace xccl {

enum class TransportKind { kSelf, kSameProcess, kP2p, kShm, kNet };

const char* TransportKindName(TransportKind kind);

// `device_memory`: the ranks' buffers are GPU memory (another process is then reached over
// p2p mappings), else host memory (over shm and cross-memory copies).
TransportKind ChooseTransport(const Topology& topology, int peer, bool device_memory);

// Logs this rank's transport to every peer, one line per kind with its peers.
void LogTransports(const Topology& topology, bool device_memory);

// One peer. Everything queued on a connection reaches the peer in the order it was queued, and
// each flag only after the bytes queued before it: a receiver waits on its own slots only,
// whatever carried the data. `epoch` is the operation's (the host's count; GPU connections
// signal the device's own epoch instead, so that a graph replay signals the replay's).
class Connection {
 public:
  virtual ~Connection() = default;
  int peer() const { return peer_; }
  TransportKind kind() const { return kind_; }

  // `bytes` from `src` to `dst_offset` in the peer's buffer `dst` (as Transport::MapPeerBuffers
  // gave it; nullptr: the receive buffer the peer published for `epoch`, DirectPuts), then the
  // peer's slot `signal_slot` (ControlLayout::kNoSignal: none).
  virtual void Put(uint32_t epoch, void* dst, size_t dst_offset, const void* src, size_t bytes,
                   int signal_slot) = 0;
  // `bytes` into the peer's receive region at `region_offset` (Transport::slice_bytes: the
  // region is one slice per rank, laid out by the algorithm that uses it), then the peer's slot
  // `signal_slot`. A connection to another node carries puts into this rank's own slice only
  // (at rank * slice_bytes and up); GPU ones only at its start.
  virtual void PutToRegion(uint32_t epoch, size_t region_offset, const void* src, size_t bytes,
                           int signal_slot) = 0;
  // The peer's slot `slot`, after everything queued before it.
  virtual void Signal(int slot, uint32_t epoch) = 0;
  // Until everything queued so far has landed (host), or the operation's stream is ordered after
  // it (GPU); the first failure since the last flush.
  virtual xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) = 0;

 protected:
  Connection(int peer, TransportKind kind) : peer_(peer), kind_(kind) {}

 private:
  int peer_;
  TransportKind kind_;
};

// Every connection flushed (null ones skipped: this rank, or peers another transport reaches);
// the first failure.
xcclResult_t FlushEach(const std::vector<std::unique_ptr<Connection>>& connections,
                       const Deadline& deadline, PlatformFailure* failure);

}  // namespace xccl
