#include "fused/self_test_pattern.h"

#include <algorithm>
#include <cstdio>

namespace xccl {

namespace {

// splitmix64's finaliser: every input bit moves every output bit.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// How many leading bytes identify a pattern: a chance match of 16 bytes is 2^-128.
constexpr size_t kIdentifyingBytes = 16;
// How far from the expected round a stale pattern is looked for (earlier and later).
constexpr uint32_t kRoundsAround = 8;

bool Holds(const unsigned char* got, size_t offset, size_t bytes, uint32_t round, int source,
           bool scale) {
  for (size_t i = 0; i < bytes; ++i)
    if (got[i] != PatternByte(round, source, offset + i, scale)) return false;
  return true;
}

}  // namespace

unsigned char PatternByte(uint32_t round, int source, size_t i, bool scale) {
  // Two rounds of mixing: the key (round, source, data or scales) first, then the position, so
  // that no (round, source) pair's bytes are a shifted or XORed copy of another's. (A single
  // multiply-xorshift of round << 40 ^ source << 32 ^ i let 16-byte runs of two keys agree.)
  const uint64_t key = (static_cast<uint64_t>(round) << 32) ^
                       (static_cast<uint64_t>(static_cast<uint32_t>(source)) << 1) ^
                       (scale ? 1u : 0u);
  return static_cast<unsigned char>(Mix(Mix(key) ^ i) >> 56);
}

std::string DescribeWrongSlot(const unsigned char* got, size_t bytes, size_t row_bytes,
                              uint32_t round, int source, int world, bool scale) {
  size_t wrong = 0, first = bytes;
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] == PatternByte(round, source, i, scale)) continue;
    if (wrong++ == 0) first = i;
  }
  if (wrong == 0) return "";
  char text[160];
  snprintf(text, sizeof(text), "%zu of %zu bytes wrong, from row %zu (byte %zu)", wrong, bytes,
           row_bytes == 0 ? 0 : first / row_bytes, first);
  std::string out = text;
  const size_t probe = std::min(bytes - first, kIdentifyingBytes);
  for (uint32_t distance = 0; distance <= kRoundsAround; ++distance) {
    // Nearer rounds first, the earlier before the later; round numbers wrap like the epoch.
    for (const uint32_t r : {round - distance, round + distance}) {
      for (int s = 0; s < world; ++s) {
        if (r == round && s == source) continue;
        if (!Holds(got + first, first, probe, r, s, scale)) continue;
        snprintf(text, sizeof(text), "; there it holds rank %d's pattern of round %u", s, r);
        return out + text;
      }
      if (distance == 0) break;
    }
  }
  snprintf(text, sizeof(text),
           "; there it holds no rank's pattern of the rounds within %u of %u:", kRoundsAround,
           round);
  out += text;
  for (size_t i = 0; i < probe; ++i) {
    snprintf(text, sizeof(text), " %02x", got[first + i]);
    out += text;
  }
  return out;
}

}  // namespace xccl
