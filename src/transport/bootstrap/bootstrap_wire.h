// The bootstrap's messages on the wire. Shared by the bootstrap's sources and by its tests,
// which forge hostile and out-of-protocol messages against a live root.
//
// Every message is a frame: magic, type, payload length (u32 each, big-endian), then the
// payload. Receivers that face the network (the root, a rank's ring listener) refuse any
// frame longer than kMaxRequestBytes before reading its payload. A point-to-point message is
// the one exception: its frame carries {tag, bytes}, then `bytes` raw bytes follow, at most
// kMaxMessageBytes; it flows only on a connection whose sender proved it holds the secret.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/bootstrap/socket.h"

namespace xccl {
namespace wire {

constexpr uint32_t kMagic = 0x58424f54;  // "XBOT"
constexpr size_t kHeaderBytes = 12;
constexpr uint32_t kMaxRequestBytes = 4096;
constexpr size_t kSecretBytes = 16;
constexpr size_t kMaxErrorText = 1000;
constexpr int kMaxRanks = 1 << 16;

enum Type : uint32_t {
  kHello = 1,        // rank -> root: HelloMsg
  kNextAddress = 2,  // root -> rank: secret, nranks, the listen address of rank+1
  kError = 3,        // root -> rank: secret, xcclResult_t, text
  kRingHello = 4,    // rank -> next rank: RingHelloMsg
  kRingAck = 5,      // next rank -> rank: RingHelloMsg from the acceptor
  kCollHeader = 6,   // before each AllGather/Barrier: seq, block bytes, op
  kP2pHello = 7,     // sender -> receiver's listener: RingHelloMsg (one connection per pair)
  kP2pAck = 8,       // receiver -> sender: RingHelloMsg from the receiver
  kP2pData = 9,      // sender -> receiver: tag, bytes (P2pDataBytes), then the raw bytes
  kP2pRefusal = 10,  // receiver -> sender: tag, bytes sent, bytes its Recv expected
};

// The op of a kCollHeader; kOpAddressTable is the listen-address exchange that ends Init
// (call #0), which gives every rank the address of every other for point-to-point messages.
enum CollOp : uint32_t { kOpAllGather = 1, kOpBarrier = 2, kOpAddressTable = 3 };

inline void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
inline uint32_t GetU32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void PutU64(uint8_t* p, uint64_t v) {
  PutU32(p, static_cast<uint32_t>(v >> 32));
  PutU32(p + 4, static_cast<uint32_t>(v));
}
inline uint64_t GetU64(const uint8_t* p) { return (uint64_t{GetU32(p)} << 32) | GetU32(p + 4); }

inline void PutHeader(uint8_t* p, uint32_t type, uint32_t length) {
  PutU32(p, kMagic);
  PutU32(p + 4, type);
  PutU32(p + 8, length);
}

// A whole frame, ready to send.
inline std::vector<uint8_t> Frame(uint32_t type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(kHeaderBytes + payload.size());
  PutHeader(out.data(), type, static_cast<uint32_t>(payload.size()));
  if (!payload.empty()) memcpy(out.data() + kHeaderBytes, payload.data(), payload.size());
  return out;
}

struct HelloMsg {
  uint8_t secret[kSecretBytes];
  uint32_t rank;
  uint32_t nranks;
  uint64_t timeout_ms;  // the rank's Init timeout, for messages
  uint64_t wait_ms;     // how long this rank will still wait for the root's answer
  uint8_t listen_addr[kWireAddressBytes];  // all zero when nranks == 1 (no ring)
};
constexpr size_t kHelloBytes = kSecretBytes + 4 + 4 + 8 + 8 + kWireAddressBytes;

inline std::vector<uint8_t> EncodeHello(const HelloMsg& m) {
  std::vector<uint8_t> p(kHelloBytes);
  memcpy(p.data(), m.secret, kSecretBytes);
  PutU32(p.data() + 16, m.rank);
  PutU32(p.data() + 20, m.nranks);
  PutU64(p.data() + 24, m.timeout_ms);
  PutU64(p.data() + 32, m.wait_ms);
  memcpy(p.data() + 40, m.listen_addr, kWireAddressBytes);
  return p;
}
inline bool DecodeHello(const std::vector<uint8_t>& p, HelloMsg* m) {
  if (p.size() != kHelloBytes) return false;
  memcpy(m->secret, p.data(), kSecretBytes);
  m->rank = GetU32(p.data() + 16);
  m->nranks = GetU32(p.data() + 20);
  m->timeout_ms = GetU64(p.data() + 24);
  m->wait_ms = GetU64(p.data() + 32);
  memcpy(m->listen_addr, p.data() + 40, kWireAddressBytes);
  return true;
}

struct RingHelloMsg {
  uint8_t secret[kSecretBytes];
  uint32_t rank;  // the sender's
  uint32_t nranks;
};
constexpr size_t kRingHelloBytes = kSecretBytes + 4 + 4;

inline std::vector<uint8_t> EncodeRingHello(const RingHelloMsg& m) {
  std::vector<uint8_t> p(kRingHelloBytes);
  memcpy(p.data(), m.secret, kSecretBytes);
  PutU32(p.data() + 16, m.rank);
  PutU32(p.data() + 20, m.nranks);
  return p;
}
inline bool DecodeRingHello(const std::vector<uint8_t>& p, RingHelloMsg* m) {
  if (p.size() != kRingHelloBytes) return false;
  memcpy(m->secret, p.data(), kSecretBytes);
  m->rank = GetU32(p.data() + 16);
  m->nranks = GetU32(p.data() + 20);
  return true;
}

constexpr size_t kCollHeaderBytes = 8 + 8 + 4;

constexpr size_t kP2pDataBytes = 4 + 8;         // tag, bytes
constexpr size_t kP2pRefusalBytes = 4 + 8 + 8;  // tag, bytes sent, bytes expected
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 30;

}  // namespace wire
}  // namespace xccl
