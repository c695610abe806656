// Little-endian words of the socket backend's wire (handles, greetings, headers), so that hosts
// of either byte order agree.
#pragma once

#include <cstdint>

namespace xccl {

inline void PutWire(uint8_t* p, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

inline uint64_t GetWire(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(p[i]) << (8 * i);
  return value;
}

}  // namespace xccl
