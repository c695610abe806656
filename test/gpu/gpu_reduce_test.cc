// reduce_scatter and all_reduce on a GPU platform: 2, 4 and 8 ranks sharing one GPU as threads
// and as processes (and every GPU of the machine where there are several). Every call gets
// fresh data (mp/reduce_check.h: plain values, NaN / infinities / signed zeros, sums that
// overflow), every output is poisoned first with guard bytes around it, and every element is
// compared on the host with an exact and a rank-order reference; the results' bits are compared
// across ranks (reduce_scatter: the blocks gathered, and equal to an all_reduce of the same
// inputs) and across reruns. Also back-to-back calls with a held rank and no host sync, a
// captured graph replayed with fresh data, misaligned buffers and bad arguments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api/comm_handle.h"
#include "base/datatype.h"
#include "collectives/reduce/read_reduce.h"
#include "gpu/gpu_harness.h"
#include "mp/bad_arguments.h"
#include "mp/checked_reduce.h"
#include "mp/data_pattern.h"
#include "mp/reduce_check.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

xcclResult_t Call(Reduction which, const void* send, void* recv, size_t count, int dtype, int op,
                  xcclComm_t comm, xcclStream_t stream) {
  const xcclDataType_t type = static_cast<xcclDataType_t>(dtype);
  const xcclRedOp_t red = static_cast<xcclRedOp_t>(op);
  return which == Reduction::kReduceScatter
             ? xcclReduceScatter(send, recv, count, type, red, comm, stream)
             : xcclAllReduce(send, recv, count, type, red, comm, stream);
}

size_t SendElems(Reduction which, size_t count, int nranks) {
  return which == Reduction::kReduceScatter ? count * nranks : count;
}

// Where a call's buffers lie: plain device memory, xcclMemAlloc memory, or a window registered
// on the communicator over xcclMemAlloc memory (the read engine reads the last two between
// processes).
enum class Memory { kPlain, kMemAlloc, kWindow };

const char* MemoryName(Memory memory) {
  return memory == Memory::kPlain      ? "plain memory"
         : memory == Memory::kMemAlloc ? "xcclMemAlloc memory"
                                       : "a window";
}

// A device area of one Memory kind. Registering a window is collective, so every rank makes the
// same areas in the same order; freed in reverse order (processes only for the mapped kinds:
// freeing may wait for the whole device, where thread ranks' kernels wait for each other).
class Area {
 public:
  Area(RankContext& ctx, Memory memory) : ctx_(ctx), memory_(memory) {}
  Area(const Area&) = delete;
  Area& operator=(const Area&) = delete;
  ~Area() {
    if (window_ != nullptr) XCCL_OK(ctx_, xcclCommWindowDeregister(ctx_.comm, window_));
    if (mem_ != nullptr) XCCL_OK(ctx_, xcclMemFree(mem_));
  }
  bool Allocate(size_t bytes) {
    if (memory_ == Memory::kPlain) return plain_.Allocate(ctx_, bytes);
    if (!XCCL_OK(ctx_, xcclMemAlloc(&mem_, bytes))) return false;
    return memory_ == Memory::kMemAlloc ||
           XCCL_OK(ctx_,
                   xcclCommWindowRegister(ctx_.comm, mem_, bytes, &window_, XCCL_WIN_DEFAULT));
  }
  unsigned char* get() const {
    return memory_ == Memory::kPlain ? plain_.get() : static_cast<unsigned char*>(mem_);
  }

 private:
  RankContext& ctx_;
  Memory memory_;
  DeviceBuffer plain_;
  void* mem_ = nullptr;
  xcclWindow_t window_ = nullptr;
};

constexpr size_t kGuard = 64;        // poisoned bytes around every device buffer
constexpr int kBarrierSlot = 8;      // ctx.shared: the host barrier of the hash comparisons
constexpr int kHashSlot = 1024;      // ctx.shared: two rounds of per-rank hashes from here
constexpr int kGraphPhaseSlot = 16;  // ctx.shared: the host barrier of the graph's phases

