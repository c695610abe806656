/*
 * A client of the shim built against the CUDA toolkit's own nccl.h (2.28), as an application
 * built for NCCL would be, and linked to the shim's libnccl.so.2. It forks ranks (the unique
 * ids are made before the fork, as an MPI launcher would hand them out) and drives them through
 * the nccl API with host buffers, which the host platform's "device memory" is.
 *
 *   shim_client native <nranks>       life cycle, all_gather, configs, errors, groups, memory
 *   shim_client initall <nranks>      ncclCommInitAll in one process, one thread per rank
 *   shim_client forward <nranks> <0|1> forwarded all_reduce against the vendor double; 1: the
 *                                      all_gathers must have been forwarded too
 *   shim_client nofallback <nranks>   forwarded calls fail cleanly, naming the function
 *
 * Data are fresh random values every run and every element is compared.
 */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NUM_IDS 6
static ncclUniqueId g_ids[NUM_IDS];
static uint64_t g_seed;
static size_t g_count;
static int g_rank = -1;

#define FAIL(...)                                                    \
  do {                                                               \
    fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                                    \
    fprintf(stderr, "\n");                                           \
    exit(1);                                                         \
  } while (0)

#define CHECK(call)                                                           \
  do {                                                                        \
    ncclResult_t r_ = (call);                                                 \
    if (r_ != ncclSuccess)                                                    \
      FAIL("%s returned %d (%s): %s", #call, (int)r_, ncclGetErrorString(r_), \
           ncclGetLastError(NULL));                                           \
  } while (0)

#define EXPECT_RESULT(call, expected)                                                           \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != (expected)) FAIL("%s returned %d, expected %d", #call, (int)r_, (int)(expected)); \
  } while (0)

/* Element i of rank r's data for stream `salt`: a hash, so that every rank can compute every
 * other rank's contribution without exchanging it. */
/* nccl_device/core.h is CUDA C++; its host functions are declared here for C (the device
 * communicator is opaque to this test: a buffer the vendor fills). */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void* reqs, void* out);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* dev_comm);
struct XcclTestTeam {
  int nRanks, rank, stride;
};
struct XcclTestTeam ncclTeamWorld(ncclComm_t comm);
struct XcclTestTeam ncclTeamLsa(ncclComm_t comm);
struct XcclTestTeam ncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, struct XcclTestTeam team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, struct XcclTestTeam team, int rank);

static uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
static uint64_t Value(int salt, int rank, size_t i) {
  return Mix(g_seed ^ Mix(((uint64_t)salt << 48) ^ ((uint64_t)rank << 32) ^ i));
}
static float FloatValue(int salt, int rank, size_t i) {
  return (float)(int)(Value(salt, rank, i) % 2001) - 1000.0f; /* exact sums */
}

static void CheckAllGatherFloat(ncclComm_t comm, int nranks, int rank, int salt) {
  float* send = malloc(g_count * sizeof(float));
  float* recv = malloc(g_count * nranks * sizeof(float));
  for (size_t i = 0; i < g_count; ++i) send[i] = FloatValue(salt, rank, i) + 0.25f;
  memset(recv, 0xA5, g_count * nranks * sizeof(float));
  CHECK(ncclAllGather(send, recv, g_count, ncclFloat32, comm, NULL));
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < g_count; ++i)
      if (recv[r * g_count + i] != FloatValue(salt, r, i) + 0.25f)
        FAIL("all_gather: block %d element %zu is %g, expected %g", r, i, recv[r * g_count + i],
             FloatValue(salt, r, i) + 0.25f);
  free(send);
  free(recv);
}

/* In place (sendbuff == recvbuff + rank * count), bytes, through ncclMemAlloc memory. */
static void CheckAllGatherInPlace(ncclComm_t comm, int nranks, int rank, int salt) {
  size_t count = g_count + 3; /* not a multiple of anything */
  uint8_t* buf = NULL;
  CHECK(ncclMemAlloc((void**)&buf, count * nranks));
  memset(buf, 0xA5, count * nranks);
  for (size_t i = 0; i < count; ++i) buf[rank * count + i] = (uint8_t)Value(salt, rank, i);
  CHECK(ncclAllGather(buf + rank * count, buf, count, ncclUint8, comm, NULL));
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i)
      if (buf[r * count + i] != (uint8_t)Value(salt, r, i))
        FAIL("in-place all_gather: block %d byte %zu is %u", r, i, buf[r * count + i]);
  CHECK(ncclMemFree(buf));
}

