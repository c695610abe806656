// One reduce_scatter or all_reduce on the host platform checked on every element: fresh data
// for the call, the output poisoned first, guard bytes before and after every buffer, in or out
// of place, `offset` bytes of misalignment; the send buffer of an out-of-place call must come
// back untouched. Shared by the host suites.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "mp/reduce_check.h"
#include "xccl.h"

namespace xccl_test {

enum class Reduction { kReduceScatter, kAllReduce };

inline const char* ReductionName(Reduction which) {
  return which == Reduction::kReduceScatter ? "reduce_scatter" : "all_reduce";
}

// Bytes kept poisoned around every buffer, to catch stores outside it.
constexpr size_t kReduceGuardBytes = 64;

// The first element of every rank's send buffer that this rank's output reduces.
inline size_t FirstReducedElement(Reduction which, int rank, size_t count) {
  return which == Reduction::kReduceScatter ? static_cast<size_t>(rank) * count : 0;
}

// "" or where the first of `bytes` bytes at `data` is not the poison byte.
inline std::string FindUnpoisoned(const unsigned char* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    if (data[i] != 0xA5)
      return "byte " + std::to_string(i) + " of " + std::to_string(bytes) + " is " +
             std::to_string(data[i]) + ", not the poison";
  return "";
}

// Which output elements a checked call compares with the references. kOwnSlice (all_reduce):
// rank r checks the r-th of nranks slices; with the outputs then found bitwise equal across
// ranks (SameOnEveryRank), every element of every rank is checked at 1/nranks of the cost.
// kNone: the caller compares the output with one checked already.
enum class Check { kEveryElement, kOwnSlice, kNone };

// The part [*begin, *end) of a `count`-element output that `check` compares.
inline void CheckedPart(Check check, Reduction which, int rank, int nranks, size_t count,
                        size_t* begin, size_t* end) {
  *begin = 0;
  *end = check == Check::kNone ? 0 : count;
  if (check == Check::kOwnSlice && which == Reduction::kAllReduce) {
    *begin = count * rank / nranks;
    *end = count * (rank + 1) / nranks;
  }
}

// One checked call on `comm`, where this rank is ctx.rank of ctx.nranks. `count` is recvcount
// (reduce_scatter) or count (all_reduce). Returns false if the call itself failed (the failure
// is recorded); data failures are recorded and return true, so that every rank goes on making
// the same calls. *out, where given, receives this rank's output bytes.
inline bool CheckedReduce(RankContext& ctx, xcclComm_t comm, Reduction which, const ReduceCall& c,
                          size_t count, bool in_place, size_t offset,
                          std::vector<unsigned char>* out = nullptr,
                          Check check = Check::kEveryElement) {
  const size_t elem = xccl::DataTypeSize(c.dtype);
  const size_t send_elems = which == Reduction::kReduceScatter ? count * ctx.nranks : count;
  const size_t send_bytes = send_elems * elem, recv_bytes = count * elem;
  const size_t first = FirstReducedElement(which, ctx.rank, count);
  // [guard][offset][buffer][guard]: the offset's bytes stay poisoned too.
  std::vector<unsigned char> send_storage(2 * kReduceGuardBytes + offset + send_bytes);
  std::vector<unsigned char> recv_storage(in_place ? 0
                                                   : 2 * kReduceGuardBytes + offset + recv_bytes);
  Poison(send_storage.data(), send_storage.size());
  Poison(recv_storage.data(), recv_storage.size());
  unsigned char* send = send_storage.data() + kReduceGuardBytes + offset;
  FillReduceInput(send, 0, send_elems, c.dtype, c.op, c.flavor, ctx.seed, ctx.rank, c.call);
  const std::vector<unsigned char> sent(send, send + send_bytes);
  unsigned char* recv =
      in_place ? send + first * elem : recv_storage.data() + kReduceGuardBytes + offset;
  const std::string what = std::string(ReductionName(which)) + " " + c.Describe() + ", count " +
                           std::to_string(count) + (in_place ? ", in place" : ", out of place") +
                           ", offset " + std::to_string(offset);
  const xcclDataType_t dtype = static_cast<xcclDataType_t>(c.dtype);
  const xcclRedOp_t op = static_cast<xcclRedOp_t>(c.op);
  const xcclResult_t result = which == Reduction::kReduceScatter
                                  ? xcclReduceScatter(send, recv, count, dtype, op, comm, nullptr)
                                  : xcclAllReduce(send, recv, count, dtype, op, comm, nullptr);
  RANK_EXPECT(ctx, result == xcclSuccess,
              what << ": " << xcclGetErrorString(result) << ": " << xcclGetLastError(comm));
  if (result != xcclSuccess) return false;
  for (const std::vector<unsigned char>* storage : {&send_storage, &recv_storage}) {
    if (storage->empty()) continue;
    const std::string before = FindUnpoisoned(storage->data(), kReduceGuardBytes + offset);
    RANK_EXPECT(ctx, before.empty(),
                what << ": written before the " << (storage == &send_storage ? "send" : "receive")
                     << " buffer: " << before);
    const std::string after =
        FindUnpoisoned(storage->data() + storage->size() - kReduceGuardBytes, kReduceGuardBytes);
    RANK_EXPECT(ctx, after.empty(),
                what << ": written past the " << (storage == &send_storage ? "send" : "receive")
                     << " buffer: " << after);
  }
  if (!in_place && send_bytes > 0) {
    RANK_EXPECT(ctx, memcmp(send, sent.data(), send_bytes) == 0,
                what << ": the send buffer changed");
  }
  size_t begin = 0, end = 0;
  CheckedPart(check, which, ctx.rank, ctx.nranks, count, &begin, &end);
  const std::string wrong =
      CheckReduced(recv + begin * elem, first + begin, end - begin, c, ctx.seed, ctx.nranks);
  RANK_EXPECT(ctx, wrong.empty(),
              ReductionName(which) << ", " << ctx.nranks << " ranks, count " << count
                                   << (in_place ? ", in place" : ", out of place") << ", offset "
                                   << offset << ": " << wrong);
  if (out != nullptr) out->assign(recv, recv + recv_bytes);
  return true;
}

// The ranks whose hash in `slots` (one per rank, after a barrier) differs from rank 0's, as
// " r1 r2 ..."; empty where all agree.
inline std::string RanksDifferingFromRankZero(volatile uint64_t* slots, int nranks) {
  std::string differ;
  const uint64_t first = __atomic_load_n(const_cast<uint64_t*>(slots), __ATOMIC_SEQ_CST);
  for (int r = 1; r < nranks; ++r)
    if (__atomic_load_n(const_cast<uint64_t*>(slots + r), __ATOMIC_SEQ_CST) != first)
      differ += " " + std::to_string(r);
  return differ;
}

// Every rank's `hash` compared through ctx.shared (slots 1024 on: two rounds' worth, by the
// parity of `round`, so that a rank already writing the next round's never overwrites one a
// slower rank still reads) and a barrier on `comm`. Records a failure naming the ranks that
// differ from rank 0 (*equal, where given, says whether any did); false if the barrier failed.
inline bool SameOnEveryRank(RankContext& ctx, xcclComm_t comm, uint64_t hash, uint64_t round,
                            const std::string& what, bool* equal = nullptr) {
  constexpr int kSlot = 1024;
  volatile uint64_t* slots = ctx.shared + kSlot + (round % 2) * reduce_check::kMaxRanks;
  __atomic_store_n(const_cast<uint64_t*>(slots + ctx.rank), hash, __ATOMIC_SEQ_CST);
  const xcclResult_t barrier = xcclBarrier(comm, nullptr);
  RANK_EXPECT(ctx, barrier == xcclSuccess,
              what << ": the barrier of the comparison: " << xcclGetLastError(comm));
  if (barrier != xcclSuccess) return false;
  const std::string differ = RanksDifferingFromRankZero(slots, ctx.nranks);
  RANK_EXPECT(ctx, differ.empty(),
              what << ": the output's bits differ between rank 0 and rank(s)" << differ);
  if (equal != nullptr) *equal = differ.empty();
  return true;
}

// This rank's reduce_scatter block gathered from every rank (xcclAllGather on `comm`): the
// whole reduction, for comparison with an all_reduce of the same inputs. False if it failed.
inline bool GatherBlocks(RankContext& ctx, xcclComm_t comm, const std::vector<unsigned char>& block,
                         size_t count, int dtype, std::vector<unsigned char>* gathered) {
  gathered->assign(block.size() * ctx.nranks, 0);
  const xcclResult_t result = xcclAllGather(block.data(), gathered->data(), count,
                                            static_cast<xcclDataType_t>(dtype), comm, nullptr);
  RANK_EXPECT(ctx, result == xcclSuccess, "gathering the blocks: " << xcclGetLastError(comm));
  return result == xcclSuccess;
}

// "" or the first byte where two outputs of the same inputs differ.
inline std::string FirstDifference(const std::vector<unsigned char>& a,
                                   const std::vector<unsigned char>& b, size_t elem) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i])
      return "first at element " + std::to_string(i / elem) + " (byte " + std::to_string(a[i]) +
             " vs " + std::to_string(b[i]) + ")";
  }
  return "";
}

// "" or the first element where two results of the same inputs by different collectives
// (reduce_scatter's blocks gathered, an all_reduce) differ: bit for bit, except that any NaN
// equals any NaN (the contract fixes the bits of one collective's result, not NaN payloads
// across collectives).
inline std::string FirstValueDifference(const std::vector<unsigned char>& a,
                                        const std::vector<unsigned char>& b, int dtype) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  return reduce_check::WithType(dtype, [&](auto t) -> std::string {
    using T = decltype(t);
    using S = typename T::Storage;
    for (size_t i = 0; i + sizeof(S) <= a.size(); i += sizeof(S)) {
      S x, y;
      memcpy(&x, a.data() + i, sizeof(S));
      memcpy(&y, b.data() + i, sizeof(S));
      if (reduce_check::CodeOf<T>(x) == reduce_check::CodeOf<T>(y)) continue;
      if (reduce_check::IsNan<T>(x) && reduce_check::IsNan<T>(y)) continue;
      return "first at element " + std::to_string(i / sizeof(S)) + ": " + reduce_check::Show<T>(x) +
             " vs " + reduce_check::Show<T>(y);
    }
    return "";
  });
}

}  // namespace xccl_test
