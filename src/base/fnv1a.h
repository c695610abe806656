// FNV-1a, 64-bit: each step is a bijection of the state for a given byte, so any single changed
// byte always changes the sum. For checksums and identities, not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xccl {

inline uint64_t Fnv1a(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

inline uint64_t Fnv1a(const std::string& text) { return Fnv1a(text.data(), text.size()); }

}  // namespace xccl
