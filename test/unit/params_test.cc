// ParseParams: every XCCL_* parameter through a fake environment, defaults, malformed values.
#include "base/params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>

namespace xccl {
namespace {

const char* const kAllNames[] = {
    "XCCL_DEBUG",      "XCCL_DEBUG_SUBSYS",  "XCCL_DEBUG_FILE",         "XCCL_TIMEOUT_MS",
    "XCCL_COMM_ID",    "XCCL_SOCKET_IFNAME", "XCCL_ALLGATHER_ALGO",     "XCCL_EPOCH_BASE",
    "XCCL_SPIN_COUNT", "XCCL_EAGER_BYTES",   "XCCL_YIELD_COUNT",        "XCCL_WINDOW_BYTES",
    "XCCL_GPU_QUEUES", "XCCL_GEMM_PLUGIN",   "XCCL_ALLGATHER_LL_BYTES", "XCCL_ALLGATHER_LANES"};

// A fake environment that also records which names were asked for.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::set<std::string> queried;

  Params Parse(std::string* errors) {
    return ParseParams(
        [this](const char* name) -> const char* {
          queried.insert(name);
          auto it = vars.find(name);
          return it == vars.end() ? nullptr : it->second.c_str();
        },
        errors);
  }
};

void ExpectDefaults(const Params& p) {
  EXPECT_EQ(p.debug, "");
  EXPECT_EQ(p.debug_subsys, "");
  EXPECT_EQ(p.debug_file, "");
  EXPECT_EQ(p.timeout_ms, 300000);
  EXPECT_EQ(p.comm_id, "");
  EXPECT_EQ(p.socket_ifname, "");
  EXPECT_EQ(p.allgather_algo, "");
  EXPECT_EQ(p.epoch_base, 0u);
  EXPECT_EQ(p.spin_count, -1);  // -1: chosen from the cores per rank
  EXPECT_EQ(p.eager_bytes, 65536);
  EXPECT_EQ(p.ll_bytes, 8192);
  EXPECT_EQ(p.allgather_lanes, 0);
  EXPECT_EQ(p.allgather_chunk_bytes, 512 << 10);
  EXPECT_EQ(p.reduce_blocks, 0);
  EXPECT_EQ(p.allreduce_oneshot_bytes, 65536);
  EXPECT_EQ(p.aggemm_compute_streams, 0);
  EXPECT_EQ(p.gemmrs_reduce_blocks, 0);
  EXPECT_EQ(p.gemmrs_chunks, 0);
}

// Every numeric field equal: what a malformed value must leave untouched.
void ExpectSameNumbers(const Params& got, const Params& want) {
  EXPECT_EQ(got.timeout_ms, want.timeout_ms);
  EXPECT_EQ(got.epoch_base, want.epoch_base);
  EXPECT_EQ(got.allgather_algo, want.allgather_algo);
  EXPECT_EQ(got.spin_count, want.spin_count);
  EXPECT_EQ(got.eager_bytes, want.eager_bytes);
  EXPECT_EQ(got.ll_bytes, want.ll_bytes);
  EXPECT_EQ(got.allgather_lanes, want.allgather_lanes);
  EXPECT_EQ(got.allgather_chunk_bytes, want.allgather_chunk_bytes);
  EXPECT_EQ(got.reduce_blocks, want.reduce_blocks);
  EXPECT_EQ(got.allreduce_oneshot_bytes, want.allreduce_oneshot_bytes);
  EXPECT_EQ(got.aggemm_compute_streams, want.aggemm_compute_streams);
  EXPECT_EQ(got.gemmrs_reduce_blocks, want.gemmrs_reduce_blocks);
  EXPECT_EQ(got.gemmrs_chunks, want.gemmrs_chunks);
}

TEST(ParamsTest, DefaultsWhenUnset) {
  FakeEnv env;
  std::string errors = "untouched";
  Params p = env.Parse(&errors);
  ExpectDefaults(p);
  EXPECT_EQ(errors, "untouched");  // nothing appended
  ExpectDefaults(Params{});
}

TEST(ParamsTest, EveryParameterIsLookedUp) {
  FakeEnv env;
  env.Parse(nullptr);
  for (const char* name : kAllNames) EXPECT_EQ(env.queried.count(name), 1u) << name;
  for (const std::string& name : env.queried)
    EXPECT_EQ(name.rfind("XCCL_", 0), 0u) << name << " is not an XCCL_ parameter";
}

TEST(ParamsTest, EveryParameterParsed) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    const int64_t timeout = std::uniform_int_distribution<int64_t>(1, 1000000000)(rng);
    const uint32_t epoch = static_cast<uint32_t>(rng());
    const int64_t spin = std::uniform_int_distribution<int64_t>(0, INT32_MAX)(rng);
    const int64_t eager = std::uniform_int_distribution<int64_t>(0, 1 << 24)(rng);
    const std::string algo = (round % 2) ? "dma" : "kernel";
    const std::string tag = std::to_string(rng());
    FakeEnv env;
    env.vars = {{"XCCL_DEBUG", "INFO"},
                {"XCCL_DEBUG_SUBSYS", "INIT,COLL," + tag},
                {"XCCL_DEBUG_FILE", "/tmp/xccl." + tag + ".%h.%p"},
                {"XCCL_TIMEOUT_MS", std::to_string(timeout)},
                {"XCCL_COMM_ID", "10.1.2.3:" + tag},
                {"XCCL_SOCKET_IFNAME", "^lo,docker" + tag},
                {"XCCL_ALLGATHER_ALGO", algo},
                {"XCCL_EPOCH_BASE", std::to_string(epoch)},
                {"XCCL_SPIN_COUNT", std::to_string(spin)},
                {"XCCL_EAGER_BYTES", std::to_string(eager)}};
    std::string errors;
    Params p = env.Parse(&errors);
    EXPECT_EQ(errors, "");
    EXPECT_EQ(p.debug, "INFO");
    EXPECT_EQ(p.debug_subsys, "INIT,COLL," + tag);
    EXPECT_EQ(p.debug_file, "/tmp/xccl." + tag + ".%h.%p");
    EXPECT_EQ(p.timeout_ms, timeout);
    EXPECT_EQ(p.comm_id, "10.1.2.3:" + tag);
    EXPECT_EQ(p.socket_ifname, "^lo,docker" + tag);
    EXPECT_EQ(p.allgather_algo, algo);
    EXPECT_EQ(p.epoch_base, epoch);
    EXPECT_EQ(p.spin_count, spin);
    EXPECT_EQ(p.eager_bytes, eager);
  }
}

