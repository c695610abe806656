#include "fused/ag_gemm/self_test_pattern.h"

#include <algorithm>
#include <cstdio>

#include "base/mix64.h"

namespace xccl {

namespace {

// How far from the expected round a stale pattern is looked for (earlier and later).
constexpr uint32_t kRoundsAround = 8;

// The mixed key of (round, source, data or scales); a pattern's byte i is ByteOf(key, i).
uint64_t PatternKey(uint32_t round, int source, bool scale) {
  return SplitMix64((static_cast<uint64_t>(round) << 32) ^
                    (static_cast<uint64_t>(static_cast<uint32_t>(source)) << 1) ^
                    (scale ? 1u : 0u));
}

// Mixed again with the position, so that no (round, source) pair's bytes are a shifted or XORed
// copy of another's. (A single multiply-xorshift of round << 40 ^ source << 32 ^ i let 16-byte
// runs of two keys agree.)
unsigned char ByteOf(uint64_t key, size_t i) {
  return static_cast<unsigned char>(SplitMix64(key ^ i) >> 56);
}

// Whether got[0, bytes) is bytes [offset, offset + bytes) of the pattern of `key`.
bool Holds(const unsigned char* got, size_t offset, size_t bytes, uint64_t key) {
  for (size_t i = 0; i < bytes; ++i)
    if (got[i] != ByteOf(key, offset + i)) return false;
  return true;
}

}  // namespace

unsigned char PatternByte(uint32_t round, int source, size_t i, bool scale) {
  return ByteOf(PatternKey(round, source, scale), i);
}

void FillPattern(unsigned char* out, size_t offset, size_t bytes, uint32_t round, int source,
                 bool scale) {
  const uint64_t key = PatternKey(round, source, scale);
  for (size_t i = 0; i < bytes; ++i) out[i] = ByteOf(key, offset + i);
}

RecvSlotCheck::RecvSlotCheck(uint32_t round, int source, bool scale)
    : round_(round), source_(source), scale_(scale), key_(PatternKey(round, source, scale)) {}

void RecvSlotCheck::Check(const unsigned char* got, size_t offset, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] == ByteOf(key_, offset + i)) continue;
    ++wrong_;
    first_ = std::min(first_, offset + i);
  }
}

std::string RecvSlotCheck::Describe(size_t recv_slot_bytes, size_t row_bytes,
                                    const unsigned char* from_first, size_t available,
                                    int world) const {
  char text[160];
  snprintf(text, sizeof(text), "%zu of %zu bytes wrong, from row %zu (byte %zu)", wrong_,
           recv_slot_bytes, row_bytes == 0 ? 0 : first_ / row_bytes, first_);
  std::string out = text;
  const size_t probe = std::min(available, kIdentifyingBytes);
  for (uint32_t distance = 0; probe == kIdentifyingBytes && distance <= kRoundsAround; ++distance) {
    // Nearer rounds first, the earlier before the later; round numbers wrap like the epoch.
    for (const uint32_t r : {round_ - distance, round_ + distance}) {
      for (int s = 0; s < world; ++s) {
        if (r == round_ && s == source_) continue;
        if (!Holds(from_first, first_, probe, PatternKey(r, s, scale_))) continue;
        snprintf(text, sizeof(text), "; there it holds rank %d's pattern of round %u", s, r);
        return out + text;
      }
      if (distance == 0) break;
    }
  }
  snprintf(text, sizeof(text),
           "; there it holds no rank's pattern of the rounds within %u of %u:", kRoundsAround,
           round_);
  out += text;
  for (size_t i = 0; i < probe; ++i) {
    snprintf(text, sizeof(text), " %02x", from_first[i]);
    out += text;
  }
  return out;
}

std::string DescribeWrongRecvSlot(const unsigned char* got, size_t bytes, size_t row_bytes,
                                  uint32_t round, int source, int world, bool scale) {
  RecvSlotCheck check(round, source, scale);
  check.Check(got, 0, bytes);
  if (!check.wrong()) return "";
  const size_t first = check.first_wrong();
  return check.Describe(bytes, row_bytes, got + first, bytes - first, world);
}

}  // namespace xccl
