#include "transport/bootstrap/socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "base/error.h"

namespace xccl {

sockaddr_storage AbstractUnixAddress(const std::string& name) {
  sockaddr_storage storage;
  memset(&storage, 0, sizeof(storage));
  sockaddr_un* un = reinterpret_cast<sockaddr_un*>(&storage);
  un->sun_family = AF_UNIX;
  snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "%s", name.c_str());
  return storage;
}

namespace {

constexpr uint16_t kWireFamilyIpv4 = 4;
constexpr uint16_t kWireFamilyIpv6 = 6;

bool IsRetryableConnectError(int err) {
  switch (err) {
    case ECONNREFUSED:  // nobody listening yet
    case ECONNRESET:
    case ECONNABORTED:
    case ETIMEDOUT:     // SYN lost
    case EHOSTUNREACH:  // neighbour discovery still resolving
    case ENETUNREACH:
    case EAGAIN:
    case EINTR:
      return true;
    default:
      return false;
  }
}

bool IsPeerGoneError(int err) { return err == EPIPE || err == ECONNRESET || err == ENOTCONN; }

void SetNoDelay(int fd) {
  int one = 1;
  // Bootstrap messages are small and latency-bound (barriers); a failure only costs latency.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Waits for `events` on fd; kOk when ready (or on POLLHUP/POLLERR: the next I/O call reports
// what happened), kTimeout at the deadline.
IoStatus WaitFd(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd pfd{fd, events, 0};
    int n = poll(&pfd, 1, deadline.PollTimeoutMs());
    if (n > 0) return {};
    if (n == 0) {
      if (deadline.Expired()) return {IoStatus::kTimeout, 0};
      continue;  // woke early because of rounding
    }
    if (errno == EINTR) continue;
    return {IoStatus::kError, errno};
  }
}

bool IsLinkLocalV6(const sockaddr_in6& a) { return IN6_IS_ADDR_LINKLOCAL(&a.sin6_addr); }

void PutU16Be(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t GetU16Be(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
void PutU32Be(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
uint32_t GetU32Be(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

std::string IoStatus::Describe() const {
  switch (code) {
    case kOk:
      return "ok";
    case kTimeout:
      return err != 0 ? std::string("timed out (last error: ") + strerror(err) + ")"
                      : std::string("timed out");
    case kClosed:
      return err != 0 ? std::string("connection closed by peer (") + strerror(err) + ")"
                      : std::string("connection closed by peer");
    case kError:
      return strerror(err);
  }
  return "?";
}

std::string FormatAddress(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof(host));
    std::string scope = a.sin6_scope_id ? "%" + std::to_string(a.sin6_scope_id) : "";
    return "[" + std::string(host) + scope + "]:" + std::to_string(ntohs(a.sin6_port));
  }
  return "<no address>";
}

socklen_t AddressLength(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return sizeof(sockaddr_in);
  if (addr.ss_family == AF_INET6) return sizeof(sockaddr_in6);
  if (addr.ss_family == AF_UNIX) return sizeof(sockaddr_un);
  return sizeof(sockaddr_storage);
}

bool SameAddress(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && x.sin6_scope_id == y.sin6_scope_id &&
           memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

xcclResult_t ParseHostPort(const std::string& text, sockaddr_storage* out) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Fail(xcclInvalidArgument, "\"%s\": expected [ipv6-address]:port", text.c_str());
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      return Fail(xcclInvalidArgument, "\"%s\": expected host:port, ipv4:port or [ipv6]:port",
                  text.c_str());
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long port_number = port.empty() ? 0 : strtol(port.c_str(), &end, 10);
  if (host.empty() || port.empty() || *end != '\0' || port_number < 1 || port_number > 65535) {
    return Fail(xcclInvalidArgument, "\"%s\": needs a host and a port in 1..65535", text.c_str());
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    return Fail(xcclInvalidArgument, "\"%s\": cannot resolve \"%s\": %s", text.c_str(),
                host.c_str(), gai_strerror(rc));
  }
  // getaddrinfo orders results by RFC 6724 preference; the first usable one is the answer.
  const addrinfo* chosen = nullptr;
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
      chosen = ai;
      break;
    }
  }
  if (chosen == nullptr) {
    freeaddrinfo(result);
    return Fail(xcclInvalidArgument, "\"%s\": no IPv4 or IPv6 address", text.c_str());
  }
  memset(out, 0, sizeof(*out));
  memcpy(out, chosen->ai_addr, chosen->ai_addrlen);
  freeaddrinfo(result);
  uint16_t port_be = htons(static_cast<uint16_t>(port_number));
  if (out->ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(out)->sin_port = port_be;
  } else {
    reinterpret_cast<sockaddr_in6*>(out)->sin6_port = port_be;
  }
  return xcclSuccess;
}

bool IfnameMatches(const std::string& spec, const std::string& ifname) {
  size_t pos = 0;
  bool exclude = false, exact = false;
  if (pos < spec.size() && spec[pos] == '^') {
    exclude = true;
    ++pos;
  }
  if (pos < spec.size() && spec[pos] == '=') {
    exact = true;
    ++pos;
  }
  bool listed = false;
  bool any_name = false;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string name = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (name.empty()) continue;
    any_name = true;
    bool match = exact ? ifname == name : ifname.compare(0, name.size(), name) == 0;
    if (match) {
      listed = true;
      break;
    }
  }
  if (!any_name) return true;
  return exclude ? !listed : listed;
}