TEST(ParamsTest, EpochBaseHex) {
  const std::pair<const char*, uint32_t> cases[] = {
      {"0xFFFFFFFE", 0xFFFFFFFEu}, {"0xffffffff", 0xFFFFFFFFu}, {"0x0", 0u},
      {"4294967295", 0xFFFFFFFFu}, {"4294967294", 0xFFFFFFFEu}, {"0", 0u}};
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars["XCCL_EPOCH_BASE"] = c.first;
    std::string errors;
    Params p = env.Parse(&errors);
    EXPECT_EQ(p.epoch_base, c.second) << c.first;
    EXPECT_EQ(errors, "") << c.first;
  }
}

TEST(ParamsTest, BoundaryValuesAccepted) {
  struct Case {
    const char* name;
    const char* value;
    int64_t Params::*field;
    int64_t expected;
  };
  const Case cases[] = {
      {"XCCL_TIMEOUT_MS", "1", &Params::timeout_ms, 1},
      {"XCCL_TIMEOUT_MS", "9223372036854", &Params::timeout_ms, INT64_MAX / 1000000},
      {"XCCL_SPIN_COUNT", "-1", &Params::spin_count, -1},
      {"XCCL_SPIN_COUNT", "0", &Params::spin_count, 0},
      {"XCCL_SPIN_COUNT", "2147483647", &Params::spin_count, INT32_MAX},
      {"XCCL_EAGER_BYTES", "0", &Params::eager_bytes, 0},
      {"XCCL_EAGER_BYTES", "16777216", &Params::eager_bytes, 1 << 24},
      {"XCCL_ALLGATHER_LL_BYTES", "0", &Params::ll_bytes, 0},
      {"XCCL_ALLGATHER_LL_BYTES", "32768", &Params::ll_bytes, 32768},
      {"XCCL_ALLGATHER_LANES", "32", &Params::allgather_lanes, 32},
      {"XCCL_ALLGATHER_LANES", "0", &Params::allgather_lanes, 0},
      {"XCCL_ALLGATHER_CHUNK_BYTES", "4096", &Params::allgather_chunk_bytes, 4096},
      {"XCCL_ALLGATHER_CHUNK_BYTES", "67108864", &Params::allgather_chunk_bytes, 64 << 20},
      {"XCCL_ALLGATHER_CHUNK_BYTES", "0x200000", &Params::allgather_chunk_bytes, 2 << 20},
      {"XCCL_REDUCE_BLOCKS", "0", &Params::reduce_blocks, 0},
      {"XCCL_REDUCE_BLOCKS", "4096", &Params::reduce_blocks, 4096},
      {"XCCL_GEMMRS_REDUCE_BLOCKS", "0", &Params::gemmrs_reduce_blocks, 0},
      {"XCCL_GEMMRS_REDUCE_BLOCKS", "4096", &Params::gemmrs_reduce_blocks, 4096},
      {"XCCL_GEMMRS_CHUNKS", "0", &Params::gemmrs_chunks, 0},
      {"XCCL_GEMMRS_CHUNKS", "8", &Params::gemmrs_chunks, 8},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES", "0", &Params::allreduce_oneshot_bytes, 0},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES", "67108864", &Params::allreduce_oneshot_bytes, 64 << 20},
      {"XCCL_AGGEMM_COMPUTE_STREAMS", "0", &Params::aggemm_compute_streams, 0},
      {"XCCL_AGGEMM_COMPUTE_STREAMS", "1", &Params::aggemm_compute_streams, 1},
      {"XCCL_AGGEMM_COMPUTE_STREAMS", "2", &Params::aggemm_compute_streams, 2},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM", "0", &Params::aggemm_sources_per_gemm, 0},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM", "1", &Params::aggemm_sources_per_gemm, 1},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM", "2", &Params::aggemm_sources_per_gemm, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    FakeEnv env;
    env.vars[c.name] = c.value;
    std::string errors;
    Params p = env.Parse(&errors);
    EXPECT_EQ(errors, "");
    EXPECT_EQ(p.*c.field, c.expected);
  }
  FakeEnv env;
  env.vars["XCCL_ALLGATHER_ALGO"] = "";
  std::string errors;
  EXPECT_EQ(env.Parse(&errors).allgather_algo, "");
  EXPECT_EQ(errors, "");
}