static void CheckQueries(ncclComm_t comm, int nranks, int rank) {
  int n = -1, me = -1, dev = -7;
  ncclResult_t async = ncclInternalError;
  CHECK(ncclCommCount(comm, &n));
  CHECK(ncclCommUserRank(comm, &me));
  CHECK(ncclCommCuDevice(comm, &dev));
  CHECK(ncclCommGetAsyncError(comm, &async));
  if (n != nranks || me != rank) FAIL("count/rank are %d/%d, expected %d/%d", n, me, nranks, rank);
  if (dev == -7) FAIL("ncclCommCuDevice left the device unset");
  if (async != ncclSuccess) FAIL("async error %d on a healthy communicator", (int)async);
  /* The device API's teams (nccl_device/core.h, declared above): the world and the LSA team
   * are all ranks, the rail team this rank alone; rank conversions go back to world ranks. */
  struct XcclTestTeam world = ncclTeamWorld(comm), lsa = ncclTeamLsa(comm);
  struct XcclTestTeam rail = ncclTeamRail(comm);
  if (world.nRanks != nranks || world.rank != rank || world.stride != 1)
    FAIL("ncclTeamWorld is {%d, %d, %d}", world.nRanks, world.rank, world.stride);
  if (lsa.nRanks != nranks || lsa.rank != rank)
    FAIL("ncclTeamLsa is {%d, %d}", lsa.nRanks, lsa.rank);
  if (rail.nRanks != 1 || rail.rank != 0) FAIL("ncclTeamRail is {%d, %d}", rail.nRanks, rail.rank);
  for (int r = 0; r < nranks; ++r) {
    if (ncclTeamRankToWorld(comm, world, r) != r || ncclTeamRankToLsa(comm, lsa, r) != r)
      FAIL("team rank %d maps to world %d / lsa %d", r, ncclTeamRankToWorld(comm, world, r),
           ncclTeamRankToLsa(comm, lsa, r));
  }
}

static void ConfigRound(int nranks, int rank, ncclConfig_t* config, int id, int salt) {
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, g_ids[id], rank, config);
  if (r == ncclInProgress) { /* a non-blocking init may finish later */
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) CHECK(ncclCommGetAsyncError(comm, &state));
    r = state;
  }
  if (r != ncclSuccess)
    FAIL("config round %d: init returned %d: %s", id, (int)r, ncclGetLastError(NULL));
  CheckQueries(comm, nranks, rank);
  CheckAllGatherFloat(comm, nranks, rank, salt);
  CHECK(ncclCommDestroy(comm));
}

