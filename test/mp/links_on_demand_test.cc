// Links across nodes are made when first needed (docs/ARCHITECTURE.md, "Across nodes (host
// platform)"): after init and barriers a rank of 16 one-rank nodes holds links to the peers of
// the liveness overlay only (nodes 1, 2, 4, 8 ahead and 1, 2, 4 behind: 7 of its 15 peers), and
// a first all_gather then links its other 8 rails. A rank that linked every peer at init would
// show no growth at the all_gather.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"
#include "xccl.h"

namespace xccl_test {
namespace {

// This process's open sockets.
size_t SocketDescriptors() {
  size_t count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (dirent* entry = readdir(dir)) {
    char target[64] = {};
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    if (readlink(path.c_str(), target, sizeof(target) - 1) > 0 &&
        std::string(target).rfind("socket:", 0) == 0)
      ++count;
  }
  closedir(dir);
  return count;
}

TEST(LinksOnDemandTest, BarriersLinkTheOverlayOnlyAndAnAllGatherItsRails) {
  constexpr int kWorld = 16;
  std::string nodes = "1";
  for (int node = 1; node < kWorld; ++node) nodes += ",1";
  RunOptions options;
  // One data socket per connection: a link is then two sockets each way.
  options.before_init = Both(WithFakeNodes(nodes), WithSocketsPerLink(1));
  auto failures = RunRanks(
      RankMode::kProcesses, kWorld,
      [](RankContext& ctx) {
        for (int i = 0; i < 3; ++i)
          RANK_EXPECT(ctx, xcclBarrier(ctx.comm, nullptr) == xcclSuccess,
                      xcclGetLastError(ctx.comm));
        // The overlay's links that peers opened to this rank are answered in the background.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const size_t after_barriers = SocketDescriptors();
        std::vector<unsigned char> send(4096), recv(send.size() * ctx.nranks);
        FillBlock(send.data(), send.size(), ctx.seed, ctx.rank, 0);
        RANK_EXPECT(ctx,
                    xcclAllGather(send.data(), recv.data(), send.size(), xcclUint8, ctx.comm,
                                  nullptr) == xcclSuccess,
                    xcclGetLastError(ctx.comm));
        RANK_EXPECT(ctx, CheckGathered(recv.data(), send.size(), ctx.nranks, ctx.seed, 0, 1) == "",
                    "gathered data");
        const size_t after_gather = SocketDescriptors();
        // 8 more peers, each with at least this rank's send comm of 2 sockets (control and
        // data) by now; the peers' answering comms may still be in flight. A rank that linked
        // every peer at init grows by none.
        RANK_EXPECT(ctx, after_gather >= after_barriers + 8 * 2,
                    "sockets: " << after_barriers << " after the barriers, " << after_gather
                                << " after the all_gather (8 new links expected)");
      },
      options);
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

}  // namespace
}  // namespace xccl_test