struct Malformed {
  const char* name;
  const char* value;
};

TEST(ParamsTest, MalformedValuesKeepDefaultAndAreReported) {
  const Malformed cases[] = {
      {"XCCL_TIMEOUT_MS", "abc"},
      {"XCCL_TIMEOUT_MS", "0"},
      {"XCCL_TIMEOUT_MS", "-1"},
      {"XCCL_TIMEOUT_MS", "99999999999999999999"},
      {"XCCL_TIMEOUT_MS", ""},
      {"XCCL_TIMEOUT_MS", "100ms"},
      {"XCCL_TIMEOUT_MS", "9223372036855"},  // INT64_MAX / 1e6 + 1: overflows in nanoseconds
      {"XCCL_EPOCH_BASE", "4294967296"},
      {"XCCL_EPOCH_BASE", "0x100000000"},
      {"XCCL_EPOCH_BASE", "-1"},
      {"XCCL_EPOCH_BASE", "zero"},
      {"XCCL_ALLGATHER_ALGO", "foo"},
      {"XCCL_REDUCE_BLOCKS", "4097"},
      {"XCCL_REDUCE_BLOCKS", "-1"},
      {"XCCL_GEMMRS_REDUCE_BLOCKS", "4097"},
      {"XCCL_GEMMRS_REDUCE_BLOCKS", "-1"},
      {"XCCL_GEMMRS_CHUNKS", "9"},
      {"XCCL_GEMMRS_CHUNKS", "-1"},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES", "67108865"},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES", "-1"},
      {"XCCL_ALLGATHER_ALGO", "dma,kernel"},
      {"XCCL_SPIN_COUNT", "-2"},
      {"XCCL_SPIN_COUNT", "2147483648"},
      {"XCCL_SPIN_COUNT", "1e3"},
      {"XCCL_EAGER_BYTES", "-1"},
      {"XCCL_EAGER_BYTES", "16777217"},
      {"XCCL_EAGER_BYTES", "32k"},
      {"XCCL_ALLGATHER_LL_BYTES", "32769"},
      {"XCCL_ALLGATHER_CHUNK_BYTES", "4095"},
      {"XCCL_ALLGATHER_CHUNK_BYTES", "5000"},  // not a multiple of 256
      {"XCCL_ALLGATHER_CHUNK_BYTES", "67109120"},
      {"XCCL_ALLGATHER_CHUNK_BYTES", "-256"},
      {"XCCL_ALLGATHER_LL_BYTES", "-1"},
      {"XCCL_ALLGATHER_LANES", "33"},
      {"XCCL_ALLGATHER_LANES", "-2"},
      {"XCCL_AGGEMM_COMPUTE_STREAMS", "-1"},
      {"XCCL_AGGEMM_COMPUTE_STREAMS", "3"},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM", "-1"},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM", "3"},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM", "two"},
  };
  for (const Malformed& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    FakeEnv env;
    env.vars[c.name] = c.value;
    // A well-formed neighbour must still be taken.
    env.vars["XCCL_COMM_ID"] = "host:1234";
    std::string errors;
    Params p = env.Parse(&errors);
    EXPECT_EQ(p.comm_id, "host:1234");
    ExpectSameNumbers(p, Params{});
    // One line, naming the variable.
    EXPECT_NE(errors.find(c.name), std::string::npos) << errors;
    EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 1) << errors;
    // Without an error sink nothing breaks and the default still stands.
    ExpectSameNumbers(env.Parse(nullptr), Params{});
  }
}

TEST(ParamsTest, SeveralMalformedValuesEachReported) {
  FakeEnv env;
  env.vars = {{"XCCL_TIMEOUT_MS", "abc"},
              {"XCCL_EPOCH_BASE", "4294967296"},
              {"XCCL_ALLGATHER_ALGO", "foo"},
              {"XCCL_SPIN_COUNT", "17"}};
  std::string errors;
  Params p = env.Parse(&errors);
  EXPECT_NE(errors.find("XCCL_TIMEOUT_MS"), std::string::npos) << errors;
  EXPECT_NE(errors.find("XCCL_EPOCH_BASE"), std::string::npos) << errors;
  EXPECT_NE(errors.find("XCCL_ALLGATHER_ALGO"), std::string::npos) << errors;
  EXPECT_EQ(errors.find("XCCL_SPIN_COUNT"), std::string::npos) << errors;
  EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 3) << errors;
  EXPECT_EQ(p.timeout_ms, 300000);
  EXPECT_EQ(p.epoch_base, 0u);
  EXPECT_EQ(p.allgather_algo, "");
  EXPECT_EQ(p.spin_count, 17);
}

}  // namespace
}  // namespace xccl