static void NativeRank(int nranks, int rank) {
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) FAIL("version %d, header says %d", version, NCCL_VERSION_CODE);

  ncclComm_t comm = NULL;
  CHECK(ncclCommInitRank(&comm, nranks, g_ids[0], rank));
  CheckQueries(comm, nranks, rank);
  CheckAllGatherFloat(comm, nranks, rank, 1);
  CheckAllGatherInPlace(comm, nranks, rank, 2);

  /* A group around native calls. */
  CHECK(ncclGroupStart());
  CHECK(ncclGroupStart());
  CheckAllGatherFloat(comm, nranks, rank, 3);
  CHECK(ncclGroupEnd());
  CHECK(ncclGroupEnd());
  EXPECT_RESULT(ncclGroupEnd(), ncclInvalidUsage);

  /* Registration: accepted, tracked, and a bogus handle refused. */
  void* handle = NULL;
  float reg_buf[16];
  CHECK(ncclCommRegister(comm, reg_buf, sizeof reg_buf, &handle));
  if (!handle) FAIL("ncclCommRegister gave no handle");
  CHECK(ncclCommDeregister(comm, handle));
  EXPECT_RESULT(ncclCommDeregister(comm, handle), ncclInvalidArgument);

  /* Argument errors name what went wrong. */
  float x[4];
  EXPECT_RESULT(ncclAllGather(x, x, 1, (ncclDataType_t)42, comm, NULL), ncclInvalidArgument);
  if (strlen(ncclGetLastError(comm)) == 0) FAIL("no message after a failed all_gather");
  EXPECT_RESULT(ncclCommCount(NULL, &version), ncclInvalidArgument);
  EXPECT_RESULT(ncclMemAlloc(NULL, 16), ncclInvalidArgument);
  void* huge = NULL; /* within a page of SIZE_MAX: its rounding used to wrap to a 4 KiB block */
  EXPECT_RESULT(ncclMemAlloc(&huge, SIZE_MAX - 100), ncclSystemError);
  EXPECT_RESULT(ncclMemAlloc(&huge, SIZE_MAX), ncclSystemError);

  /* NCCL's answers: NULL communicators are nothing to free, finalize or revoke. */
  EXPECT_RESULT(ncclCommDestroy(NULL), ncclSuccess);
  EXPECT_RESULT(ncclCommAbort(NULL), ncclSuccess);
  EXPECT_RESULT(ncclCommFinalize(NULL), ncclSuccess);
  EXPECT_RESULT(ncclCommRevoke(NULL, 0), ncclSuccess);
  /* A call that fails inside a group fails the group's end too; the next group starts clean. */
  CHECK(ncclGroupStart());
  CHECK(ncclGroupStart());
  EXPECT_RESULT(ncclAllGather(x, x, 1, (ncclDataType_t)42, comm, NULL), ncclInvalidArgument);
  CHECK(ncclGroupEnd()); /* an inner end reports nothing yet */
  EXPECT_RESULT(ncclGroupEnd(), ncclInvalidArgument);
  CHECK(ncclGroupStart());
  CheckAllGatherFloat(comm, nranks, rank, 8);
  CHECK(ncclGroupEnd());
  /* A simInfo must come from NCCL_SIM_INFO_INITIALIZER. */
  ncclSimInfo_t unset;
  memset(&unset, 0, sizeof unset);
  CHECK(ncclGroupStart());
  EXPECT_RESULT(ncclGroupSimulateEnd(&unset), ncclInvalidArgument);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  CHECK(ncclGroupSimulateEnd(&sim));

  CHECK(ncclCommFinalize(comm));
  EXPECT_RESULT(ncclCommFinalize(comm), ncclInvalidArgument); /* NCCL finalizes once */
  CHECK(ncclCommDestroy(comm));
  EXPECT_RESULT(ncclCommCount(comm, &version), ncclInvalidArgument); /* a destroyed handle */

  /* Configs of the current size, an older (shorter) one, a newer (longer) one. */
  ncclConfig_t current = NCCL_CONFIG_INITIALIZER;
  current.blocking = 1;
  current.commName = "shim-client";
  ConfigRound(nranks, rank, &current, 1, 4);

  ncclConfig_t older = NCCL_CONFIG_INITIALIZER;
  older.size = offsetof(ncclConfig_t, splitShare); /* NCCL 2.14's fields end at netName */
  older.version = 21400;
  ConfigRound(nranks, rank, &older, 2, 5);

  struct {
    ncclConfig_t base;
    int future_fields[8];
  } newer = {NCCL_CONFIG_INITIALIZER, {0}};
  newer.base.size = sizeof newer;
  newer.base.version = 23500;
  memset(newer.future_fields, 0x7f, sizeof newer.future_fields);
  ConfigRound(nranks, rank, &newer.base, 3, 6);

  ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
  nonblocking.blocking = 0;
  ConfigRound(nranks, rank, &nonblocking, 4, 7);

  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0xdeadbeef;
  comm = NULL;
  EXPECT_RESULT(ncclCommInitRankConfig(&comm, nranks, g_ids[5], rank, &bad), ncclInvalidArgument);
  if (comm != NULL) FAIL("a refused config still produced a communicator");
  if (!strstr(ncclGetLastError(NULL), "magic"))
    FAIL("bad magic message: %s", ncclGetLastError(NULL));
  bad.magic = 0xcafebeef;
  bad.size = 7;
  EXPECT_RESULT(ncclCommInitRankConfig(&comm, nranks, g_ids[5], rank, &bad), ncclInvalidArgument);
  /* Switches NCCL takes as 0 or 1, and CTA bounds the wrong way round, refused as NCCL does. */
  for (int field = 0; field < 3; ++field) {
    ncclConfig_t odd = NCCL_CONFIG_INITIALIZER;
    if (field == 0) odd.splitShare = 5;
    if (field == 1) odd.collnetEnable = 7;
    if (field == 2) {
      odd.minCTAs = 64;
      odd.maxCTAs = 1;
    }
    EXPECT_RESULT(ncclCommInitRankConfig(&comm, nranks, g_ids[5], rank, &odd), ncclInvalidArgument);
    if (comm != NULL) FAIL("a refused config (field %d) still produced a communicator", field);
  }

  /* Error strings: one per code, distinct, and something for unknown codes. */
  for (int a = 0; a < ncclNumResults; ++a) {
    const char* sa = ncclGetErrorString((ncclResult_t)a);
    if (!sa || !*sa) FAIL("no string for result %d", a);
    for (int b = 0; b < a; ++b)
      if (strcmp(sa, ncclGetErrorString((ncclResult_t)b)) == 0)
        FAIL("results %d, %d share a string", a, b);
  }
  if (!ncclGetErrorString((ncclResult_t)99)) FAIL("NULL string for an unknown result");
}

