// The gate in front of every bootstrap listener (the root's, each rank's): accepts connections
// and reads each one's single frame without ever blocking, refusing slow or hostile senders.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/repeat_limiter.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/socket.h"
#include "xccl.h"

namespace xccl {
namespace bootstrap_internal {

// An unauthenticated connection gets this long to deliver its one frame. The deadline runs
// from accept(), not from the last byte, so a client trickling bytes cannot hold a slot.
constexpr int64_t kConnDeadlineMs = 5000;

// ---------------------------------------------------------------------------------------------
// Reading one frame from an untrusted connection without ever blocking on it.

class FrameReader {
 public:
  enum class State { kPartial, kDone, kBad };

  explicit FrameReader(uint32_t expected_type) : expected_type_(expected_type) {}

  // Reads what the socket has; on kBad, *why says what was wrong with the sender.
  State Read(Socket& sock, std::string* why);

  const std::vector<uint8_t>& payload() const { return payload_; }

 private:
  size_t expected_total() const {
    return have_ < wire::kHeaderBytes ? wire::kHeaderBytes : wire::kHeaderBytes + payload_.size();
  }

  uint32_t expected_type_;
  uint8_t header_[wire::kHeaderBytes] = {};
  size_t have_ = 0;
  std::vector<uint8_t> payload_;
};

// A connection that delivered its one frame; not yet vetted beyond framing.
struct Arrival {
  Socket sock;
  std::string peer;
  std::vector<uint8_t> payload;
};

// The listener plus every connection that has not yet delivered its frame. Shared by the root
// and by each rank's ring listener: neither may be stalled or exhausted by a client that is
// slow, silent, or hostile.
class Gate {
 public:
  Gate(Socket* listener, uint32_t expected_type, std::string owner)
      : listener_(listener), expected_type_(expected_type), owner_(std::move(owner)) {}

  // Appends the listener and pending connections to `fds`; folds their deadlines into *wake.
  void AddPollFds(std::vector<pollfd>* fds, Deadline* wake);

  // After poll(): reads what is ready, accepts new connections, drops bad or expired ones
  // (logged with the peer's address), moves complete frames to *ready.
  void Service(const std::vector<pollfd>& fds, std::vector<Arrival>* ready);

  // A scan or a flood can refuse thousands of connections a second: the first few are logged,
  // then one line a second with the count, and what is left when the gate goes.
  void Refuse(const std::string& peer, const std::string& why);

  ~Gate();

 private:
  struct Pending {
    Socket sock;
    std::string peer;
    FrameReader reader;
    Deadline deadline;
  };

  void AcceptAll();

  Socket* listener_;
  uint32_t expected_type_;
  std::string owner_;
  std::vector<Pending> pending_;
  size_t start_ = 0;
  bool listener_polled_ = false;
  Deadline accept_paused_until_{};
  RepeatLimiter refusals_;
};

// One poll() of `fds` until `wake`; an interrupted poll leaves every revents 0.
xcclResult_t PollOnce(std::vector<pollfd>* fds, const Deadline& wake);

}  // namespace bootstrap_internal
}  // namespace xccl