// One checked call on `stream`, synchronised: fresh data for c.call, the output poisoned with
// guards, in or out of place, `offset` bytes of misalignment; the send buffer of an out-of-place
// call must come back untouched. False if the call or a copy failed (recorded); *out, where
// given, gets this rank's output.
bool CheckedGpuReduce(RankContext& ctx, const Stream& stream, Reduction which, const ReduceCall& c,
                      size_t count, bool in_place, size_t offset,
                      std::vector<unsigned char>* out = nullptr, Check check = Check::kEveryElement,
                      Memory memory = Memory::kPlain) {
  const size_t elem = xccl::DataTypeSize(c.dtype);
  const size_t send_bytes = SendElems(which, count, ctx.nranks) * elem, recv_bytes = count * elem;
  const size_t first = FirstReducedElement(which, ctx.rank, count);
  const size_t send_area = 2 * kGuard + offset + send_bytes;
  const size_t recv_area = in_place ? 0 : 2 * kGuard + offset + recv_bytes;
  Area send_mem(ctx, memory), recv_mem(ctx, memory);
  if (!send_mem.Allocate(send_area) || (!in_place && !recv_mem.Allocate(recv_area))) return false;
  HostBytes host_send(send_bytes);
  FillReduceInput(host_send.data(), 0, send_bytes / (elem == 0 ? 1 : elem), c.dtype, c.op, c.flavor,
                  ctx.seed, ctx.rank, c.call);
  unsigned char* send = send_mem.get() + kGuard + offset;
  unsigned char* recv = in_place ? send + first * elem : recv_mem.get() + kGuard + offset;
  if (!GPU_OK(ctx, gpu::MemsetAsync(send_mem.get(), kPoisonByte, send_area, stream.get())) ||
      (!in_place &&
       !GPU_OK(ctx, gpu::MemsetAsync(recv_mem.get(), kPoisonByte, recv_area, stream.get()))) ||
      !GPU_OK(ctx, gpu::MemcpyAsync(send, host_send.data(), send_bytes, stream.get())))
    return false;
  const std::string what = std::string(ReductionName(which)) + " " + c.Describe() + ", count " +
                           std::to_string(count) + (in_place ? ", in place" : ", out of place") +
                           ", offset " + std::to_string(offset) + ", in " + MemoryName(memory);
  if (memory != Memory::kPlain && count > 0) {
    // Every rank maps these buffers: the call must read them in place, not go through the region.
    xccl::BuffersAsSeen seen;
    bool reads = false;
    const xcclResult_t decided =
        xccl::ReductionsReadPeers(ctx.comm->impl.get(), "test", send, send_bytes, recv,
                                  which == Reduction::kAllReduce ? recv_bytes : 0, &seen, &reads);
    RANK_EXPECT(ctx, decided == xcclSuccess && reads,
                what << ": every rank maps the buffers, yet the read engine would not read them: "
                     << xcclGetLastError(ctx.comm));
  }
  const xcclResult_t result =
      Call(which, send, recv, count, c.dtype, c.op, ctx.comm, stream.xccl());
  RANK_EXPECT(ctx, result == xcclSuccess,
              what << ": " << xcclGetErrorString(result) << ": " << xcclGetLastError(ctx.comm));
  if (result != xcclSuccess) return false;
  HostBytes back_send(send_area), back_recv(recv_area);
  if (!GPU_OK(ctx, gpu::MemcpyAsync(back_send.data(), send_mem.get(), send_area, stream.get())) ||
      (!in_place &&
       !GPU_OK(ctx, gpu::MemcpyAsync(back_recv.data(), recv_mem.get(), recv_area, stream.get()))) ||
      !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
    return false;
  ExpectNoAsyncError(ctx, what.c_str());
  for (const HostBytes* area : {&back_send, &back_recv}) {
    if (area == &back_recv && in_place) continue;
    const char* name = area == &back_send ? "send" : "receive";
    const std::string before = CheckPoisoned(area->data(), kGuard + offset);
    RANK_EXPECT(ctx, before.empty(),
                what << ": written before the " << name << " buffer: " << before);
    const std::string after = CheckPoisoned(area->data() + area->size() - kGuard, kGuard);
    RANK_EXPECT(ctx, after.empty(), what << ": written past the " << name << " buffer: " << after);
  }
  const unsigned char* sent = back_send.data() + kGuard + offset;
  if (!in_place && send_bytes > 0)
    RANK_EXPECT(ctx, memcmp(sent, host_send.data(), send_bytes) == 0,
                what << ": the send buffer changed");
  const unsigned char* output = in_place ? sent + first * elem : back_recv.data() + kGuard + offset;
  size_t begin = 0, end = 0;
  CheckedPart(check, which, ctx.rank, ctx.nranks, count, &begin, &end);
  const std::string wrong =
      CheckReduced(output + begin * elem, first + begin, end - begin, c, ctx.seed, ctx.nranks);
  RANK_EXPECT(ctx, wrong.empty(), what << ", " << ctx.nranks << " ranks: " << wrong);
  if (out != nullptr) out->assign(output, output + recv_bytes);
  return true;
}

// Every rank's `hash` equal: exchanged through ctx.shared (two rounds of slots by the parity of
// *round) and a host barrier, so that it also works where a library call would not. True when
// every rank's is rank 0's.
bool SameOnEveryRankByHost(RankContext& ctx, uint64_t hash, uint64_t* round,
                           const std::string& what) {
  volatile uint64_t* slots = ctx.shared + kHashSlot + (*round % 2) * reduce_check::kMaxRanks;
  __atomic_store_n(const_cast<uint64_t*>(slots + ctx.rank), hash, __ATOMIC_SEQ_CST);
  if (!HostBarrier(ctx, kBarrierSlot, (*round)++)) return false;
  const std::string differ = RanksDifferingFromRankZero(slots, ctx.nranks);
  RANK_EXPECT(ctx, differ.empty(),
              what << ": the output's bits differ between rank 0 and rank(s)" << differ);
  return differ.empty();
}

// The cross-rank comparison of one result (see the file comment). False once a call failed.
bool SameBits(RankContext& ctx, const Stream& stream, Reduction which, const ReduceCall& c,
              size_t count, const std::vector<unsigned char>& output, uint64_t* round) {
  const std::string what =
      std::string(ReductionName(which)) + " " + c.Describe() + ", count " + std::to_string(count);
  // Where the bits differ, every element of this rank's whole result is checked, so that the
  // wrong ones are named (a rank checked only its own slice of an all_reduce).
  if (which == Reduction::kAllReduce) {
    if (!SameOnEveryRankByHost(ctx, HashBytes(output.data(), output.size()), round, what)) {
      const std::string wrong = CheckReduced(output.data(), 0, count, c, ctx.seed, ctx.nranks);
      RANK_EXPECT(ctx, wrong.empty(), what << ": this rank's whole output: " << wrong);
    }
    return true;
  }
  const size_t block = output.size();
  DeviceBuffer own, gathered;
  if (!own.Allocate(ctx, block) || !gathered.Allocate(ctx, block * ctx.nranks)) return false;
  HostBytes host(block * ctx.nranks);
  if (block > 0) memcpy(host.data(), output.data(), block);
  if (!GPU_OK(ctx, gpu::MemcpyAsync(own.get(), host.data(), block, stream.get())) ||
      !XCCL_OK(ctx, xcclAllGather(own.get(), gathered.get(), count,
                                  static_cast<xcclDataType_t>(c.dtype), ctx.comm, stream.xccl())) ||
      !GPU_OK(ctx, gpu::MemcpyAsync(host.data(), gathered.get(), host.size(), stream.get())) ||
      !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
    return false;
  const std::vector<unsigned char> all(host.begin(), host.end());
  std::vector<unsigned char> reduced;
  if (!CheckedGpuReduce(ctx, stream, Reduction::kAllReduce, c, count * ctx.nranks, false, 0,
                        &reduced, Check::kNone))
    return false;
  const std::string differ = FirstValueDifference(all, reduced, c.dtype);
  RANK_EXPECT(
      ctx, differ.empty(),
      what << ": the gathered blocks differ from an all_reduce of the same inputs: " << differ);
  if (!SameOnEveryRankByHost(ctx, HashBytes(all.data(), all.size()), round, what) ||
      !differ.empty()) {
    const std::string wrong =
        CheckReduced(all.data(), 0, count * ctx.nranks, c, ctx.seed, ctx.nranks);
    RANK_EXPECT(ctx, wrong.empty(), what << ": the gathered blocks on this rank: " << wrong);
    const std::string wrong_ar =
        CheckReduced(reduced.data(), 0, count * ctx.nranks, c, ctx.seed, ctx.nranks);
    RANK_EXPECT(ctx, wrong_ar.empty(), what << ": the all_reduce on this rank: " << wrong_ar);
  }
  return true;
}

class GpuReduceTest : public GpuWorldTest {
 protected:
  // Every type with every op (worlds 2 and 4; a rotating subset elsewhere): below the eager
  // size out of place and in place on the same inputs (bitwise the same), and one call of about
  // 2 MiB of send buffer (many pieces), each compared across ranks.
  void EveryTypeAndOp(Reduction which) {
    const bool full = world() == 2 || world() == 4;
    Run([which, full](RankContext& ctx) {
      Stream stream;
      if (!stream.Create(ctx)) return;
      uint64_t call = 0, round = 0;
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        const size_t elem = xccl::DataTypeSize(dtype);
        for (int op = 0; op < xcclNumOps; ++op) {
          if (!full && op != dtype % 5 && op != (dtype + 2) % 5) continue;
          // Odd counts: 12 KiB of send buffer, and 2 MiB.
          const size_t small = (12 << 10) / elem / (which == Reduction::kReduceScatter ? 8 : 1) | 1;
          const size_t large =
              (2 << 20) / elem / (which == Reduction::kReduceScatter ? ctx.nranks : 1) | 1;
          const ReduceCall s{dtype, op, static_cast<Flavor>(call % 3), call};
          std::vector<unsigned char> first, again, big;
          if (!CheckedGpuReduce(ctx, stream, which, s, small, false, 0, &first, Check::kOwnSlice) ||
              !CheckedGpuReduce(ctx, stream, which, s, small, true, 0, &again, Check::kNone))
            return;
          RANK_EXPECT(ctx, first == again,
                      ReductionName(which) << " " << s.Describe()
                                           << ": in place differs from out of place on the same "
                                              "inputs");
          if (!SameBits(ctx, stream, which, s, small, first, &round)) return;
          const ReduceCall l{dtype, op, static_cast<Flavor>((call + 1) % 3), call + 1};
          if (!CheckedGpuReduce(ctx, stream, which, l, large, (dtype + op) % 2 == 1, 0, &big,
                                Check::kOwnSlice) ||
              !SameBits(ctx, stream, which, l, large, big, &round))
            return;
          call += 2;
        }
      }
    });
  }

  // 100 calls enqueued back to back on each rank's stream with no host synchronisation: only
  // the library orders them. Before call i, rank i % world sleeps on the host, so a different
  // rank's enqueue is late each time. Random types, ops and counts (a few empty, every tenth up
  // to 512 KiB), a third in place; every call keeps its own buffers, checked after the one sync.
  // `across_the_wrap`: the window's words and the engines' call numbers start 16 below 2^32, so
  // the calls cross the wrap (block counts must still start at 0).
  void BackToBack(Reduction which, bool across_the_wrap = false) {
    RunOptions options;
    if (across_the_wrap) options.before_init = WithEpochBase(0xFFFFFFF0u);
    Run(
        [which](RankContext& ctx) {
          constexpr int kCalls = 100;
          struct Plan {
            ReduceCall c;
            size_t count;
            bool in_place;
            size_t send_at, recv_at;  // into the area
          };
          std::mt19937_64 rng(ctx.seed);  // the same plan on every rank
          std::vector<Plan> plans(kCalls);
          size_t area_bytes = 0;
          auto take = [&area_bytes](size_t bytes) {
            const size_t at = area_bytes;
            area_bytes += (bytes + 255) / 256 * 256 + 256;  // a poisoned gap after each
            return at;
          };
          for (int i = 0; i < kCalls; ++i) {
            Plan& p = plans[i];
            p.c = ReduceCall{static_cast<int>(rng() % xcclNumTypes),
                             static_cast<int>(rng() % xcclNumOps), static_cast<Flavor>(rng() % 3),
                             static_cast<uint64_t>(2000 + i)};
            const size_t elem = xccl::DataTypeSize(p.c.dtype);
            const size_t max_bytes = i % 10 == 9 ? (512 << 10) : (16 << 10);
            p.count = i % 33 == 5 ? 0 : 1 + rng() % (max_bytes / elem / ctx.nranks);
            p.in_place = i % 3 == 0;
            p.send_at = take(SendElems(which, p.count, ctx.nranks) * elem);
            p.recv_at = p.in_place
                            ? p.send_at + FirstReducedElement(which, ctx.rank, p.count) * elem
                            : take(p.count * elem);
          }
          Stream stream;
          DeviceBuffer area;
          if (!stream.Create(ctx) || !area.Allocate(ctx, area_bytes)) return;
          HostBytes host(area_bytes);
          memset(host.data(), kPoisonByte, area_bytes);
          for (const Plan& p : plans)
            FillReduceInput(host.data() + p.send_at, 0, SendElems(which, p.count, ctx.nranks),
                            p.c.dtype, p.c.op, p.c.flavor, ctx.seed, ctx.rank, p.c.call);
          if (!GPU_OK(ctx, gpu::MemcpyAsync(area.get(), host.data(), area_bytes, stream.get())) ||
              !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
            return;
          for (int i = 0; i < kCalls; ++i) {
            const Plan& p = plans[i];
            if (i % ctx.nranks == ctx.rank) usleep(300);
            if (!XCCL_OK(ctx, Call(which, area.get() + p.send_at, area.get() + p.recv_at, p.count,
                                   p.c.dtype, p.c.op, ctx.comm, stream.xccl()))) {
              ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
              break;  // the peers' streams now wait for a call that never comes: the sync says so
            }
          }
          HostBytes back;
          if (!DrainAndCopyBack(ctx, stream, area.get(), area_bytes, "after the calls", &back))
            return;
          for (int i = 0; i < kCalls; ++i) {
            const Plan& p = plans[i];
            const size_t elem = xccl::DataTypeSize(p.c.dtype);
            const std::string wrong =
                CheckReduced(back.data() + p.recv_at, FirstReducedElement(which, ctx.rank, p.count),
                             p.count, p.c, ctx.seed, ctx.nranks);
            RANK_EXPECT(ctx, wrong.empty(),
                        ReductionName(which)
                            << " call " << i << ", count " << p.count
                            << (p.in_place ? ", in place: " : ", out of place: ") << wrong);
            // The gap after the output stays poisoned.
            const size_t end = p.recv_at + p.count * elem;
            const size_t gap_end =
                p.in_place ? p.send_at + SendElems(which, p.count, ctx.nranks) * elem : end;
            const std::string gap = CheckPoisoned(back.data() + gap_end, 256);
            RANK_EXPECT(ctx, gap.empty(),
                        ReductionName(which) << " call " << i << ": past its buffers: " << gap);
            if (ctx.failures.size() > 8) return;
          }
        },
        options);
  }

  // One reduction captured into a graph on every rank and replayed 30 times, with fresh data
  // before every replay and each replay's output copied out and checked (the epoch of each
  // replay must come from device memory, as gpu_graph_test.cc says for all_gather). Ordinary
  // calls before and after must agree with the replays on the epoch. Half way, a larger ordinary
  // call grows the inboxes where calls go through them: the replays after it still address the
  // inboxes captured, kept for them (docs/ARCHITECTURE.md, "The GPU platform", the window).
  void GraphReplay(Reduction which) {
    Run([which](RankContext& ctx) {
      constexpr int kReplays = 30;
      constexpr uint64_t kFirstReplayCall = 3000;
      const ReduceCall base{xcclBfloat16, xcclSum, Flavor::kPlain, 0};
      const size_t count = which == Reduction::kReduceScatter ? 20011 : 40009;  // odd
      const size_t elem = xccl::DataTypeSize(base.dtype);
      const size_t send_bytes = SendElems(which, count, ctx.nranks) * elem;
      const size_t recv_bytes = count * elem;
      Stream stream;
      DeviceBuffer send, recv;
      HostBytes host_send(send_bytes * kReplays), host_recv(recv_bytes * kReplays);
      if (!stream.Create(ctx) || !send.Allocate(ctx, send_bytes) || !recv.Allocate(ctx, recv_bytes))
        return;
      for (int i = 0; i < kReplays; ++i) {
        FillReduceInput(host_send.data() + i * send_bytes, 0, send_bytes / elem, base.dtype,
                        base.op, base.flavor, ctx.seed, ctx.rank, kFirstReplayCall + i);
      }
      // An ordinary call first, so that the graph is captured at an epoch other than the first.
      if (!CheckedGpuReduce(ctx, stream, which, base, count, false, 0)) return;
      CapturedGraph graph;
      if (!graph.Capture(ctx, stream, kGraphPhaseSlot, [&] {
            return XCCL_OK(ctx, Call(which, send.get(), recv.get(), count, base.dtype, base.op,
                                     ctx.comm, stream.xccl()));
          }))
        return;
      // 4 MiB and more of every rank's piece, past the 1 MiB the smaller calls need.
      const size_t grown_count = (which == Reduction::kReduceScatter ? 1 : ctx.nranks) << 20;
      for (int i = 0; i < kReplays; ++i) {
        if (i == kReplays / 2 &&
            !CheckedGpuReduce(ctx, stream, which,
                              ReduceCall{xcclFloat32, xcclSum, Flavor::kPlain, 3500}, grown_count,
                              false, 0, nullptr, Check::kOwnSlice))
          break;
        if (i % ctx.nranks == ctx.rank) usleep(200);
        if (!GPU_OK(ctx, gpu::MemsetAsync(recv.get(), kPoisonByte, recv_bytes, stream.get())) ||
            !GPU_OK(ctx, gpu::MemcpyAsync(send.get(), host_send.data() + i * send_bytes, send_bytes,
                                          stream.get())) ||
            !GPU_OK(ctx, gpu::GraphLaunch(graph.exec(), stream.get())) ||
            !GPU_OK(ctx, gpu::MemcpyAsync(host_recv.data() + i * recv_bytes, recv.get(), recv_bytes,
                                          stream.get()))) {
          ctx.Fail("replay " + std::to_string(i) + " could not be enqueued; later ones not made");
          break;
        }
      }
      const bool drained = GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
      ExpectNoAsyncError(ctx, "after the replays");
      if (!drained) return;
      for (int i = 0; i < kReplays; ++i) {
        ReduceCall c = base;
        c.call = kFirstReplayCall + i;
        const std::string wrong = CheckReduced(host_recv.data() + i * recv_bytes,
                                               FirstReducedElement(which, ctx.rank, count), count,
                                               c, ctx.seed, ctx.nranks);
        RANK_EXPECT(ctx, wrong.empty(), ReductionName(which) << " replay " << i << ": " << wrong);
      }
      CheckedGpuReduce(ctx, stream, which,
                       ReduceCall{xcclFloat32, xcclMax, Flavor::kSpecials, 4000}, count, true, 0);
    });
  }

  // The header promises any alignment: buffers 1..7 bytes off for every multi-byte type, in and
  // out of place, small and above the eager size.
  void Misaligned(Reduction which) {
    Run([which](RankContext& ctx) {
      Stream stream;
      if (!stream.Create(ctx)) return;
      uint64_t call = 5000;
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        const size_t elem = xccl::DataTypeSize(dtype);
        if (elem == 1) continue;
        for (const size_t count : {size_t{7}, (size_t{256} << 10) / elem + 1}) {
          const size_t offset = 1 + call % (elem - 1);
          const ReduceCall c{dtype, static_cast<int>(call % xcclNumOps), Flavor::kPlain, call};
          if (!CheckedGpuReduce(ctx, stream, which, c, count, call % 2 == 0, offset)) return;
          ++call;
        }
      }
    });
  }

  // Each bad call is refused on rank 0 with nothing enqueued, and valid calls on every rank
  // afterwards work; NULL buffers are fine with count 0.
  void BadArguments(Reduction which) {
    Run([which](RankContext& ctx) {
      constexpr size_t kCount = 50;
      Stream stream;
      DeviceBuffer send_mem, recv_mem;
      if (!stream.Create(ctx) || !send_mem.Allocate(ctx, kCount * 4 * (ctx.nranks + 1)) ||
          !recv_mem.Allocate(ctx, kCount * 4 * (ctx.nranks + 1)))
        return;
      if (ctx.rank == 0) {
        ExpectBadReductionArgumentsRefused(ctx, reinterpret_cast<uint32_t*>(send_mem.get()),
                                           reinterpret_cast<uint32_t*>(recv_mem.get()), kCount,
                                           stream.xccl());
        GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
        ExpectNoAsyncError(ctx, "after the bad calls");
      }
      XCCL_OK(ctx, Call(which, nullptr, nullptr, 0, xcclFloat, xcclSum, ctx.comm, stream.xccl()));
      for (uint64_t call = 0; call < 2; ++call)
        if (!CheckedGpuReduce(ctx, stream, which,
                              ReduceCall{xcclUint32, xcclSum, Flavor::kPlain, 6000 + call}, kCount,
                              call == 1, 0))
          return;
    });
  }

  // Between processes the read engine reads windows and xcclMemAlloc memory: every type (ops
  // rotating), in and out of place, odd and misaligned counts from one element to 2 MiB, in each
  // kind of memory, every element checked; plain memory goes through the region and says so.
  void MappedBuffers(Reduction which) {
    const bool processes = mode() == RankMode::kProcesses;
    Run([which, processes](RankContext& ctx) {
      Stream stream;
      if (!stream.Create(ctx)) return;
      if (processes) {
        Area plain(ctx, Memory::kPlain);
        xccl::BuffersAsSeen seen;
        if (!plain.Allocate(4096)) return;
        bool reads = true;
        RANK_EXPECT(ctx,
                    xccl::ReductionsReadPeers(ctx.comm->impl.get(), "test", plain.get(), 4096,
                                              plain.get(), 4096, &seen, &reads) == xcclSuccess &&
                        !reads,
                    "plain memory of another process is not mapped, yet the read engine would "
                    "read it (or the decision failed)");
      }
      uint64_t call = 7000;
      for (const Memory memory : {Memory::kWindow, Memory::kMemAlloc}) {
        for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
          const size_t elem = xccl::DataTypeSize(dtype);
          for (const size_t count : {size_t{1}, size_t{4097}, (size_t{2} << 20) / elem / 8 + 3}) {
            const ReduceCall c{dtype, static_cast<int>(call % xcclNumOps),
                               static_cast<Flavor>(call % 3), call};
            const size_t offset = elem == 1 ? 0 : call % elem;
            if (!CheckedGpuReduce(ctx, stream, which, c, count, call % 2 == 0, offset, nullptr,
                                  Check::kEveryElement, memory))
              return;
            ++call;
          }
        }
      }
    });
  }
};

