// The bytes ag_gemm's self test writes into each rank's slot, and the description of a slot that
// came back wrong: which rank's pattern of which round it holds, if any, so that a failure says
// whether bytes were lost, stale or misplaced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xccl {

// The self test's byte at position i of source s's slot (or scales) in test round `round`: no
// two sources, rounds or positions share a pattern, and no byte pattern repeats at short
// distances, so a misplaced band shows up.
unsigned char PatternByte(uint32_t round, int source, size_t i, bool scale);

// Writes bytes [0, bytes) of that pattern to `out` (PatternByte for each, the key mixed once).
void FillPattern(unsigned char* out, size_t bytes, uint32_t round, int source, bool scale);

// What a slot of `bytes` bytes (rows of `row_bytes`) that should hold `source`'s pattern of
// `round` holds instead: the count of wrong bytes, the first wrong byte and its row, then from
// there "rank s's pattern of round r" where its next 16 bytes match one of world's ranks within
// 8 rounds of `round`, else (also where fewer than 16 bytes are left to compare) its bytes in
// hex. Empty where the slot is right.
std::string DescribeWrongSlot(const unsigned char* got, size_t bytes, size_t row_bytes,
                              uint32_t round, int source, int world, bool scale);

}  // namespace xccl