static void ForwardRank(int nranks, int rank) {
  ncclComm_t comm = NULL;
  CHECK(ncclCommInitRank(&comm, nranks, g_ids[0], rank));
  int32_t* isend = malloc(g_count * sizeof(int32_t));
  int32_t* irecv = malloc(g_count * sizeof(int32_t));
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < g_count; ++i)
      isend[i] = (int32_t)(Value(10 + round, rank, i) % 200001) - 100000;
    memset(irecv, 0xA5, g_count * sizeof(int32_t));
    if (round == 1) CHECK(ncclGroupStart()); /* forwarded calls inside a group */
    CHECK(ncclAllReduce(isend, irecv, g_count, ncclInt32, ncclSum, comm, NULL));
    if (round == 1) CHECK(ncclGroupEnd());
    for (size_t i = 0; i < g_count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < nranks; ++r) want += (int32_t)(Value(10 + round, r, i) % 200001) - 100000;
      if (irecv[i] != want)
        FAIL("int32 all_reduce round %d element %zu: %d, expected %d", round, i, irecv[i], want);
    }
  }
  float* f = malloc(g_count * sizeof(float)); /* in place */
  for (size_t i = 0; i < g_count; ++i) f[i] = FloatValue(12, rank, i);
  CHECK(ncclAllReduce(f, f, g_count, ncclFloat32, ncclSum, comm, NULL));
  for (size_t i = 0; i < g_count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += FloatValue(12, r, i);
    if (f[i] != want) FAIL("float all_reduce element %zu: %g, expected %g", i, f[i], want);
  }
  CheckAllGatherFloat(comm, nranks, rank, 13);
  /* The device API is forwarded with the vendor's communicator (the double writes its rank). */
  int dev_comm[64];
  memset(dev_comm, 0xA5, sizeof dev_comm);
  CHECK(ncclDevCommCreate(comm, NULL, dev_comm));
  if (dev_comm[0] != rank)
    FAIL("device communicator made from rank %d, expected %d", dev_comm[0], rank);
  CHECK(ncclDevCommDestroy(comm, dev_comm));
  EXPECT_RESULT(ncclDevCommCreate(NULL, NULL, dev_comm), ncclInvalidArgument);
  /* A split with a non-blocking config: the vendor gets a blocking copy (the double refuses
   * non-blocking ones, as the shim must never hand it one), and the new communicator is there
   * when the call returns. */
  ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
  nonblocking.blocking = 0;
  ncclComm_t split = NULL;
  CHECK(ncclCommSplit(comm, 0, rank, &split, &nonblocking));
  if (!split) FAIL("ncclCommSplit returned no communicator");
  int split_ranks = 0;
  CHECK(ncclCommCount(split, &split_ranks));
  if (split_ranks != nranks) FAIL("split over %d ranks, expected %d", split_ranks, nranks);
  CHECK(ncclCommDestroy(split));
  CHECK(ncclCommDestroy(comm));
  free(isend);
  free(irecv);
  free(f);
}

static void NoFallbackRank(int nranks, int rank) {
  ncclComm_t comm = NULL;
  CHECK(ncclCommInitRank(&comm, nranks, g_ids[0], rank));
  int32_t buf[8] = {0};
  EXPECT_RESULT(ncclAllReduce(buf, buf, 8, ncclInt32, ncclSum, comm, NULL), ncclInvalidUsage);
  if (!strstr(ncclGetLastError(comm), "ncclAllReduce")) FAIL("message: %s", ncclGetLastError(comm));
  EXPECT_RESULT(ncclSend(buf, 8, ncclInt32, (rank + 1) % nranks, comm, NULL), ncclInvalidUsage);
  if (!strstr(ncclGetLastError(comm), "ncclSend")) FAIL("message: %s", ncclGetLastError(comm));
  ncclComm_t sub = NULL;
  EXPECT_RESULT(ncclCommSplit(comm, 0, rank, &sub, NULL), ncclInvalidUsage);
  if (!strstr(ncclGetLastError(NULL), "ncclCommSplit")) FAIL("message: %s", ncclGetLastError(NULL));
  CheckAllGatherFloat(comm, nranks, rank, 20); /* the native path is unaffected */
  CHECK(ncclCommDestroy(comm));
}

