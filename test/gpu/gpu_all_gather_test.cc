// all_gather and barrier on a GPU platform: 2, 4 and 8 ranks sharing one GPU (threads), 2 and
// 4 processes on it (CUDA/HIP IPC), and every GPU of the machine where there are several.
// Every call gets fresh data, every output is poisoned first and every byte is compared on the
// host, including guard bytes around the output (a store past the end is a failure too).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "api/comm_handle.h"
#include "base/datatype.h"
#include "base/params.h"
#include "gpu/gpu_harness.h"
#include "mp/bad_arguments.h"
#include "mp/data_pattern.h"

namespace xccl_test {
namespace {

class GpuAllGatherTest : public GpuWorldTest {
 protected:
  void RingLapsAndPieces(const char* algo);
};

TEST_P(GpuAllGatherTest, EveryDtypeInAndOutOfPlaceUnaligned) {
  Run([](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);  // same draws on every rank: counts must agree
    uint64_t call = 0;
    for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
      for (bool in_place : {false, true}) {
        const size_t counts[] = {0, 1, 7, 1 + rng() % 5000};
        for (size_t count : counts) {
          // Offsets 0..7 bytes: misaligned for every element size above one byte.
          CheckedAllGather(ctx, stream, count, dtype, in_place, (call * 3 + dtype) % 8, call);
          ++call;
          if (ctx.failures.size() > 4) return;
        }
      }
    }
  });
}

TEST_P(GpuAllGatherTest, RandomSizesUpToSeveralMiB) {
  Run([](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);
    for (uint64_t call = 0; call < 16; ++call) {
      // Log-uniform total size from 1 byte to 6 MiB, in a random dtype, split over the ranks:
      // crosses every size threshold the engines may have (inbox, dma vs kernel, chunking).
      const int dtype = static_cast<int>(rng() % xcclNumTypes);
      const double log_total =
          std::uniform_real_distribution<double>(0.0, std::log2(6.0 * (1 << 20)))(rng);
      size_t count =
          static_cast<size_t>(std::exp2(log_total)) / xccl::DataTypeSize(dtype) / ctx.nranks;
      if (call == 0) count = 0;
      CheckedAllGather(ctx, stream, count, dtype, call % 2 == 1, call % 5, call);
      if (ctx.failures.size() > 4) return;
    }
  });
}