xcclResult_t FindInterfaceAddress(const std::string& spec, sockaddr_storage* addr,
                                  std::string* ifname) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Fail(xcclSystemError, "getifaddrs failed: %s", strerror(errno));
  }
  struct Candidate {
    std::string name;
    sockaddr_storage addr;
    bool loopback;
  };
  std::vector<Candidate> candidates;
  std::string seen;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    Candidate c{ifa->ifa_name, {}, (ifa->ifa_flags & IFF_LOOPBACK) != 0};
    memcpy(&c.addr, ifa->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (family == AF_INET6 && IsLinkLocalV6(reinterpret_cast<sockaddr_in6&>(c.addr))) continue;
    if ((" " + seen + " ").find(" " + c.name + " ") == std::string::npos) {
      seen += (seen.empty() ? "" : " ") + c.name;
    }
    candidates.push_back(c);
  }
  freeifaddrs(list);

  // Earlier predicates win; within one, getifaddrs order (the kernel's interface order).
  auto pick = [&](auto&& accept) -> const Candidate* {
    for (const Candidate& c : candidates) {
      if (accept(c)) return &c;
    }
    return nullptr;
  };
  auto is_v4 = [](const Candidate& c) { return c.addr.ss_family == AF_INET; };
  auto is_virtual_bridge = [](const Candidate& c) {
    // Docker/libvirt bridges are up on many hosts but unreachable from other hosts.
    return c.name.rfind("docker", 0) == 0 || c.name.rfind("virbr", 0) == 0;
  };
  const Candidate* chosen = nullptr;
  if (!spec.empty()) {
    auto listed = [&](const Candidate& c) { return IfnameMatches(spec, c.name); };
    chosen = pick([&](const Candidate& c) { return listed(c) && is_v4(c); });
    if (chosen == nullptr) chosen = pick(listed);
    if (chosen == nullptr) {
      return Fail(xcclSystemError,
                  "XCCL_SOCKET_IFNAME=\"%s\" matches no interface that is up with a usable "
                  "address (up: %s)",
                  spec.c_str(), seen.c_str());
    }
  } else {
    chosen =
        pick([&](const Candidate& c) { return !c.loopback && is_v4(c) && !is_virtual_bridge(c); });
    if (chosen == nullptr)
      chosen = pick([&](const Candidate& c) { return !c.loopback && is_v4(c); });
    if (chosen == nullptr) chosen = pick([&](const Candidate& c) { return !c.loopback; });
    if (chosen == nullptr) chosen = pick([&](const Candidate& c) { return is_v4(c); });
    if (chosen == nullptr) chosen = pick([](const Candidate&) { return true; });
    if (chosen == nullptr) {
      return Fail(xcclSystemError, "no network interface is up (not even loopback)");
    }
  }
  *addr = chosen->addr;
  if (addr->ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(addr)->sin_port = 0;
  } else {
    reinterpret_cast<sockaddr_in6*>(addr)->sin6_port = 0;
  }
  if (ifname != nullptr) *ifname = chosen->name;
  return xcclSuccess;
}

