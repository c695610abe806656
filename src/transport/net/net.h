// The network between nodes, shaped like NCCL's net plugin interface (ncclNet v8): devices and
// their properties; listen, connect and accept that never block (a connect or accept in
// progress leaves its output empty: call again); memory registration; isend, irecv and test;
// flush; close (the destructors). A send comm carries messages one way, and the i-th receive posted
// on a receive comm takes the i-th message sent on its peer: tags must agree and the message must
// fit, else the receiver fails with a clear error. Nothing here waits; the caller (the proxy) polls
// with deadlines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "xccl.h"

namespace xccl {

// What a listener publishes for its peers (out of band, over the bootstrap).
constexpr size_t kNetHandleBytes = 128;
struct NetHandle {
  uint8_t bytes[kNetHandleBytes];
};

enum class NetMemory { kHost, kDevice };

struct NetProperties {
  std::string name;            // the interface or HCA, e.g. "eth0", "mlx5_0"
  int speed_mbps = 0;          // 0 where unknown
  bool host_memory = true;     // registers host memory
  bool device_memory = false;  // registers GPU memory (dma-buf)
  int max_comms = 0;           // 0: no limit of its own
  int max_requests = 0;        // requests in flight per comm
};

// A posted send or receive; owned by its comm, valid until Test reports it done.
struct NetRequest;

// A registration of memory with a comm (opaque; the socket backend's is a no-op).
struct NetRegistration;

class NetSendComm {
 public:
  virtual ~NetSendComm() = default;
  // Progresses the connection's handshake; *ready once sends can be posted. A refused or reset
  // connection is an error (the caller retries within its deadline where the peer may not be
  // listening yet).
  virtual xcclResult_t Ready(bool* ready) = 0;
  virtual xcclResult_t Register(void* data, size_t bytes, NetMemory type,
                                NetRegistration** out) = 0;
  virtual void Deregister(NetRegistration* registration) = 0;
  // Posts `bytes` from `data` with `tag`. *request stays nullptr when no slot is free now.
  virtual xcclResult_t Isend(const void* data, size_t bytes, uint32_t tag,
                             NetRegistration* registration, NetRequest** request) = 0;
  // Progresses every request of the comm; *done when `request` completed (it is then freed).
  virtual xcclResult_t Test(NetRequest* request, bool* done, size_t* bytes) = 0;
  // Bytes handed to the network that the peer's host has not acknowledged yet, -1 where the
  // backend cannot tell. 0 on a silent peer means its host and the path to it are alive: the
  // process is slow, not gone (docs/ARCHITECTURE.md, "Across nodes (host platform)").
  virtual int64_t unacknowledged_bytes() const { return -1; }
};

class NetRecvComm {
 public:
  virtual ~NetRecvComm() = default;
  virtual xcclResult_t Register(void* data, size_t bytes, NetMemory type,
                                NetRegistration** out) = 0;
  virtual void Deregister(NetRegistration* registration) = 0;
  // Posts a receive of at most `capacity` bytes into `data` for a message tagged `tag`.
  // *request stays nullptr when no slot is free now.
  virtual xcclResult_t Irecv(void* data, size_t capacity, uint32_t tag,
                             NetRegistration* registration, NetRequest** request) = 0;
  // Makes received data visible to the GPU (device memory written by a NIC); nullptr where
  // there is nothing to flush (host memory, the socket backend).
  virtual xcclResult_t Iflush(void* data, size_t bytes, NetRegistration* registration,
                              NetRequest** request) = 0;
  // *bytes: the size the message had.
  virtual xcclResult_t Test(NetRequest* request, bool* done, size_t* bytes) = 0;
  // Grows whenever bytes arrive, message boundaries or not: the proxy's liveness watch tells a
  // long message still arriving from a link that went silent.
  virtual uint64_t bytes_arrived() const = 0;
};

class NetListenComm {
 public:
  virtual ~NetListenComm() = default;
};

class NetBackend {
 public:
  virtual ~NetBackend() = default;
  virtual const char* name() const = 0;
  virtual int device_count() const = 0;
  virtual xcclResult_t GetProperties(int device, NetProperties* out) const = 0;
  virtual xcclResult_t Listen(int device, NetHandle* handle,
                              std::unique_ptr<NetListenComm>* out) = 0;
  // Non-blocking: starts connecting to a listener's handle and returns the comm at once; its
  // Ready() completes the handshake.
  virtual xcclResult_t Connect(int device, const NetHandle& handle,
                               std::unique_ptr<NetSendComm>* out) = 0;
  // Non-blocking: *out stays empty until a connector's handshake is complete.
  virtual xcclResult_t Accept(NetListenComm* listener, std::unique_ptr<NetRecvComm>* out) = 0;
};

}  // namespace xccl