/* ncclCommInitAll: every rank in this process, one thread each for the collective. */
struct ThreadArg {
  ncclComm_t comm;
  int nranks, rank;
};
static void* InitAllThread(void* p) {
  struct ThreadArg* a = p;
  CheckQueries(a->comm, a->nranks, a->rank);
  CheckAllGatherFloat(a->comm, a->nranks, a->rank, 30);
  return NULL;
}
static int InitAll(int nranks) {
  ncclComm_t comms[16];
  pthread_t threads[16];
  struct ThreadArg args[16];
  CHECK(ncclCommInitAll(comms, nranks, NULL));
  for (int r = 0; r < nranks; ++r) {
    args[r].comm = comms[r];
    args[r].nranks = nranks;
    args[r].rank = r;
    pthread_create(&threads[r], NULL, InitAllThread, &args[r]);
  }
  for (int r = 0; r < nranks; ++r) pthread_join(threads[r], NULL);
  for (int r = 0; r < nranks; ++r) CHECK(ncclCommDestroy(comms[r]));
  printf("shim client initall: OK (%d ranks, %zu floats)\n", nranks, g_count);
  return 0;
}

static int CountLines(const char* path, const char* prefix, int rank) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[256], want[160];
  snprintf(want, sizeof want, "%s %d\n", prefix, rank);
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (rank == -2 ? strncmp(line, prefix, strlen(prefix)) == 0 : strcmp(line, want) == 0) ++n;
  fclose(f);
  return n;
}

/* What the double logged must be what the shim was supposed to forward. */
static void CheckDoubleLog(int nranks, int allgather_forwarded) {
  const char* log = getenv("XCCL_SHIM_DOUBLE_LOG");
  if (!log) FAIL("XCCL_SHIM_DOUBLE_LOG is not set");
  if (CountLines(log, "ncclGetUniqueId", -1) != 1)
    FAIL("the vendor id was made %d times, expected once", CountLines(log, "ncclGetUniqueId", -1));
  for (int r = 0; r < nranks; ++r) {
    if (CountLines(log, "ncclCommInitRank", r) != 1)
      FAIL("vendor init of rank %d not logged once", r);
    if (CountLines(log, "ncclAllReduce", r) != 3)
      FAIL("rank %d: %d vendor all_reduces, expected 3", r, CountLines(log, "ncclAllReduce", r));
    if (CountLines(log, "ncclAllGather", r) != allgather_forwarded)
      FAIL("rank %d: %d vendor all_gathers, expected %d", r, CountLines(log, "ncclAllGather", r),
           allgather_forwarded);
    /* The communicator and its split. */
    if (CountLines(log, "ncclCommDestroy", r) != 2)
      FAIL("rank %d: %d vendor comms destroyed, expected 2", r,
           CountLines(log, "ncclCommDestroy", r));
    if (CountLines(log, "ncclCommSplit", r) != 1)
      FAIL("rank %d: the split did not reach the vendor once, blocking", r);
    if (CountLines(log, "ncclDevCommCreate", r) != 1 ||
        CountLines(log, "ncclDevCommDestroy", r) != 1)
      FAIL("rank %d: the device communicator calls did not reach the vendor once each", r);
  }
  if (CountLines(log, "ncclGroupStart", -1) != nranks ||
      CountLines(log, "ncclGroupEnd", -1) != nranks)
    FAIL("the group was not mirrored on the vendor once per rank");
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s native|initall|forward|nofallback <nranks> [0|1]\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  int nranks = atoi(argv[2]);
  if (nranks < 1 || nranks > 16) return 2;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  g_seed = Mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid());
  g_count = 1000 + (size_t)(g_seed % 7000);
  printf("seed %llu, %zu elements per rank\n", (unsigned long long)g_seed, g_count);
  fflush(stdout);
  if (strcmp(mode, "initall") == 0) return InitAll(nranks);

  for (int i = 0; i < NUM_IDS; ++i) CHECK(ncclGetUniqueId(&g_ids[i]));
  pid_t pids[16];
  for (int r = 0; r < nranks; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) FAIL("fork failed");
    if (pids[r] == 0) {
      g_rank = r;
      if (strcmp(mode, "native") == 0)
        NativeRank(nranks, r);
      else if (strcmp(mode, "forward") == 0)
        ForwardRank(nranks, r);
      else if (strcmp(mode, "nofallback") == 0)
        NoFallbackRank(nranks, r);
      else
        FAIL("unknown mode %s", mode);
      _exit(0);
    }
  }
  int failed = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, status);
      failed = 1;
    }
  }
  if (failed) return 1;
  if (strcmp(mode, "forward") == 0) CheckDoubleLog(nranks, argc > 3 && atoi(argv[3]) != 0);
  printf("shim client %s: OK (%d ranks, %zu elements each)\n", mode, nranks, g_count);
  return 0;
}
