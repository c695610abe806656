// TCP sockets for the bootstrap: IPv4 and IPv6, every wait bounded by a deadline, never a
// SIGPIPE. I/O calls return an IoStatus instead of failing loudly, because the caller knows
// which peer (rank, hostile client) is at the other end and words the error itself.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "xccl.h"

namespace xccl {

struct IoStatus {
  enum Code { kOk, kTimeout, kClosed, kError };
  Code code = kOk;
  int err = 0;  // errno for kError, and the last connect() error for a connect kTimeout

  bool ok() const { return code == kOk; }
  // "timed out", "connection closed by peer", "Connection reset by peer", ...
  std::string Describe() const;
};

// "10.0.0.1:5000", "[fd00::2]:5000" ("[fe80::1%2]:5000" with a scope).
std::string FormatAddress(const sockaddr_storage& addr);
socklen_t AddressLength(const sockaddr_storage& addr);
bool SameAddress(const sockaddr_storage& a, const sockaddr_storage& b);

// Resolves "host:port", "1.2.3.4:port" or "[v6addr]:port" (getaddrinfo). xcclInvalidArgument
// with a message naming `text` if it does not parse or resolve.
xcclResult_t ParseHostPort(const std::string& text, sockaddr_storage* out);

// NCCL's interface syntax: comma-separated name prefixes; a leading '^' excludes the listed
// names instead, then a leading '=' makes the names exact. An empty spec matches everything.
bool IfnameMatches(const std::string& spec, const std::string& ifname);

// The address this host advertises for bootstrap sockets, with port 0. With `spec` (from
// XCCL_SOCKET_IFNAME) the first matching interface that is up (IPv4 preferred over IPv6);
// without it the first up non-loopback IPv4 interface, else a global IPv6 one, else loopback.
// Link-local IPv6 is never chosen: its scope does not carry across hosts.
xcclResult_t FindInterfaceAddress(const std::string& spec, sockaddr_storage* addr,
                                  std::string* ifname);

// Addresses on the wire (bootstrap messages, unique id): family, port, scope, 16 address bytes,
// with fixed byte order and family codes so that hosts need not agree on AF_* values.
constexpr size_t kWireAddressBytes = 24;
void PackAddress(const sockaddr_storage& addr, uint8_t out[kWireAddressBytes]);
// False for an unknown family code (also for the all-zero "no address").
bool UnpackAddress(const uint8_t in[kWireAddressBytes], sockaddr_storage* addr);

// A unix socket address in the abstract namespace (a leading NUL: nothing in the file system
// to clean up after a crash), for sockets between processes of one node.
sockaddr_storage AbstractUnixAddress(const std::string& name);

// Owns one socket descriptor, always non-blocking; waits happen in poll() with a deadline.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Listens on `addr` (port 0: ephemeral). Fails (xcclSystemError, message) if it cannot bind.
  static xcclResult_t Listen(const sockaddr_storage& addr, Socket* out);
  // The same, quiet: for callers with a fallback (kError with errno, e.g. EADDRNOTAVAIL).
  static IoStatus TryListen(const sockaddr_storage& addr, Socket* out);
  // Connects, retrying refused or unreachable attempts with a short backoff until `deadline`
  // (the peer may not be listening yet). kTimeout carries the last attempt's errno.
  static IoStatus Connect(const sockaddr_storage& addr, const Deadline& deadline, Socket* out);

  // Starts a connect without waiting (the net transport's connections): kOk with *out set and
  // the connection in progress, or kError (errno) where it cannot even start.
  static IoStatus StartConnect(const sockaddr_storage& addr, Socket* out);
  // Whether a StartConnect has completed, without waiting: kOk and *done, kOk and not yet, or
  // the connect's error (kError, ECONNREFUSED for instance).
  IoStatus ConnectDone(bool* done);
  // Waits for one connection until `deadline`; a deadline already passed makes it a single
  // non-blocking attempt (kTimeout if none is queued).
  IoStatus Accept(const Deadline& deadline, Socket* out, sockaddr_storage* peer);
  IoStatus SendAll(const void* data, size_t bytes, const Deadline& deadline);
  IoStatus RecvAll(void* data, size_t bytes, const Deadline& deadline);
  // One non-blocking send: *sent = bytes written (0 with kOk: the socket buffer is full).
  IoStatus SendSome(const void* data, size_t bytes, size_t* sent);
  // One non-blocking recv: *got = bytes read (0 with kOk: nothing available now).
  IoStatus RecvSome(void* data, size_t bytes, size_t* got);

  xcclResult_t LocalAddress(sockaddr_storage* addr) const;
  // Wakes any thread blocked on this socket (its call returns kClosed); the descriptor stays
  // open until Close(), so another thread never races with its reuse.
  void Shutdown();
  void Close();
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Sends `send_bytes` on `tx` while receiving `recv_bytes` on `rx`, interleaved, so that two
// peers exchanging large blocks in a ring cannot deadlock on full socket buffers.
// *failed_on_send tells which side a failure came from.
IoStatus SendRecv(Socket& tx, const void* send_data, size_t send_bytes, Socket& rx, void* recv_data,
                  size_t recv_bytes, const Deadline& deadline, bool* failed_on_send);

}  // namespace xccl
