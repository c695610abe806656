// Fresh, reproducible test data: the bytes a rank sends in one call are a pure function of
// (run seed, rank, call), so every rank can compute every other rank's block and check each
// received byte without any exchange. Outputs are poisoned before each call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace xccl_test {

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline void FillBlock(void* out, size_t bytes, uint64_t seed, int rank, uint64_t call) {
  uint64_t state = seed ^ (uint64_t(rank) << 48) ^ (call * 0xD1B54A32D192ED03ull);
  unsigned char* p = static_cast<unsigned char*>(out);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v = SplitMix64(&state);
    memcpy(p + i, &v, 8);
  }
  uint64_t v = SplitMix64(&state);
  for (; i < bytes; ++i, v >>= 8) p[i] = static_cast<unsigned char>(v);
}

// Poison differs from any block with overwhelming probability and is easy to spot in dumps.
inline void Poison(void* out, size_t bytes) { memset(out, 0xA5, bytes); }

// Compares every byte of every block of an all_gather result with the expected data. Returns
// "" or a description of the first wrong element and the number of wrong bytes.
inline std::string CheckGathered(const void* recv, size_t block_bytes, int nranks, uint64_t seed,
                                 uint64_t call, size_t elem_size) {
  std::vector<unsigned char> expected(block_bytes);
  const unsigned char* got = static_cast<const unsigned char*>(recv);
  for (int r = 0; r < nranks; ++r) {
    FillBlock(expected.data(), block_bytes, seed, r, call);
    const unsigned char* block = got + r * block_bytes;
    // (An empty block compares equal; memcmp may not be given the empty vector's null data.)
    if (block_bytes == 0 || memcmp(block, expected.data(), block_bytes) == 0) continue;
    size_t wrong = 0, first = block_bytes;
    for (size_t i = 0; i < block_bytes; ++i) {
      if (block[i] != expected[i]) {
        ++wrong;
        if (first == block_bytes) first = i;
      }
    }
    return "block of rank " + std::to_string(r) + ": " + std::to_string(wrong) + " of " +
           std::to_string(block_bytes) + " bytes wrong, first at element " +
           std::to_string(first / elem_size) + " (got byte " + std::to_string(block[first]) +
           ", want " + std::to_string(expected[first]) + ")";
  }
  return "";
}

}  // namespace xccl_test
