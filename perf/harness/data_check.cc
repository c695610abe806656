#include "harness/data_check.h"

#include "base/mix64.h"
#include "harness/datatypes.h"

namespace xccl_perf {
namespace {

using xccl::SplitMix64;

// Turns random bits into a finite value of the type by clearing one exponent bit of the
// all-ones exponent (Inf/NaN) encodings; every other pattern, subnormals included, is kept.
uint64_t MakeFinite(xcclDataType_t type, uint64_t bits) {
  switch (type) {
    case xcclFloat16:
      if (((bits >> 10) & 0x1f) == 0x1f) bits &= ~(1ull << 14);
      break;
    case xcclBfloat16:
      if (((bits >> 7) & 0xff) == 0xff) bits &= ~(1ull << 14);
      break;
    case xcclFloat32:
      if (((bits >> 23) & 0xff) == 0xff) bits &= ~(1ull << 30);
      break;
    case xcclFloat64:
      if (((bits >> 52) & 0x7ff) == 0x7ff) bits &= ~(1ull << 62);
      break;
    case xcclFloat8e4m3:
      // OCP e4m3 (fn) has no infinity; only S.1111.111 is NaN.
      if ((bits & 0x7f) == 0x7f) bits &= ~0x40ull;
      break;
    case xcclFloat8e5m2:
      if (((bits >> 2) & 0x1f) == 0x1f) bits &= ~0x40ull;
      break;
    default:
      break;  // every bit pattern of an integer type is a value
  }
  return bits;
}

// Calls visit(i, bits) for each element in order. One 64-bit hash yields 8/W elements, which
// keeps generation several times faster than the copy being checked for the narrow types.
template <typename Word, typename Visit>
void ForEachExpected(xcclDataType_t type, size_t count, int rank, uint64_t seed, Visit visit) {
  constexpr size_t kPerHash = sizeof(uint64_t) / sizeof(Word);
  constexpr unsigned kBits = 8 * sizeof(Word);
  const uint64_t base = SplitMix64(seed ^ (static_cast<uint64_t>(rank) * 0xD1B54A32D192ED03ull));
  for (size_t i = 0; i < count; i += kPerHash) {
    uint64_t hash = SplitMix64(base + (i / kPerHash) * 0x9E3779B97F4A7C15ull);
    size_t lanes = count - i < kPerHash ? count - i : kPerHash;
    for (size_t lane = 0; lane < lanes; ++lane) {
      Word bits = static_cast<Word>(MakeFinite(type, static_cast<Word>(hash)));
      visit(i + lane, bits);
      if constexpr (kBits < 64) hash >>= kBits;
    }
  }
}

template <typename Word>
void Fill(void* dst, xcclDataType_t type, size_t count, int rank, uint64_t seed, Word flip) {
  Word* out = static_cast<Word*>(dst);
  ForEachExpected<Word>(type, count, rank, seed,
                        [&](size_t i, Word bits) { out[i] = static_cast<Word>(bits ^ flip); });
}

template <typename Word>
size_t Count(const void* got, xcclDataType_t type, size_t count, int rank, uint64_t seed) {
  const Word* in = static_cast<const Word*>(got);
  size_t wrong = 0;
  ForEachExpected<Word>(type, count, rank, seed,
                        [&](size_t i, Word bits) { wrong += in[i] != bits; });
  return wrong;
}

void FillWithFlip(void* dst, xcclDataType_t type, size_t count, int rank, uint64_t seed,
                  bool flip) {
  switch (TypeSize(type)) {
    case 1:
      Fill<uint8_t>(dst, type, count, rank, seed, flip ? 0xff : 0);
      break;
    case 2:
      Fill<uint16_t>(dst, type, count, rank, seed, flip ? 0xffff : 0);
      break;
    case 4:
      Fill<uint32_t>(dst, type, count, rank, seed, flip ? ~0u : 0);
      break;
    case 8:
      Fill<uint64_t>(dst, type, count, rank, seed, flip ? ~0ull : 0);
      break;
  }
}

}  // namespace

void FillExpected(void* dst, xcclDataType_t type, size_t count, int rank, uint64_t seed) {
  FillWithFlip(dst, type, count, rank, seed, false);
}

void FillPoison(void* dst, xcclDataType_t type, size_t count, int rank, uint64_t seed) {
  FillWithFlip(dst, type, count, rank, seed, true);
}

size_t CountWrong(const void* got, xcclDataType_t type, size_t count, int rank, uint64_t seed) {
  switch (TypeSize(type)) {
    case 1:
      return Count<uint8_t>(got, type, count, rank, seed);
    case 2:
      return Count<uint16_t>(got, type, count, rank, seed);
    case 4:
      return Count<uint32_t>(got, type, count, rank, seed);
    case 8:
      return Count<uint64_t>(got, type, count, rank, seed);
  }
  return count;
}

}  // namespace xccl_perf
