// RequireSharedSettings: ranks (threads over a real bootstrap) with one parameter changed on one
// rank all refuse with xcclInvalidUsage naming that parameter; equal settings pass.
#include "comm/shared_settings.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {
namespace {

struct Outcome {
  xcclResult_t result = xcclInternalError;
  std::string message;
};

// `world` ranks as threads; rank r checks params_of(r).
std::vector<Outcome> CheckOnRanks(int world, const std::function<Params(int)>& params_of) {
  xcclUniqueId id;
  EXPECT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << ThreadLastError();
  std::vector<Outcome> outcomes(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> bootstrap;
      outcomes[r].result = Bootstrap::Init(id, r, world, 10000, &bootstrap);
      if (outcomes[r].result == xcclSuccess)
        outcomes[r].result = RequireSharedSettings(bootstrap.get(), params_of(r));
      outcomes[r].message = ThreadLastError();
    });
  }
  for (std::thread& t : ranks) t.join();
  return outcomes;
}

TEST(SharedSettings, EqualSettingsPass) {
  std::mt19937_64 rng(std::random_device{}());
  Params params;
  params.epoch_base = static_cast<uint32_t>(rng());
  params.eager_bytes = static_cast<int64_t>(rng() % 65536);
  for (const Outcome& o : CheckOnRanks(3, [&](int) { return params; }))
    EXPECT_EQ(o.result, xcclSuccess) << o.message;
}

TEST(SharedSettings, EachDifferenceIsRefusedOnEveryRankNamingTheParameter) {
  struct Case {
    const char* parameter;
    std::function<void(Params*)> change;
  };
  const Case cases[] = {
      {"XCCL_EPOCH_BASE", [](Params* p) { p->epoch_base = 0xFFFFFFF0u; }},
      {"XCCL_EAGER_BYTES", [](Params* p) { p->eager_bytes = 4096; }},
      {"XCCL_WINDOW_BYTES", [](Params* p) { p->window_bytes = 64 << 20; }},
      {"XCCL_ALLGATHER_LL_BYTES", [](Params* p) { p->ll_bytes = 0; }},
      {"XCCL_ALLGATHER_LANES", [](Params* p) { p->allgather_lanes = 3; }},
      {"XCCL_ALLGATHER_CHUNK_BYTES", [](Params* p) { p->allgather_chunk_bytes = 1 << 20; }},
      {"XCCL_ALLGATHER_ALGO", [](Params* p) { p->allgather_algo = "dma"; }},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES", [](Params* p) { p->allreduce_oneshot_bytes = 0; }},
      {"XCCL_GEMMRS_CHUNKS", [](Params* p) { p->gemmrs_chunks = 3; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.parameter);
    const int odd_rank = 2;
    const std::vector<Outcome> outcomes = CheckOnRanks(4, [&](int r) {
      Params params;
      if (r == odd_rank) c.change(&params);
      return params;
    });
    for (size_t r = 0; r < outcomes.size(); ++r) {
      EXPECT_EQ(outcomes[r].result, xcclInvalidUsage)
          << "rank " << r << ": " << outcomes[r].message;
      EXPECT_NE(outcomes[r].message.find(c.parameter), std::string::npos) << outcomes[r].message;
      // Every rank names a rank whose setting differs from its own.
      const std::string named = r == odd_rank ? "rank 0 has" : "rank 2 has";
      EXPECT_NE(outcomes[r].message.find(named), std::string::npos) << outcomes[r].message;
    }
  }
}

// "kernel" and the empty default choose the same engine, so they agree.
TEST(SharedSettings, KernelAndDefaultEngineAgree) {
  const std::vector<Outcome> outcomes = CheckOnRanks(2, [](int r) {
    Params params;
    params.allgather_algo = r == 0 ? "kernel" : "";
    return params;
  });
  for (const Outcome& o : outcomes) EXPECT_EQ(o.result, xcclSuccess) << o.message;
}

}  // namespace
}  // namespace xccl