class GpuReduceScatterTest : public GpuReduceTest {};
class GpuAllReduceTest : public GpuReduceTest {};
class GpuReduceScatterMappedTest : public GpuReduceTest {};
class GpuAllReduceMappedTest : public GpuReduceTest {};

TEST_P(GpuReduceScatterMappedTest, ReadsWindowsAndMemAllocBuffers) {
  MappedBuffers(Reduction::kReduceScatter);
}
TEST_P(GpuAllReduceMappedTest, ReadsWindowsAndMemAllocBuffers) {
  MappedBuffers(Reduction::kAllReduce);
}

TEST_P(GpuReduceScatterTest, EveryTypeAndOpSmallAndLarge) {
  EveryTypeAndOp(Reduction::kReduceScatter);
}
TEST_P(GpuReduceScatterTest, HundredBackToBackWithHeldRankNoHostSync) {
  BackToBack(Reduction::kReduceScatter);
}
TEST_P(GpuReduceScatterTest, HundredBackToBackAcrossTheEpochWrap) {
  BackToBack(Reduction::kReduceScatter, /*across_the_wrap=*/true);
}
TEST_P(GpuReduceScatterTest, CapturedGraphReplayedWithFreshData) {
  GraphReplay(Reduction::kReduceScatter);
}
TEST_P(GpuReduceScatterTest, MisalignedBuffers) { Misaligned(Reduction::kReduceScatter); }
TEST_P(GpuReduceScatterTest, BadArgumentsLeaveTheCommUsable) {
  BadArguments(Reduction::kReduceScatter);
}

