// RingBootstrap's group calls, collectives over a subset of ranks built on Send/Recv's
// progress engine: GroupAllGather (a ring), GroupBarrier (dissemination), and the all-gather
// over every rank of a large world (Bruck's, log2(n) rounds).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "transport/bootstrap/ring_bootstrap.h"

namespace xccl {
namespace bootstrap_internal {

// A ring over the members: in step k each passes on the block it received in step k-1.
xcclResult_t RingBootstrap::GroupAllGather(const std::vector<int>& ranks, void* data,
                                           size_t block_bytes) {
  try {
    size_t me = 0;
    XCCL_TRY(CheckGroup("GroupAllGather", ranks, &me));
    std::string what = "GroupAllGather over " + GroupText(ranks);
    if (data == nullptr && block_bytes > 0) {
      return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s of a null buffer", rank_,
                  what.c_str());
    }
    if (block_bytes > kMaxMessageBytes) {
      return Fail(xcclInvalidArgument,
                  "bootstrap: rank %d: %s: blocks of %zu bytes, at most %zu supported", rank_,
                  what.c_str(), block_bytes, kMaxMessageBytes);
    }
    const size_t g = ranks.size();
    if (g == 1) return xcclSuccess;
    const uint32_t tag = GroupTag(kGroupAllGather, ranks);
    const int next = ranks[(me + 1) % g];
    const int prev = ranks[(me + g - 1) % g];
    uint8_t* base = static_cast<uint8_t*>(data);
    const Deadline deadline(timeout_ms_);
    for (size_t step = 0; step + 1 < g; ++step) {
      size_t send_block = (me + g - step) % g;
      size_t recv_block = (me + g - step - 1) % g;
      PostedSend s(next, tag, base + send_block * block_bytes, block_bytes);
      PostedRecv r(prev, tag, base + recv_block * block_bytes, block_bytes);
      XCCL_TRY(Progress(&s, &r, deadline, what));
    }
    return xcclSuccess;
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: GroupAllGather: %s", rank_, e.what());
  }
}

// Bruck's all-gather: this rank's blocks are kept rotated (block i is rank me + i's), and in the
// round of distance d it sends its first min(d, n - d) blocks to rank me - d and receives as
// many, rank me + d's first, behind its own d. Every round's peer and size are the same on both
// sides, so ceil(log2 n) rounds fill every block, where the ring takes n - 1 hops that each wait
// for the next process to run: what makes a large world's init slow on a loaded machine.
xcclResult_t RingBootstrap::WorldAllGather(void* data, size_t block_bytes) {
  try {
    if (aborted_.load())
      return Fail(xcclInvalidUsage, "bootstrap: rank %d: AllGather after Abort()", rank_);
    if (data == nullptr)
      return Fail(xcclInvalidArgument, "bootstrap: rank %d: AllGather of a null buffer", rank_);
    const size_t n = static_cast<size_t>(nranks_), me = static_cast<size_t>(rank_);
    if (block_bytes > kMaxMessageBytes / n)
      return Fail(xcclInvalidArgument,
                  "bootstrap: rank %d: AllGather: blocks of %zu bytes over %zu ranks, at most "
                  "%zu bytes in all supported",
                  rank_, block_bytes, n, kMaxMessageBytes);
    std::vector<int> all(n);
    for (size_t r = 0; r < n; ++r) all[r] = static_cast<int>(r);
    const uint32_t tag = GroupTag(kGroupWorldAllGather, all);
    uint8_t* base = static_cast<uint8_t*>(data);
    std::vector<uint8_t> rotated(n * block_bytes);
    memcpy(rotated.data(), base + me * block_bytes, block_bytes);
    const Deadline deadline(timeout_ms_);
    const std::string what = "AllGather over " + std::to_string(n) + " ranks";
    for (size_t dist = 1; dist < n; dist *= 2) {
      const size_t count = std::min(dist, n - dist);
      PostedSend s(static_cast<int>((me + n - dist) % n), tag, rotated.data(), count * block_bytes);
      PostedRecv r(static_cast<int>((me + dist) % n), tag, rotated.data() + dist * block_bytes,
                   count * block_bytes);
      XCCL_TRY(Progress(&s, &r, deadline, what));
    }
    for (size_t i = 1; i < n; ++i)
      memcpy(base + ((me + i) % n) * block_bytes, rotated.data() + i * block_bytes, block_bytes);
    return xcclSuccess;
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: AllGather: %s", rank_, e.what());
  }
}

// Dissemination: in round k each member signals the one 2^k after it and waits for the one
// 2^k before it; after ceil(log2 g) rounds every member has heard, indirectly, from all.
xcclResult_t RingBootstrap::GroupBarrier(const std::vector<int>& ranks) {
  try {
    size_t me = 0;
    XCCL_TRY(CheckGroup("GroupBarrier", ranks, &me));
    const size_t g = ranks.size();
    if (g == 1) return xcclSuccess;
    std::string what = "GroupBarrier over " + GroupText(ranks);
    const uint32_t tag = GroupTag(kGroupBarrier, ranks);
    const Deadline deadline(timeout_ms_);
    for (size_t dist = 1; dist < g; dist *= 2) {
      PostedSend s(ranks[(me + dist) % g], tag, nullptr, 0);
      PostedRecv r(ranks[(me + g - dist) % g], tag, nullptr, 0);
      XCCL_TRY(Progress(&s, &r, deadline, what));
    }
    return xcclSuccess;
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: GroupBarrier: %s", rank_, e.what());
  }
}

xcclResult_t RingBootstrap::CheckGroup(const char* call, const std::vector<int>& ranks,
                                       size_t* me) {
  if (aborted_.load()) {
    return Fail(xcclInvalidUsage, "bootstrap: rank %d: %s after Abort()", rank_, call);
  }
  if (ranks.empty()) {
    return Fail(xcclInvalidArgument, "bootstrap: rank %d: %s with an empty rank list", rank_, call);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= nranks_) {
      return Fail(xcclInvalidArgument,
                  "bootstrap: rank %d: %s: ranks[%zu] = %d is out of range for %d ranks", rank_,
                  call, i, ranks[i], nranks_);
    }
    if (i > 0 && ranks[i] <= ranks[i - 1]) {
      return Fail(xcclInvalidArgument,
                  "bootstrap: rank %d: %s: the rank list must be sorted and distinct, but "
                  "ranks[%zu] = %d follows ranks[%zu] = %d",
                  rank_, call, i, ranks[i], i - 1, ranks[i - 1]);
    }
  }
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank_);
  if (it == ranks.end() || *it != rank_) {
    return Fail(xcclInvalidArgument,
                "bootstrap: rank %d: %s: the rank list (%s) does not contain this rank", rank_,
                call, GroupText(ranks).c_str());
  }
  *me = static_cast<size_t>(it - ranks.begin());
  return xcclSuccess;
}

std::string RingBootstrap::GroupText(const std::vector<int>& ranks) {
  std::string text = "ranks {";
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) {
    text += (i ? "," : "") + std::to_string(ranks[i]);
  }
  if (ranks.size() > 16) text += ",... (" + std::to_string(ranks.size()) + " ranks)";
  return text + "}";
}

// The reserved bit, the op, and a hash of the member list: members that disagree on the
// list wait for tags the others never send, and time out naming a peer, rather than pair
// up messages of different groups.
uint32_t RingBootstrap::GroupTag(GroupOp op, const std::vector<int>& ranks) {
  uint32_t h = 2166136261u;  // FNV-1a over the ranks' bytes
  for (int r : ranks) {
    for (int i = 0; i < 4; ++i) {
      h ^= static_cast<uint8_t>(static_cast<uint32_t>(r) >> (8 * i));
      h *= 16777619u;
    }
  }
  return kReservedTagBit | (static_cast<uint32_t>(op) << 29) | (h & ((1u << 29) - 1));
}

}  // namespace bootstrap_internal
}  // namespace xccl
