// The bodies shared by the host suites of reduce_scatter and all_reduce (reduce_scatter_test.cc,
// all_reduce_test.cc): one fixture per collective, parameterised as all_gather_test.cc's by
// mode, world and fake-node split, running these bodies with its collective.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/datatype.h"
#include "mp/checked_reduce.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"

namespace xccl_test {

// (mode, world, ranks per node: "" for one node).
using ReduceParam = std::tuple<RankMode, int, const char*>;

class ReduceSuite : public ::testing::TestWithParam<ReduceParam> {
 protected:
  RankMode mode() const { return std::get<0>(GetParam()); }
  int world() const { return std::get<1>(GetParam()); }
  const char* nodes() const { return std::get<2>(GetParam()); }
  // The full type x op matrix where it is cheap enough (worlds 2 and 4 on one node); a
  // rotating subset elsewhere (every type, every op, fewer pairs).
  bool FullMatrix() const { return (world() == 2 || world() == 4) && std::string(nodes()).empty(); }

  // RunRanks with this case's node split, and a 10 s deadline so that a broken library fails
  // naming a rank instead of hanging until the runner's.
  void Run(const std::function<void(RankContext&)>& body, RunOptions options = RunOptions()) {
    options.before_init =
        Both(Both(WithTimeoutMs(10000), WithFakeNodes(nodes())), options.before_init);
    const std::vector<std::string> failures = RunRanks(mode(), world(), body, options);
    RestoreParams();
    for (const auto& failure : failures) ADD_FAILURE() << failure;
    if (mode() == RankMode::kProcesses) {
      for (const auto& name : LeftoverShm(LastChildPids()))
        ADD_FAILURE() << "left in /dev/shm: " << name;
    }
  }

  // Every type with every op (or the subset), out of place then in place on the same inputs,
  // at counts 0, 1, a small odd one and a random one up to 3000, misaligned by 0..7 bytes:
  // every element against both references (all_reduce: each rank its slice, the rest through
  // the bitwise comparison across ranks), the two runs bitwise equal, and the result's bits
  // compared across ranks (all_reduce: the outputs; reduce_scatter: the blocks gathered, and
  // equal to an all_reduce of the same inputs).
  void EveryTypeAndOp(Reduction which) {
    const bool full = FullMatrix();
    Run([which, full](RankContext& ctx) {
      std::mt19937_64 rng(ctx.seed);  // the same draws on every rank: counts must agree
      uint64_t call = 0, round = 0;
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        for (int op = 0; op < xcclNumOps; ++op) {
          if (!full && op != dtype % 5 && op != (dtype + 2) % 5) continue;
          const size_t counts[] = {0, 1, 1 + 2 * (rng() % 40), 1 + rng() % 3000};
          for (size_t count : counts) {
            const ReduceCall c{dtype, op, static_cast<Flavor>(call % 3), call};
            std::vector<unsigned char> first, again;
            if (!CheckedReduce(ctx, ctx.comm, which, c, count, false, (call * 3 + dtype) % 8,
                               &first, Check::kOwnSlice) ||
                !CheckedReduce(ctx, ctx.comm, which, c, count, true, (call * 5 + 1) % 8, &again,
                               Check::kNone))
              return;
            const std::string rerun = FirstDifference(first, again, xccl::DataTypeSize(dtype));
            RANK_EXPECT(ctx, rerun.empty(),
                        ReductionName(which) << " " << c.Describe() << ", count " << count
                                             << ": in place differs from out of place on the "
                                                "same inputs: "
                                             << rerun);
            if (!SameBits(ctx, which, c, count, first, round++)) return;
            ++call;
          }
        }
      }
    });
  }

  // Twelve calls of log-uniform sizes, the first of them the largest (the send buffer up to
  // 4 MiB, 2 MiB at world 8: pieces well above the 64 KiB eager size), random type, op and
  // flavor; each out of place, again in place (bitwise the same), compared across ranks.
  void RandomSizes(Reduction which) {
    Run([which](RankContext& ctx) {
      std::mt19937_64 rng(ctx.seed);
      const double max_bytes = (ctx.nranks >= 8 ? 2.0 : 4.0) * (1 << 20);
      uint64_t round = 0;
      for (uint64_t call = 0; call < 12; ++call) {
        const int dtype = static_cast<int>(rng() % xcclNumTypes);
        const int op = static_cast<int>(rng() % xcclNumOps);
        const Flavor flavor = static_cast<Flavor>(rng() % 3);
        const double log_bytes =
            call == 0 ? std::log2(max_bytes)
                      : std::uniform_real_distribution<double>(0.0, std::log2(max_bytes))(rng);
        const size_t send_elems =
            static_cast<size_t>(std::exp2(log_bytes)) / xccl::DataTypeSize(dtype);
        const size_t count =
            which == Reduction::kReduceScatter ? send_elems / ctx.nranks : send_elems;
        const size_t offset = rng() % 8;
        const ReduceCall c{dtype, op, flavor, 100 + call};
        std::vector<unsigned char> first, again;
        if (!CheckedReduce(ctx, ctx.comm, which, c, count, false, offset, &first,
                           Check::kOwnSlice) ||
            !CheckedReduce(ctx, ctx.comm, which, c, count, true, 7 - offset, &again, Check::kNone))
          return;
        const std::string rerun = FirstDifference(first, again, xccl::DataTypeSize(dtype));
        RANK_EXPECT(ctx, rerun.empty(),
                    ReductionName(which) << " " << c.Describe() << ", count " << count
                                         << ": the rerun (in place) differs: " << rerun);
        if (!SameBits(ctx, which, c, count, first, round++)) return;
      }
    });
  }