// 200 calls enqueued back to back on each rank's own stream, with no host synchronisation
// between them: only the library orders them. Before call i, rank i % world sleeps on the
// host, so a different rank's enqueue arrives late each time while the others' streams run
// ahead. Every call keeps its own output region, so all are checked after the one sync.
TEST_P(GpuAllGatherTest, TwoHundredBackToBackWithHeldRankNoHostSync) {
  Run([](RankContext& ctx) {
    constexpr int kCalls = 200;
    struct Plan {
      size_t count;
      int dtype;
      bool in_place;
      size_t recv_offset;  // into recv_all
      size_t send_offset;  // into send_all (out of place)
      size_t host_offset;  // into host_send
    };
    std::mt19937_64 rng(ctx.seed);  // the same plan on every rank
    std::vector<Plan> plans(kCalls);
    size_t recv_bytes = 0, send_bytes = 0, host_bytes = 0;
    for (int i = 0; i < kCalls; ++i) {
      Plan& p = plans[i];
      p.dtype = i % xcclNumTypes;
      const size_t elem = xccl::DataTypeSize(p.dtype);
      // Mostly small blocks, every tenth up to 1 MiB, a few empty calls in the chain.
      const size_t max_block = i % 10 == 9 ? (1 << 20) : (16 << 10);
      p.count = i % 50 == 17 ? 0 : 1 + rng() % (max_block / elem);
      p.in_place = i % 3 == 0;
      p.recv_offset = recv_bytes;
      recv_bytes += (p.count * elem * ctx.nranks + 255) / 256 * 256;
      p.send_offset = send_bytes;
      if (!p.in_place) send_bytes += (p.count * elem + 255) / 256 * 256;
      p.host_offset = host_bytes;
      host_bytes += p.count * elem;
    }
    Stream stream;
    DeviceBuffer recv_all, send_all;
    if (!stream.Create(ctx) || !recv_all.Allocate(ctx, recv_bytes) ||
        !send_all.Allocate(ctx, send_bytes))
      return;
    // Set-up (before the first call, so not between calls): poison every output, put every
    // call's fresh data in place.
    HostBytes host_send(host_bytes);
    if (!GPU_OK(ctx, gpu::MemsetAsync(recv_all.get(), kPoisonByte, recv_bytes, stream.get())))
      return;
    for (int i = 0; i < kCalls; ++i) {
      const Plan& p = plans[i];
      const size_t block = p.count * xccl::DataTypeSize(p.dtype);
      unsigned char* host = host_send.data() + p.host_offset;
      FillBlock(host, block, ctx.seed, ctx.rank, i);
      unsigned char* dst = p.in_place ? recv_all.get() + p.recv_offset + ctx.rank * block
                                      : send_all.get() + p.send_offset;
      if (!GPU_OK(ctx, gpu::MemcpyAsync(dst, host, block, stream.get()))) return;
    }
    if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;

    for (int i = 0; i < kCalls; ++i) {
      const Plan& p = plans[i];
      const size_t block = p.count * xccl::DataTypeSize(p.dtype);
      unsigned char* recv = recv_all.get() + p.recv_offset;
      const unsigned char* send =
          p.in_place ? recv + ctx.rank * block : send_all.get() + p.send_offset;
      if (i % ctx.nranks == ctx.rank) usleep(300);
      if (!XCCL_OK(ctx, xcclAllGather(send, recv, p.count, static_cast<xcclDataType_t>(p.dtype),
                                      ctx.comm, stream.xccl()))) {
        ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
        break;  // the peers' streams now wait for a call that never comes: the sync says so
      }
    }
    HostBytes host_recv;
    if (!DrainAndCopyBack(ctx, stream, recv_all.get(), recv_bytes, "after 200 calls", &host_recv))
      return;
    for (int i = 0; i < kCalls; ++i) {
      const Plan& p = plans[i];
      const size_t elem = xccl::DataTypeSize(p.dtype);
      std::string wrong = CheckGathered(host_recv.data() + p.recv_offset, p.count * elem,
                                        ctx.nranks, ctx.seed, i, elem);
      RANK_EXPECT(ctx, wrong.empty(),
                  "call " << i << " (" << xccl::DataTypeName(p.dtype) << ", count " << p.count
                          << (p.in_place ? ", in place" : ", out of place") << "): " << wrong);
      // The padding after each region stays poisoned: no call wrote past its output.
      const size_t used = p.count * elem * ctx.nranks;
      const size_t end = i + 1 < kCalls ? plans[i + 1].recv_offset : recv_bytes;
      std::string pad =
          CheckPoisoned(host_recv.data() + p.recv_offset + used, end - p.recv_offset - used);
      RANK_EXPECT(ctx, pad.empty(), "call " << i << ": past its output: " << pad);
      if (ctx.failures.size() > 8) return;
    }
  });
}