void PackAddress(const sockaddr_storage& addr, uint8_t out[kWireAddressBytes]) {
  memset(out, 0, kWireAddressBytes);
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    PutU16Be(out, kWireFamilyIpv4);
    PutU16Be(out + 2, ntohs(a.sin_port));
    memcpy(out + 8, &a.sin_addr, 4);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    PutU16Be(out, kWireFamilyIpv6);
    PutU16Be(out + 2, ntohs(a.sin6_port));
    PutU32Be(out + 4, a.sin6_scope_id);
    memcpy(out + 8, &a.sin6_addr, 16);
  }
}

bool UnpackAddress(const uint8_t in[kWireAddressBytes], sockaddr_storage* addr) {
  memset(addr, 0, sizeof(*addr));
  uint16_t family = GetU16Be(in);
  uint16_t port = GetU16Be(in + 2);
  if (family == kWireFamilyIpv4) {
    auto* a = reinterpret_cast<sockaddr_in*>(addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    memcpy(&a->sin_addr, in + 8, 4);
    return true;
  }
  if (family == kWireFamilyIpv6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_scope_id = GetU32Be(in + 4);
    memcpy(&a->sin6_addr, in + 8, 16);
    return true;
  }
  return false;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

IoStatus Socket::TryListen(const sockaddr_storage& addr, Socket* out) {
  Socket s(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) return {IoStatus::kError, errno};
  int one = 1;
  // A fixed XCCL_COMM_ID port must be reusable while the previous run's sockets sit in TIME_WAIT.
  setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s.fd_, reinterpret_cast<const sockaddr*>(&addr), AddressLength(addr)) != 0 ||
      listen(s.fd_, SOMAXCONN) != 0) {
    return {IoStatus::kError, errno};
  }
  *out = std::move(s);
  return {};
}

xcclResult_t Socket::Listen(const sockaddr_storage& addr, Socket* out) {
  IoStatus st = TryListen(addr, out);
  if (!st.ok()) {
    return Fail(xcclSystemError, "cannot listen at %s: %s", FormatAddress(addr).c_str(),
                strerror(st.err));
  }
  return xcclSuccess;
}