TEST_P(GpuAllReduceTest, EveryTypeAndOpSmallAndLarge) { EveryTypeAndOp(Reduction::kAllReduce); }
TEST_P(GpuAllReduceTest, HundredBackToBackWithHeldRankNoHostSync) {
  BackToBack(Reduction::kAllReduce);
}
TEST_P(GpuAllReduceTest, HundredBackToBackAcrossTheEpochWrap) {
  BackToBack(Reduction::kAllReduce, /*across_the_wrap=*/true);
}
TEST_P(GpuAllReduceTest, CapturedGraphReplayedWithFreshData) { GraphReplay(Reduction::kAllReduce); }
TEST_P(GpuAllReduceTest, MisalignedBuffers) { Misaligned(Reduction::kAllReduce); }
TEST_P(GpuAllReduceTest, BadArgumentsLeaveTheCommUsable) { BadArguments(Reduction::kAllReduce); }

// One GPU with 2, 4 and 8 ranks, as threads and as processes; every GPU (skipped with one) with
// a thread or a process per GPU; one GPU split into fake nodes.
std::vector<GpuWorld> ReduceGpuWorlds() {
  using M = RankMode;
  using P = Placement;
  std::vector<GpuWorld> worlds = {{M::kThreads, P::kOneGpu, 2},   {M::kThreads, P::kOneGpu, 4},
                                  {M::kThreads, P::kOneGpu, 8},   {M::kProcesses, P::kOneGpu, 2},
                                  {M::kProcesses, P::kOneGpu, 4}, {M::kProcesses, P::kOneGpu, 8},
                                  {M::kThreads, P::kAllGpus, 1},  {M::kProcesses, P::kAllGpus, 1}};
  for (const GpuWorld& w : FakeNodeGpuWorlds()) worlds.push_back(w);
  return worlds;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuReduceScatterTest, ::testing::ValuesIn(ReduceGpuWorlds()),
                         GpuWorldName);
INSTANTIATE_TEST_SUITE_P(Gpu, GpuAllReduceTest, ::testing::ValuesIn(ReduceGpuWorlds()),
                         GpuWorldName);

// Processes sharing GPU 0, where only mapped buffers are read (thread ranks read every call and
// would free mapped memory while a peer's kernel waits: Area).
std::vector<GpuWorld> MappedGpuWorlds() {
  using M = RankMode;
  using P = Placement;
  return {{M::kProcesses, P::kOneGpu, 2},
          {M::kProcesses, P::kOneGpu, 4},
          {M::kProcesses, P::kOneGpu, 8}};
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuReduceScatterMappedTest, ::testing::ValuesIn(MappedGpuWorlds()),
                         GpuWorldName);
INSTANTIATE_TEST_SUITE_P(Gpu, GpuAllReduceMappedTest, ::testing::ValuesIn(MappedGpuWorlds()),
                         GpuWorldName);

}  // namespace
}  // namespace xccl_test