// Every signal starts at 0xFFFFFFFE, so the first calls cross 2^32 -> 0 on the device.
// Alternating all_gather and barrier, a held rank each time, no host sync until the end.
TEST_P(GpuAllGatherTest, AcrossTheEpochWrap) {
  RunOptions options;
  options.before_init = WithEpochBase(0xFFFFFFFEu);
  Run(
      [](RankContext& ctx) {
        RANK_EXPECT(ctx, ctx.comm->impl->current_epoch() == 0xFFFFFFFEu,
                    "the preset epoch base did not take: epoch starts at "
                        << ctx.comm->impl->current_epoch());
        constexpr int kCalls = 8;
        constexpr size_t kRegion = 4096;  // bytes per call's output, > 107 floats * 8 ranks
        Stream stream;
        DeviceBuffer recv_all, send_all;
        const size_t region = kRegion * ctx.nranks;
        if (!stream.Create(ctx) || !recv_all.Allocate(ctx, region * kCalls) ||
            !send_all.Allocate(ctx, region * kCalls))
          return;
        HostBytes host(region * kCalls);
        if (!GPU_OK(ctx,
                    gpu::MemsetAsync(recv_all.get(), kPoisonByte, recv_all.bytes(), stream.get())))
          return;
        for (int call = 0; call < kCalls; call += 2) {
          const size_t count = 100 + call;
          const bool in_place = call % 4 == 0;
          unsigned char* recv = recv_all.get() + call * region;
          unsigned char* send =
              in_place ? recv + ctx.rank * count * 4 : send_all.get() + call * region;
          FillBlock(host.data() + call * region, count * 4, ctx.seed, ctx.rank, call);
          if (!GPU_OK(ctx,
                      gpu::MemcpyAsync(send, host.data() + call * region, count * 4, stream.get())))
            return;
        }
        if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
        for (int call = 0; call < kCalls; ++call) {
          if (call % ctx.nranks == ctx.rank) usleep(300);
          if (call % 2 == 1) {
            if (!XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl()))) return;
            continue;
          }
          const size_t count = 100 + call;
          unsigned char* recv = recv_all.get() + call * region;
          const unsigned char* send =
              call % 4 == 0 ? recv + ctx.rank * count * 4 : send_all.get() + call * region;
          if (!XCCL_OK(ctx, xcclAllGather(send, recv, count, xcclFloat32, ctx.comm, stream.xccl())))
            return;
        }
        if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
        ExpectNoAsyncError(ctx, "after the wrap");
        if (!GPU_OK(ctx,
                    gpu::MemcpyAsync(host.data(), recv_all.get(), host.size(), stream.get())) ||
            !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
          return;
        for (int call = 0; call < kCalls; call += 2) {
          const size_t count = 100 + call;
          std::string wrong =
              CheckGathered(host.data() + call * region, count * 4, ctx.nranks, ctx.seed, call, 4);
          RANK_EXPECT(ctx, wrong.empty(), "call " << call << " across the wrap: " << wrong);
        }
      },
      options);
}

// A window of 256 KiB in all makes the kernel engine's rings a few small slots per lane, so
// blocks of up to 1 MiB lap every ring many times within one call (flow control by credits),
// and back-to-back calls with a held rank start laps while a peer still drains the last call.
// The same calls through the dma engine (copy-engine queues; where ranks share a GPU the
// library runs the kernel engine instead), which cuts them into inbox-sized pieces.
void GpuAllGatherTest::RingLapsAndPieces(const char* algo) {
  RunOptions options;
  const std::string engine = algo;
  options.before_init = [engine] {
    xccl::Params params = xccl::GetParams();
    params.window_bytes = 256 << 10;
    params.allgather_algo = engine;
    xccl::SetParamsForTesting(params);
  };
  Run(
      [](RankContext& ctx) {
        Stream stream;
        if (!stream.Create(ctx)) return;
        const size_t counts[] = {(1 << 20) / 4 + 3, 1, 25000, (600 << 10) / 4, 7};
        uint64_t call = 0;
        for (size_t count : counts) {
          if (call % ctx.nranks == static_cast<uint64_t>(ctx.rank)) usleep(500);
          CheckedAllGather(ctx, stream, count, xcclFloat32, call % 2 == 1, 0, 900 + call);
          ++call;
          if (!ctx.failures.empty()) return;
        }
      },
      options);
}

TEST_P(GpuAllGatherTest, KernelEngineRingLapsWithSmallWindow) { RingLapsAndPieces("kernel"); }

TEST_P(GpuAllGatherTest, DmaEngineInboxPiecesWithSmallWindow) { RingLapsAndPieces("dma"); }

// No rank's barrier completes before the last rank has enqueued its own. Round r holds rank
// r % world back on the host for a few ms; it stamps the shared page just before enqueueing
// its barrier, so any other rank whose barrier completed (stream synchronised) without seeing
// the stamp left early.
TEST_P(GpuAllGatherTest, BarrierHoldsEveryRank) {
  Run([](RankContext& ctx) {
    constexpr int kRounds = 40;
    constexpr int kStampSlot = 256;  // ctx.shared[kStampSlot + round]
    Stream stream;
    if (!stream.Create(ctx)) return;
    for (int round = 0; round < kRounds; ++round) {
      volatile uint64_t* stamp = ctx.shared + kStampSlot + round;
      const bool held = round % ctx.nranks == ctx.rank;
      if (held) {
        usleep(3000);
        __atomic_store_n(const_cast<uint64_t*>(stamp), MonotonicNs(), __ATOMIC_SEQ_CST);
      }
      if (!XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl()))) return;
      if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
      const uint64_t left = MonotonicNs();
      const uint64_t entered = __atomic_load_n(const_cast<uint64_t*>(stamp), __ATOMIC_SEQ_CST);
      RANK_EXPECT(
          ctx, entered != 0 && entered <= left,
          "barrier " << round << " completed before rank " << round % ctx.nranks << " entered it");
      if (!ctx.failures.empty()) return;
    }
    ExpectNoAsyncError(ctx, "after the barriers");
  });
}