IoStatus Socket::Connect(const sockaddr_storage& addr, const Deadline& deadline, Socket* out) {
  auto backoff = std::chrono::milliseconds(2);
  int last_err = 0;
  for (;;) {
    Socket s(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.valid()) return {IoStatus::kError, errno};
    int err = 0;
    if (connect(s.fd_, reinterpret_cast<const sockaddr*>(&addr), AddressLength(addr)) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        IoStatus w = WaitFd(s.fd_, POLLOUT, deadline);
        if (w.code == IoStatus::kTimeout) return {IoStatus::kTimeout, last_err};
        if (!w.ok()) return w;
        socklen_t len = sizeof(err);
        if (getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      SetNoDelay(s.fd_);
      *out = std::move(s);
      return {};
    }
    if (!IsRetryableConnectError(err)) return {IoStatus::kError, err};
    last_err = err;
    auto now = Deadline::Clock::now();
    if (now >= deadline.end()) return {IoStatus::kTimeout, last_err};
    std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(backoff, deadline.end() - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

IoStatus Socket::StartConnect(const sockaddr_storage& addr, Socket* out) {
  Socket s(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) return {IoStatus::kError, errno};
  if (connect(s.fd_, reinterpret_cast<const sockaddr*>(&addr), AddressLength(addr)) != 0 &&
      errno != EINPROGRESS)
    return {IoStatus::kError, errno};
  SetNoDelay(s.fd_);
  *out = std::move(s);
  return {};
}

IoStatus Socket::ConnectDone(bool* done) {
  *done = false;
  pollfd pfd{fd_, POLLOUT, 0};
  const int n = poll(&pfd, 1, 0);
  if (n < 0) return errno == EINTR ? IoStatus{} : IoStatus{IoStatus::kError, errno};
  if (n == 0) return {};
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return {IoStatus::kError, err};
  *done = true;
  return {};
}

IoStatus Socket::Accept(const Deadline& deadline, Socket* out, sockaddr_storage* peer) {
  for (;;) {
    sockaddr_storage from{};
    socklen_t len = sizeof(from);
    int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      SetNoDelay(fd);
      *out = Socket(fd);
      if (peer != nullptr) *peer = from;
      return {};
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;  // the client gave up; wait for the next
    if (err != EAGAIN && err != EWOULDBLOCK) return {IoStatus::kError, err};
    if (deadline.Expired()) return {IoStatus::kTimeout, 0};
    IoStatus w = WaitFd(fd_, POLLIN, deadline);
    if (!w.ok()) return w;
  }
}

IoStatus Socket::SendAll(const void* data, size_t bytes, const Deadline& deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = send(fd_, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      IoStatus w = WaitFd(fd_, POLLOUT, deadline);
      if (!w.ok()) return w;
      continue;
    }
    if (IsPeerGoneError(err)) return {IoStatus::kClosed, err};
    return {IoStatus::kError, err};
  }
  return {};
}

IoStatus Socket::RecvAll(void* data, size_t bytes, const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    size_t got = 0;
    IoStatus st = RecvSome(p, bytes, &got);
    if (!st.ok()) return st;
    if (got == 0) {
      IoStatus w = WaitFd(fd_, POLLIN, deadline);
      if (!w.ok()) return w;
      continue;
    }
    p += got;
    bytes -= got;
  }
  return {};
}

IoStatus Socket::SendSome(const void* data, size_t bytes, size_t* sent) {
  *sent = 0;
  if (bytes == 0) return {};
  for (;;) {
    ssize_t n = send(fd_, data, bytes, MSG_NOSIGNAL);
    if (n >= 0) {
      *sent = static_cast<size_t>(n);
      return {};
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (IsPeerGoneError(err)) return {IoStatus::kClosed, err};
    return {IoStatus::kError, err};
  }
}

IoStatus Socket::RecvSome(void* data, size_t bytes, size_t* got) {
  *got = 0;
  if (bytes == 0) return {};
  for (;;) {
    ssize_t n = recv(fd_, data, bytes, 0);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return {};
    }
    if (n == 0) return {IoStatus::kClosed, 0};
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (IsPeerGoneError(err)) return {IoStatus::kClosed, err};
    return {IoStatus::kError, err};
  }
}

xcclResult_t Socket::LocalAddress(sockaddr_storage* addr) const {
  socklen_t len = sizeof(*addr);
  memset(addr, 0, sizeof(*addr));
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(addr), &len) != 0) {
    return Fail(xcclSystemError, "getsockname: %s", strerror(errno));
  }
  return xcclSuccess;
}

void Socket::Shutdown() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

void Socket::Close() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

IoStatus SendRecv(Socket& tx, const void* send_data, size_t send_bytes, Socket& rx, void* recv_data,
                  size_t recv_bytes, const Deadline& deadline, bool* failed_on_send) {
  const char* sp = static_cast<const char*>(send_data);
  char* rp = static_cast<char*>(recv_data);
  *failed_on_send = false;
  while (send_bytes > 0 || recv_bytes > 0) {
    bool progressed = false;
    if (send_bytes > 0) {
      ssize_t n = send(tx.fd(), sp, send_bytes, MSG_NOSIGNAL);
      if (n > 0) {
        sp += n;
        send_bytes -= static_cast<size_t>(n);
        progressed = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        *failed_on_send = true;
        int err = errno;
        return {IsPeerGoneError(err) ? IoStatus::kClosed : IoStatus::kError, err};
      }
    }
    if (recv_bytes > 0) {
      size_t got = 0;
      IoStatus st = rx.RecvSome(rp, recv_bytes, &got);
      if (!st.ok()) return st;
      if (got > 0) {
        rp += got;
        recv_bytes -= got;
        progressed = true;
      }
    }
    if (progressed || (send_bytes == 0 && recv_bytes == 0)) continue;
    pollfd pfds[2];
    int count = 0;
    if (send_bytes > 0) pfds[count++] = {tx.fd(), POLLOUT, 0};
    if (recv_bytes > 0) pfds[count++] = {rx.fd(), POLLIN, 0};
    int n = poll(pfds, count, deadline.PollTimeoutMs());
    if (n < 0 && errno != EINTR) return {IoStatus::kError, errno};
    if (n == 0 && deadline.Expired()) {
      // Blame the receive side first: a stuck ring is seen as a silent predecessor.
      *failed_on_send = recv_bytes == 0;
      return {IoStatus::kTimeout, 0};
    }
  }
  return {};
}

}  // namespace xccl
