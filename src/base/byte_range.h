// A caller buffer as a half-open range of addresses, for the argument checks that refuse
// buffers that overlap where they must not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xccl {

struct ByteRange {
  const void* begin = nullptr;
  size_t bytes = 0;

  uintptr_t first() const { return reinterpret_cast<uintptr_t>(begin); }
  // Empty ranges overlap nothing. Callers have checked that neither range wraps the address
  // space.
  bool Overlaps(const ByteRange& other) const {
    if (bytes == 0 || other.bytes == 0) return false;
    return first() < other.first() + other.bytes && other.first() < first() + bytes;
  }
};

}  // namespace xccl