// One copy-engine queue per peer where each rank has its own GPU; none where ranks share a GPU
// (the kernel engine then moves the data, see docs/ARCHITECTURE.md). Sharing is read from the
// placement, not from the device count: on a machine of several GPUs the one-GPU worlds still
// put every rank on GPU 0.
TEST_P(GpuAllGatherTest, QueueCountIsOnePerPeerOrNoneWhenSharing) {
  const std::vector<int> placed = devices();
  const bool sharing = std::set<int>(placed.begin(), placed.end()).size() < placed.size();
  Run([sharing](RankContext& ctx) {
    int queues = -1, count = -1, rank = -1;
    if (XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues)))
      RANK_EXPECT(ctx, queues == (sharing ? 0 : ctx.nranks - 1),
                  "queue count " << queues << " with " << ctx.nranks << " ranks"
                                 << (sharing ? " sharing GPUs" : " on GPUs of their own"));
    if (XCCL_OK(ctx, xcclCommCount(ctx.comm, &count)))
      RANK_EXPECT(ctx, count == ctx.nranks, "count " << count);
    if (XCCL_OK(ctx, xcclCommUserRank(ctx.comm, &rank)))
      RANK_EXPECT(ctx, rank == ctx.rank, "rank " << rank);
  });
}

// Each bad call gives its documented error on rank 0 without advancing anything (nothing is
// enqueued), so a valid call afterwards on all ranks still works: the communicator stays
// usable. The same table as the host suite's, with device pointers.
TEST_P(GpuAllGatherTest, BadArgumentsLeaveTheCommUsable) {
  Run([](RankContext& ctx) {
    constexpr size_t kCount = 50;
    Stream stream;
    DeviceBuffer send_mem, recv_mem;
    if (!stream.Create(ctx) || !send_mem.Allocate(ctx, kCount * 4) ||
        !recv_mem.Allocate(ctx, kCount * 4 * ctx.nranks))
      return;
    uint32_t* send = reinterpret_cast<uint32_t*>(send_mem.get());
    uint32_t* recv = reinterpret_cast<uint32_t*>(recv_mem.get());
    if (ctx.rank == 0) {
      ExpectBadArgumentsRefused(ctx, send, recv, kCount, stream.xccl());
      // Nothing bad was enqueued: the stream is idle and clean.
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
      ExpectNoAsyncError(ctx, "after the bad calls");
    }
    // Null buffers are fine with count 0.
    XCCL_OK(ctx, xcclAllGather(nullptr, nullptr, 0, xcclFloat, ctx.comm, stream.xccl()));
    HostBytes host_send(kCount * 4), host_recv(kCount * 4 * ctx.nranks);
    FillBlock(host_send.data(), host_send.size(), ctx.seed, ctx.rank, 7);
    if (!GPU_OK(ctx, gpu::MemsetAsync(recv, kPoisonByte, host_recv.size(), stream.get())) ||
        !GPU_OK(ctx, gpu::MemcpyAsync(send, host_send.data(), host_send.size(), stream.get())))
      return;
    if (!XCCL_OK(ctx, xcclAllGather(send, recv, kCount, xcclUint32, ctx.comm, stream.xccl())))
      return;
    if (!GPU_OK(ctx, gpu::MemcpyAsync(host_recv.data(), recv, host_recv.size(), stream.get())) ||
        !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
      return;
    ExpectNoAsyncError(ctx, "after the valid call");
    std::string wrong = CheckGathered(host_recv.data(), kCount * 4, ctx.nranks, ctx.seed, 7, 4);
    RANK_EXPECT(ctx, wrong.empty(), "valid call after bad ones: " << wrong);
  });
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAllGatherTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);

}  // namespace
}  // namespace xccl_test
