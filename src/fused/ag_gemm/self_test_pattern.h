// The bytes ag_gemm's self test writes into each rank's receive slot, and the check of a receive
// slot that comes back, piece by piece (the self test stages through a small host buffer): a wrong
// receive slot is described by the count of wrong bytes, the first wrong row, and which rank's
// pattern of which round it holds there, if any, so that a failure says whether bytes were lost,
// stale or misplaced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xccl {

// The self test's byte at position i of source s's receive slot (or scales) in test round `round`:
// no two sources, rounds or positions share a pattern, and no byte pattern repeats at short
// distances, so a misplaced band shows up.
unsigned char PatternByte(uint32_t round, int source, size_t i, bool scale);

// Writes bytes [offset, offset + bytes) of that pattern to out[0, bytes) (the key mixed once).
void FillPattern(unsigned char* out, size_t offset, size_t bytes, uint32_t round, int source,
                 bool scale);

// The check of one receive slot that should hold `source`'s pattern of `round`, fed in pieces.
class RecvSlotCheck {
 public:
  // How many bytes from the first wrong one name whose pattern the receive slot holds (a chance
  // match of 16 bytes is 2^-128; fewer match some key too often).
  static constexpr size_t kIdentifyingBytes = 16;

  RecvSlotCheck(uint32_t round, int source, bool scale);
  // got[0, bytes) are the receive slot's bytes [offset, offset + bytes); pieces in any order.
  void Check(const unsigned char* got, size_t offset, size_t bytes);
  bool wrong() const { return wrong_ > 0; }
  size_t first_wrong() const { return first_; }
  // The description of a wrong receive slot of `recv_slot_bytes` bytes in rows of `row_bytes`,
  // given `available` (up to kIdentifyingBytes) of its bytes from first_wrong() on: the count, the
  // first wrong byte and its row, then "rank s's pattern of round r" where kIdentifyingBytes
  // match one of world's ranks within 8 rounds of `round`, else those bytes in hex.
  std::string Describe(size_t recv_slot_bytes, size_t row_bytes, const unsigned char* from_first,
                       size_t available, int world) const;

 private:
  uint32_t round_;
  int source_;
  bool scale_;
  uint64_t key_;
  size_t wrong_ = 0;
  size_t first_ = SIZE_MAX;
};

// RecvSlotCheck over a whole receive slot held in memory: its description, or "" where it is right.
std::string DescribeWrongRecvSlot(const unsigned char* got, size_t bytes, size_t row_bytes,
                                  uint32_t round, int source, int world, bool scale);

}  // namespace xccl
