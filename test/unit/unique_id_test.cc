#include "transport/bootstrap/unique_id.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <random>
#include <string>

#include "base/error.h"

namespace xccl {
namespace {

class UniqueIdTest : public ::testing::Test {
 protected:
  UniqueIdTest() : seed_(std::random_device()()), rng_(seed_) {}

  UniqueIdContents RandomIpv4() {
    UniqueIdContents c{};
    auto& a = reinterpret_cast<sockaddr_in&>(c.root_addr);
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(1 + rng_() % 65535));
    a.sin_addr.s_addr = static_cast<uint32_t>(rng_());
    FillSecret(&c);
    return c;
  }

  UniqueIdContents RandomIpv6() {
    UniqueIdContents c{};
    auto& a = reinterpret_cast<sockaddr_in6&>(c.root_addr);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(1 + rng_() % 65535));
    a.sin6_scope_id = static_cast<uint32_t>(rng_());
    for (auto& byte : a.sin6_addr.s6_addr) byte = static_cast<uint8_t>(rng_());
    FillSecret(&c);
    return c;
  }

  void FillSecret(UniqueIdContents* c) {
    for (auto& byte : c->secret) byte = static_cast<uint8_t>(rng_());
    c->rank0_is_root = rng_() % 2 == 1;
  }

  static void ExpectSame(const UniqueIdContents& want, const UniqueIdContents& got) {
    ASSERT_EQ(want.root_addr.ss_family, got.root_addr.ss_family);
    if (want.root_addr.ss_family == AF_INET) {
      const auto& w = reinterpret_cast<const sockaddr_in&>(want.root_addr);
      const auto& g = reinterpret_cast<const sockaddr_in&>(got.root_addr);
      EXPECT_EQ(w.sin_port, g.sin_port);
      EXPECT_EQ(w.sin_addr.s_addr, g.sin_addr.s_addr);
    } else {
      const auto& w = reinterpret_cast<const sockaddr_in6&>(want.root_addr);
      const auto& g = reinterpret_cast<const sockaddr_in6&>(got.root_addr);
      EXPECT_EQ(w.sin6_port, g.sin6_port);
      EXPECT_EQ(w.sin6_scope_id, g.sin6_scope_id);
      EXPECT_EQ(0, memcmp(&w.sin6_addr, &g.sin6_addr, sizeof(w.sin6_addr)));
    }
    EXPECT_EQ(0, memcmp(want.secret, got.secret, sizeof(want.secret)));
    EXPECT_EQ(want.rank0_is_root, got.rank0_is_root);
  }

  std::string SeedNote() const { return "seed " + std::to_string(seed_); }

  uint32_t seed_;
  std::mt19937 rng_;
};

TEST_F(UniqueIdTest, RoundTripIpv4) {
  SCOPED_TRACE(SeedNote());
  for (int i = 0; i < 200; ++i) {
    UniqueIdContents want = RandomIpv4();
    xcclUniqueId id;
    memset(&id, 0xEE, sizeof(id));  // encode must not leave stale bytes
    EncodeUniqueId(want, &id);
    UniqueIdContents got;
    memset(&got, 0x77, sizeof(got));
    ASSERT_EQ(xcclSuccess, DecodeUniqueId(id, &got)) << ThreadLastError();
    ExpectSame(want, got);
  }
}

TEST_F(UniqueIdTest, RoundTripIpv6) {
  SCOPED_TRACE(SeedNote());
  for (int i = 0; i < 200; ++i) {
    UniqueIdContents want = RandomIpv6();
    xcclUniqueId id;
    memset(&id, 0x11, sizeof(id));
    EncodeUniqueId(want, &id);
    UniqueIdContents got;
    memset(&got, 0x77, sizeof(got));
    ASSERT_EQ(xcclSuccess, DecodeUniqueId(id, &got)) << ThreadLastError();
    ExpectSame(want, got);
  }
}

TEST_F(UniqueIdTest, DistinctSecretsGiveDistinctIds) {
  UniqueIdContents a = RandomIpv4();
  UniqueIdContents b = a;
  b.secret[rng_() % sizeof(b.secret)] ^= 0x01;
  xcclUniqueId ia, ib;
  EncodeUniqueId(a, &ia);
  EncodeUniqueId(b, &ib);
  EXPECT_NE(0, memcmp(&ia, &ib, sizeof(ia)));
}

// Every byte of the 128 matters: any single corrupted byte, whatever the corruption, is refused.
TEST_F(UniqueIdTest, EveryCorruptedByteIsDetected) {
  SCOPED_TRACE(SeedNote());
  for (int family = 0; family < 2; ++family) {
    UniqueIdContents c = family == 0 ? RandomIpv4() : RandomIpv6();
    xcclUniqueId good;
    EncodeUniqueId(c, &good);
    UniqueIdContents out;
    ASSERT_EQ(xcclSuccess, DecodeUniqueId(good, &out));
    for (int pos = 0; pos < XCCL_UNIQUE_ID_BYTES; ++pos) {
      // One random flip plus the single-bit and all-bit flips at every position.
      const uint8_t flips[] = {static_cast<uint8_t>(1 + rng_() % 255), 0x01, 0x80, 0xFF};
      for (uint8_t flip : flips) {
        xcclUniqueId bad = good;
        bad.internal[pos] = static_cast<char>(bad.internal[pos] ^ flip);
        ClearThreadLastError();
        EXPECT_EQ(xcclInvalidArgument, DecodeUniqueId(bad, &out))
            << "byte " << pos << " xor 0x" << std::hex << int{flip} << " went unnoticed";
        EXPECT_FALSE(ThreadLastError().empty()) << "byte " << pos;
      }
    }
  }
}

TEST_F(UniqueIdTest, MessagesSayWhatIsWrong) {
  UniqueIdContents out;
  xcclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  EXPECT_EQ(xcclInvalidArgument, DecodeUniqueId(zero, &out));
  EXPECT_NE(std::string::npos, ThreadLastError().find("magic")) << ThreadLastError();

  xcclUniqueId good;
  EncodeUniqueId(RandomIpv4(), &good);
  xcclUniqueId bad = good;
  bad.internal[5] ^= 0x02;  // the format version follows the 4-byte magic
  EXPECT_EQ(xcclInvalidArgument, DecodeUniqueId(bad, &out));
  EXPECT_NE(std::string::npos, ThreadLastError().find("version")) << ThreadLastError();

  bad = good;
  bad.internal[40] ^= 0x10;  // inside the secret
  EXPECT_EQ(xcclInvalidArgument, DecodeUniqueId(bad, &out));
  EXPECT_NE(std::string::npos, ThreadLastError().find("checksum")) << ThreadLastError();

  // A well-formed id for an address family the wire format cannot carry.
  UniqueIdContents unix_family = RandomIpv4();
  unix_family.root_addr.ss_family = AF_UNIX;
  EncodeUniqueId(unix_family, &bad);
  EXPECT_EQ(xcclInvalidArgument, DecodeUniqueId(bad, &out));
  EXPECT_NE(std::string::npos, ThreadLastError().find("family")) << ThreadLastError();

  UniqueIdContents no_port = RandomIpv4();
  reinterpret_cast<sockaddr_in&>(no_port.root_addr).sin_port = 0;
  EncodeUniqueId(no_port, &bad);
  EXPECT_EQ(xcclInvalidArgument, DecodeUniqueId(bad, &out));
  EXPECT_NE(std::string::npos, ThreadLastError().find("port")) << ThreadLastError();
}

}  // namespace
}  // namespace xccl