  // No host synchronisation between calls: only the library orders them. Before call i, rank
  // i % world sleeps, so a different rank arrives late each time while the others run ahead.
  // Every type and op in turn, small counts, a third of the calls in place, every call checked.
  void ThousandBackToBack(Reduction which) {
    Run([which](RankContext& ctx) {
      for (uint64_t call = 0; call < 1000; ++call) {
        if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(200);
        const ReduceCall c{static_cast<int>(call % xcclNumTypes),
                           static_cast<int>((call / xcclNumTypes) % xcclNumOps),
                           call % 4 == 3 ? Flavor::kSpecials : Flavor::kPlain, 1000 + call};
        const size_t count = 1 + (call * 37) % 257;
        // Only a failed call stops a rank: a wrong result on one rank must not leave its peers
        // waiting for its next call.
        if (!CheckedReduce(ctx, ctx.comm, which, c, count, call % 3 == 0, call % 4)) return;
      }
    });
  }

 private:
  // The cross-rank comparison of one result: all_reduce's output hashed on every rank;
  // reduce_scatter's blocks gathered (xcclAllGather), hashed, and compared with an all_reduce
  // of the same inputs (the same reduction of every element, so the same bits).
  static bool SameBits(RankContext& ctx, Reduction which, const ReduceCall& c, size_t count,
                       const std::vector<unsigned char>& output, uint64_t round) {
    const std::string what =
        std::string(ReductionName(which)) + " " + c.Describe() + ", count " + std::to_string(count);
    // Where the bits differ, every element of this rank's whole result is checked, so that the
    // wrong ones are named (a rank checked only its own slice of an all_reduce).
    bool equal = true;
    if (which == Reduction::kAllReduce) {
      if (!SameOnEveryRank(ctx, ctx.comm, HashBytes(output.data(), output.size()), round, what,
                           &equal))
        return false;
      if (!equal) {
        const std::string wrong = CheckReduced(output.data(), 0, count, c, ctx.seed, ctx.nranks);
        RANK_EXPECT(ctx, wrong.empty(), what << ": this rank's whole output: " << wrong);
      }
      return true;
    }
    std::vector<unsigned char> gathered, reduced;
    if (!GatherBlocks(ctx, ctx.comm, output, count, c.dtype, &gathered)) return false;
    if (!CheckedReduce(ctx, ctx.comm, Reduction::kAllReduce, c, count * ctx.nranks, false, 0,
                       &reduced, Check::kNone))
      return false;
    const std::string differ = FirstValueDifference(gathered, reduced, c.dtype);
    RANK_EXPECT(
        ctx, differ.empty(),
        what << ": the gathered blocks differ from an all_reduce of the same inputs: " << differ);
    if (!SameOnEveryRank(ctx, ctx.comm, HashBytes(gathered.data(), gathered.size()), round, what,
                         &equal))
      return false;
    if (!equal || !differ.empty()) {
      const std::string wrong =
          CheckReduced(gathered.data(), 0, count * ctx.nranks, c, ctx.seed, ctx.nranks);
      RANK_EXPECT(ctx, wrong.empty(), what << ": the gathered blocks on this rank: " << wrong);
      const std::string wrong_ar =
          CheckReduced(reduced.data(), 0, count * ctx.nranks, c, ctx.seed, ctx.nranks);
      RANK_EXPECT(ctx, wrong_ar.empty(), what << ": the all_reduce on this rank: " << wrong_ar);
    }
    return true;
  }
};

inline std::string ReduceParamName(const ::testing::TestParamInfo<ReduceParam>& info) {
  std::string name = std::string(ModeName(std::get<0>(info.param))) + "World" +
                     std::to_string(std::get<1>(info.param));
  std::string nodes = std::get<2>(info.param);
  if (!nodes.empty()) {
    for (char& c : nodes)
      if (c == ',') c = 'x';
    name += "Nodes" + nodes;
  }
  return name;
}

// Worlds 1, 2, 3, 4 and 8 on one node, as threads and as processes.
inline auto ReduceWorlds() {
  return ::testing::Combine(::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                            ::testing::Values(1, 2, 3, 4, 8), ::testing::Values(""));
}

// Split over fake nodes (the ranks of other nodes reached over the net socket backend only):
// 2+2, the uneven 2+1 and 3+1+2, and 1+1+1 (every rank its own node), as threads and processes.
inline std::vector<ReduceParam> ReduceNodeShapes() {
  std::vector<ReduceParam> shapes;
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses}) {
    shapes.push_back(ReduceParam(mode, 4, "2,2"));
    shapes.push_back(ReduceParam(mode, 3, "2,1"));
    shapes.push_back(ReduceParam(mode, 6, "3,1,2"));
    shapes.push_back(ReduceParam(mode, 3, "1,1,1"));
  }
  return shapes;
}

}  // namespace xccl_test
