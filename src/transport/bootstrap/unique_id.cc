#include "transport/bootstrap/unique_id.h"

#include <netinet/in.h>

#include <cstring>

#include "base/error.h"
#include "base/fnv1a.h"
#include "transport/bootstrap/socket.h"

namespace xccl {

namespace {

// Layout of the 128 bytes. Integers are big-endian so an id can cross hosts as raw bytes.
constexpr uint32_t kIdMagic = 0x78636964;  // "xcid"
constexpr uint16_t kIdVersion = 1;
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 4;
constexpr size_t kOffFlags = 6;
constexpr size_t kOffAddress = 8;
constexpr size_t kOffSecret = kOffAddress + kWireAddressBytes;  // 32
constexpr size_t kOffChecksum = XCCL_UNIQUE_ID_BYTES - 8;       // 120
constexpr uint16_t kFlagRank0IsRoot = 1;
static_assert(kOffSecret + sizeof(UniqueIdContents::secret) <= kOffChecksum, "id layout");

void PutBe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}
uint64_t GetBe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

void EncodeUniqueId(const UniqueIdContents& contents, xcclUniqueId* id) {
  uint8_t* p = reinterpret_cast<uint8_t*>(id->internal);
  memset(p, 0, XCCL_UNIQUE_ID_BYTES);
  PutBe(p + kOffMagic, kIdMagic, 4);
  PutBe(p + kOffVersion, kIdVersion, 2);
  PutBe(p + kOffFlags, contents.rank0_is_root ? kFlagRank0IsRoot : 0, 2);
  PackAddress(contents.root_addr, p + kOffAddress);
  memcpy(p + kOffSecret, contents.secret, sizeof(contents.secret));
  PutBe(p + kOffChecksum, Fnv1a(p, kOffChecksum), 8);
}

xcclResult_t DecodeUniqueId(const xcclUniqueId& id, UniqueIdContents* contents) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(id.internal);
  uint32_t magic = static_cast<uint32_t>(GetBe(p + kOffMagic, 4));
  if (magic != kIdMagic) {
    return Fail(xcclInvalidArgument,
                "unique id: bad magic 0x%08x (not made by xcclGetUniqueId, or not copied whole)",
                magic);
  }
  uint32_t version = static_cast<uint32_t>(GetBe(p + kOffVersion, 2));
  if (version != kIdVersion) {
    return Fail(xcclInvalidArgument,
                "unique id: format version %u, this library reads version %u (mixed xccl "
                "versions?)",
                version, kIdVersion);
  }
  uint64_t stored = GetBe(p + kOffChecksum, 8);
  uint64_t computed = Fnv1a(p, kOffChecksum);
  if (stored != computed) {
    return Fail(xcclInvalidArgument,
                "unique id: checksum mismatch (stored 0x%016llx, computed 0x%016llx): the id "
                "was corrupted in transit",
                static_cast<unsigned long long>(stored), static_cast<unsigned long long>(computed));
  }
  UniqueIdContents out{};
  if (!UnpackAddress(p + kOffAddress, &out.root_addr)) {
    return Fail(xcclInvalidArgument, "unique id: unknown address family code %u",
                static_cast<unsigned>(GetBe(p + kOffAddress, 2)));
  }
  uint16_t port = out.root_addr.ss_family == AF_INET
                      ? reinterpret_cast<sockaddr_in&>(out.root_addr).sin_port
                      : reinterpret_cast<sockaddr_in6&>(out.root_addr).sin6_port;
  if (port == 0) return Fail(xcclInvalidArgument, "unique id: root address has no port");
  memcpy(out.secret, p + kOffSecret, sizeof(out.secret));
  out.rank0_is_root = (GetBe(p + kOffFlags, 2) & kFlagRank0IsRoot) != 0;
  *contents = out;
  return xcclSuccess;
}

}  // namespace xccl
