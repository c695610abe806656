/*
 * A client of the shim built against the CUDA toolkit's own nccl.h (2.28), as an application
 * built for NCCL would be, and linked to the shim's libnccl.so.2. It forks ranks (the unique
 * ids are made before the fork, as an MPI launcher would hand them out) and drives them through
 * the nccl API with host buffers, which the host platform's "device memory" is.
 *
 *   shim_client native <nranks>       life cycle, all_gather, reductions, configs, errors, groups,
 *                                      memory
 *   shim_client initall <nranks>      ncclCommInitAll in one process, one thread per rank
 *   shim_client forward <nranks> <0|1> forwarded all_reduce against the vendor double; 1: the
 *                                      all_gathers must have been forwarded too
 *   shim_client nofallback <nranks>   forwarded calls fail cleanly, naming the function
 *   shim_client premul <nranks>       native reductions beside a user-defined op's forwarded
 *                                      all_reduce (vendor double), each path named at INFO
 *   shim_client nodes <nranks> [hosts] ranks over several nodes: init, all_gather (native, across
 *                                      them), the device API's teams against the split, and with
 *                                      XCCL_SHIM_DOUBLE_LOG set a forwarded all_reduce and a
 *                                      vendor-only split's team reaching the vendor double. The
 *                                      split is XCCL_FAKE_NODES's, or `hosts` (a comma list, one
 *                                      XCCL_HOSTID per rank: the ranks fork before any call, so
 *                                      each reads its own; rank 0 makes the ids for all)
 *
 * Every mode checks the teams against the node split (XCCL_FAKE_NODES, else one node).
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NUM_IDS 6
static ncclUniqueId g_ids[NUM_IDS];
static uint64_t g_seed;
static size_t g_count;
static int g_rank = -1;
static int g_node_of_rank[16]; /* the split the ranks must see: one node unless set */

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

#ifndef NCCL_WIN_COLL_SYMMETRIC
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#endif

/* Windows map onto xccl's: ncclMemAlloc memory registered, an all_gather into it, the checks. */
static void CheckWindow(ncclComm_t comm, int nranks, int rank, int salt) {
  size_t count = g_count + 5;
  size_t bytes = count * nranks + 4096;
  uint8_t* mem = NULL;
  CHECK(ncclMemAlloc((void**)&mem, bytes));
  uint8_t* recv = mem + 4096; /* a window inside the allocation, not at its start */
  ncclWindow_t win = NULL;
  CHECK(ncclCommWindowRegister(comm, recv, count * nranks, &win, NCCL_WIN_COLL_SYMMETRIC));
  if (!win) FAIL("ncclCommWindowRegister gave no window");
  uint8_t* send = malloc(count);
  for (size_t i = 0; i < count; ++i) send[i] = (uint8_t)Value(salt, rank, i);
  memset(recv, 0xA5, count * nranks);
  CHECK(ncclAllGather(send, recv, count, ncclUint8, comm, NULL));
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i)
      if (recv[r * count + i] != (uint8_t)Value(salt, r, i))
        FAIL("all_gather into a window: block %d byte %zu is %u", r, i, recv[r * count + i]);
  free(send);
  EXPECT_RESULT(ncclMemFree(mem), ncclInvalidUsage); /* still registered */
  CHECK(ncclCommWindowDeregister(comm, win));
  EXPECT_RESULT(ncclCommWindowDeregister(comm, win), ncclInvalidArgument);
  CHECK(ncclMemFree(mem));
  EXPECT_RESULT(ncclMemFree(mem), ncclInvalidArgument);
  /* Every rank passes memory ncclMemAlloc did not give: every rank is refused. */
  uint8_t heap[64];
  win = NULL;
  EXPECT_RESULT(ncclCommWindowRegister(comm, heap, sizeof heap, &win, 0), ncclInvalidArgument);
  if (strstr(ncclGetLastError(comm), "xcclMemAlloc") == NULL)
    FAIL("window refusal says: %s", ncclGetLastError(comm));
  if (win) FAIL("a refused window was handed out");
}

/* Native reductions and broadcasts: int32 sums that wrap and an avg truncated toward zero, float32
 * sums in xccl.h's order (SumFloat: the same bits), max and min; out of place and in
 * place (reduce_scatter: recvbuff inside sendbuff at the rank's block), every element checked. */
static int32_t IntValue(int salt, int rank, size_t i) {
  return (int32_t)(uint32_t)Value(salt, rank, i);
}
/* xccl.h's order on the host: each node's ranks in rank order, then the nodes in order (one
 * node: plain rank order); every addition rounds. */
static float SumFloat(int salt, int nranks, size_t i) {
  float total = 0;
  for (int node = 0; node < nranks; ++node) {
    float partial = 0;
    int members = 0;
    for (int r = 0; r < nranks; ++r) {
      if (g_node_of_rank[r] != node) continue;
      const float x = FloatValue(salt, r, i) * 0.37f;
      partial = members++ == 0 ? x : partial + x;
    }
    if (members > 0) total = node == 0 ? partial : total + partial;
  }
  return total;
}
static void CheckReductions(ncclComm_t comm, int nranks, int rank, int salt) {
  const size_t n = g_count;
  int32_t* isend = malloc(n * nranks * sizeof(int32_t));
  int32_t* irecv = malloc(n * nranks * sizeof(int32_t));
  float* fbuf = malloc(n * nranks * sizeof(float));
  for (size_t i = 0; i < n * nranks; ++i) isend[i] = IntValue(salt, rank, i);
  /* all_reduce, int32 sum out of place (two's complement wrap) and avg (truncated) */
  for (int op = 0; op < 2; ++op) {
    memset(irecv, 0xA5, n * sizeof(int32_t));
    CHECK(ncclAllReduce(isend, irecv, n, ncclInt32, op == 0 ? ncclSum : ncclAvg, comm, NULL));
    for (size_t i = 0; i < n; ++i) {
      uint32_t sum = 0;
      for (int r = 0; r < nranks; ++r) sum += (uint32_t)IntValue(salt, r, i);
      const int32_t want = op == 0 ? (int32_t)sum : (int32_t)((int64_t)(int32_t)sum / nranks);
      if (irecv[i] != want)
        FAIL("all_reduce int32 %s element %zu: %d, expected %d", op == 0 ? "sum" : "avg", i,
             irecv[i], want);
    }
  }
  /* all_reduce, float32 sum in place */
  for (size_t i = 0; i < n; ++i) fbuf[i] = FloatValue(salt + 1, rank, i) * 0.37f;
  CHECK(ncclAllReduce(fbuf, fbuf, n, ncclFloat32, ncclSum, comm, NULL));
  for (size_t i = 0; i < n; ++i)
    if (fbuf[i] != SumFloat(salt + 1, nranks, i))
      FAIL("in-place all_reduce float sum element %zu: %.9g, expected %.9g", i, fbuf[i],
           SumFloat(salt + 1, nranks, i));
  /* reduce_scatter, int32 max out of place; float32 min in place */
  memset(irecv, 0xA5, n * sizeof(int32_t));
  CHECK(ncclReduceScatter(isend, irecv, n, ncclInt32, ncclMax, comm, NULL));
  for (size_t i = 0; i < n; ++i) {
    int32_t want = IntValue(salt, 0, rank * n + i);
    for (int r = 1; r < nranks; ++r)
      if (IntValue(salt, r, rank * n + i) > want) want = IntValue(salt, r, rank * n + i);
    if (irecv[i] != want)
      FAIL("reduce_scatter int32 max element %zu: %d, expected %d", i, irecv[i], want);
  }
  for (size_t i = 0; i < n * nranks; ++i) fbuf[i] = FloatValue(salt + 2, rank, i);
  float* mine = fbuf + rank * n;
  CHECK(ncclReduceScatter(fbuf, mine, n, ncclFloat32, ncclMin, comm, NULL));
  for (size_t i = 0; i < n; ++i) {
    float want = FloatValue(salt + 2, 0, rank * n + i);
    for (int r = 1; r < nranks; ++r)
      if (FloatValue(salt + 2, r, rank * n + i) < want)
        want = FloatValue(salt + 2, r, rank * n + i);
    if (mine[i] != want)
      FAIL("in-place reduce_scatter float min element %zu: %g, expected %g", i, mine[i], want);
  }
  /* Coalesced, as PyTorch groups its bucketed calls: three reductions in one group. */
  for (size_t i = 0; i < n * nranks; ++i) fbuf[i] = FloatValue(salt + 3, rank, i) * 0.37f;
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(fbuf, fbuf, n, ncclFloat32, ncclSum, comm, NULL));
  CHECK(ncclAllReduce(fbuf + n, fbuf + n, n, ncclFloat32, ncclSum, comm, NULL));
  CHECK(ncclAllReduce(isend, irecv, n, ncclInt32, ncclSum, comm, NULL));
  CHECK(ncclGroupEnd());
  for (size_t i = 0; i < 2 * n; ++i)
    if (fbuf[i] != SumFloat(salt + 3, nranks, i))
      FAIL("grouped all_reduce element %zu: %.9g, expected %.9g", i, fbuf[i],
           SumFloat(salt + 3, nranks, i));
  for (size_t i = 0; i < n; ++i) {
    uint32_t sum = 0;
    for (int r = 0; r < nranks; ++r) sum += (uint32_t)IntValue(salt, r, i);
    if (irecv[i] != (int32_t)sum) FAIL("grouped int32 all_reduce element %zu", i);
  }
  /* Broadcast from every root, out of place and (ncclBcast) in place, bytes as they left. */
  for (int root = 0; root < nranks; ++root) {
    memset(irecv, 0xA5, n * sizeof(int32_t));
    CHECK(ncclBroadcast(rank == root ? isend : NULL, irecv, n, ncclInt32, root, comm, NULL));
    for (size_t i = 0; i < n; ++i)
      if (irecv[i] != IntValue(salt, root, i))
        FAIL("broadcast from %d element %zu: %d, expected %d", root, i, irecv[i],
             IntValue(salt, root, i));
    for (size_t i = 0; i < n; ++i) fbuf[i] = rank == root ? FloatValue(salt + 4, root, i) : -7.0f;
    CHECK(ncclBcast(fbuf, n, ncclFloat32, root, comm, NULL));
    for (size_t i = 0; i < n; ++i)
      if (fbuf[i] != FloatValue(salt + 4, root, i))
        FAIL("bcast from %d element %zu: %g, expected %g", root, i, fbuf[i],
             FloatValue(salt + 4, root, i));
  }
  /* NCCL's refusals come back as NCCL results: overlapping buffers that are not the in-place
   * layout. */
  EXPECT_RESULT(ncclAllReduce(isend, isend + 1, n, ncclInt32, ncclSum, comm, NULL),
                ncclInvalidArgument);
  free(isend);
  free(irecv);
  free(fbuf);
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

static int Gcd(int a, int b) {
  while (b != 0) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* NCCL 2.28's LSA team size for the split: the gcd of the lengths of the runs of consecutive
 * ranks on one node (NCCL's src/dev_runtime.cc, computeLsaSize), computed here on its own. */
static int ExpectedLsaSize(int nranks) {
  int size = 0, run = 1;
  for (int r = 1; r < nranks; ++r) {
    if (g_node_of_rank[r] == g_node_of_rank[r - 1]) {
      ++run;
    } else {
      size = Gcd(size, run);
      run = 1;
    }
  }
  return Gcd(size, run);
}

/* The device API's teams (nccl_device/core.h, declared above) against g_node_of_rank: the LSA
 * team is this rank's block of lsa consecutive ranks, every one on this rank's node; the rail
 * the ranks lsa apart; rank conversions land on those world ranks. Where every node is one
 * contiguous block of one size, the LSA team is exactly this node and the rail exactly the
 * ranks of this local index. */
static void CheckTeams(ncclComm_t comm, int nranks, int rank) {
  const int lsa = ExpectedLsaSize(nranks);
  struct XcclTestTeam world = ncclTeamWorld(comm), lsa_team = ncclTeamLsa(comm);
  struct XcclTestTeam rail = ncclTeamRail(comm);
  if (world.nRanks != nranks || world.rank != rank || world.stride != 1)
    FAIL("ncclTeamWorld is {%d, %d, %d}", world.nRanks, world.rank, world.stride);
  if (lsa_team.nRanks != lsa || lsa_team.rank != rank % lsa || lsa_team.stride != 1)
    FAIL("ncclTeamLsa is {%d, %d, %d}, expected {%d, %d, 1}", lsa_team.nRanks, lsa_team.rank,
         lsa_team.stride, lsa, rank % lsa);
  if (rail.nRanks != nranks / lsa || rail.rank != rank / lsa || rail.stride != lsa)
    FAIL("ncclTeamRail is {%d, %d, %d}, expected {%d, %d, %d}", rail.nRanks, rail.rank, rail.stride,
         nranks / lsa, rank / lsa, lsa);
  for (int r = 0; r < nranks; ++r)
    if (ncclTeamRankToWorld(comm, world, r) != r)
      FAIL("world rank %d maps to %d", r, ncclTeamRankToWorld(comm, world, r));
  int node_size = 0, local_rank = 0, uniform = 1;
  for (int r = 0; r < nranks; ++r) {
    if (g_node_of_rank[r] != g_node_of_rank[rank]) continue;
    ++node_size;
    if (r < rank) ++local_rank;
  }
  for (int i = 0; i < lsa_team.nRanks; ++i) {
    const int w = ncclTeamRankToWorld(comm, lsa_team, i);
    if (w != rank - rank % lsa + i) FAIL("LSA rank %d maps to world %d", i, w);
    if (g_node_of_rank[w] != g_node_of_rank[rank])
      FAIL("LSA rank %d is world rank %d, on node %d; this rank is on node %d", i, w,
           g_node_of_rank[w], g_node_of_rank[rank]);
    if (ncclTeamRankToLsa(comm, lsa_team, i) != i)
      FAIL("LSA rank %d maps to LSA rank %d", i, ncclTeamRankToLsa(comm, lsa_team, i));
  }
  for (int i = 0; i < rail.nRanks; ++i) {
    const int w = ncclTeamRankToWorld(comm, rail, i);
    if (w != rank % lsa + i * lsa) FAIL("rail rank %d maps to world %d", i, w);
  }
  /* Even contiguous nodes: one block per node of node_size ranks. */
  for (int r = 0; r < nranks; ++r)
    if (g_node_of_rank[r] != r / node_size) uniform = 0;
  if (uniform && nranks % node_size == 0) {
    if (lsa != node_size) FAIL("even nodes of %d ranks, but LSA teams of %d", node_size, lsa);
    for (int i = 0; i < rail.nRanks; ++i) {
      const int w = ncclTeamRankToWorld(comm, rail, i);
      if (g_node_of_rank[w] != i) FAIL("rail rank %d (world %d) is not on node %d", i, w, i);
      int w_local = 0;
      for (int r = 0; r < w; ++r) w_local += g_node_of_rank[r] == g_node_of_rank[w];
      if (w_local != local_rank)
        FAIL("rail rank %d (world %d) has local rank %d, this rank %d", i, w, w_local, local_rank);
    }
  }
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
  CheckTeams(comm, nranks, rank);
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
  CheckWindow(comm, nranks, rank, 9);
  CheckReductions(comm, nranks, rank, 3);

  /* Shrink (native for xccl communicators): the last rank excluded takes no part; the others
   * gather over the child, then revoke it, after which its calls are refused. */
  if (nranks >= 2 && rank != nranks - 1) {
    int excluded[1] = {nranks - 1};
    ncclComm_t small = NULL;
    CHECK(ncclCommShrink(comm, excluded, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    int small_count = 0, small_rank = -1;
    CHECK(ncclCommCount(small, &small_count));
    CHECK(ncclCommUserRank(small, &small_rank));
    if (small_count != nranks - 1 || small_rank != rank)
      FAIL("shrink gave rank %d of %d", small_rank, small_count);
    CheckAllGatherFloat(small, nranks - 1, rank, 11);
    ncclComm_t refused = NULL;
    EXPECT_RESULT(ncclCommShrink(comm, excluded, 1, &refused, NULL, 5), ncclInvalidArgument);
    CHECK(ncclCommRevoke(small, 0));
    float one[1] = {0}, all[64];
    EXPECT_RESULT(ncclAllGather(one, all, 1, ncclFloat32, small, NULL), ncclInvalidUsage);
    if (!strstr(ncclGetLastError(small), "revoked"))
      FAIL("after revoke: %s", ncclGetLastError(small));
    CHECK(ncclCommDestroy(small));
  }

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
  EXPECT_RESULT(ncclReduce(buf, buf, 8, ncclInt32, ncclSum, 0, comm, NULL), ncclInvalidUsage);
  if (!strstr(ncclGetLastError(comm), "ncclReduce")) FAIL("message: %s", ncclGetLastError(comm));
  ncclRedOp_t premul;
  float half = 0.5f;
  EXPECT_RESULT(
      ncclRedOpCreatePreMulSum(&premul, &half, ncclFloat32, ncclScalarHostImmediate, comm),
      ncclInvalidUsage);
  EXPECT_RESULT(ncclSend(buf, 8, ncclInt32, (rank + 1) % nranks, comm, NULL), ncclInvalidUsage);
  if (!strstr(ncclGetLastError(comm), "ncclSend")) FAIL("message: %s", ncclGetLastError(comm));
  ncclComm_t sub = NULL;
  EXPECT_RESULT(ncclCommSplit(comm, 0, rank, &sub, NULL), ncclInvalidUsage);
  if (!strstr(ncclGetLastError(NULL), "ncclCommSplit")) FAIL("message: %s", ncclGetLastError(NULL));
  CheckAllGatherFloat(comm, nranks, rank, 20); /* the native paths are unaffected */
  CheckReductions(comm, nranks, rank, 21);
  CHECK(ncclCommDestroy(comm));
}

/* Reductions native by default beside a user-defined op that is not: ncclSum runs in xccl (the
 * double never sees it), a ncclRedOpCreatePreMulSum op and the all_reduce with it reach the
 * double, and with XCCL_DEBUG=INFO each path is named once on stderr (read back here). */
static void PreMulSumRank(int nranks, int rank) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/xccl_shim_premul_%d_%d.txt", (int)getpid(), rank);
  fflush(stderr);
  const int saved = dup(2);
  FILE* capture = fopen(path, "w+");
  if (!capture || saved < 0) FAIL("cannot capture stderr into %s", path);
  dup2(fileno(capture), 2);
  ncclComm_t comm = NULL;
  CHECK(ncclCommInitRank(&comm, nranks, g_ids[0], rank));
  CheckReductions(comm, nranks, rank, 50);
  ncclRedOp_t premul;
  float factor = 0.25f;
  CHECK(ncclRedOpCreatePreMulSum(&premul, &factor, ncclFloat32, ncclScalarHostImmediate, comm));
  float* f = malloc(g_count * sizeof(float));
  for (size_t i = 0; i < g_count; ++i) f[i] = FloatValue(51, rank, i);
  CHECK(ncclAllReduce(f, f, g_count, ncclFloat32, premul, comm, NULL));
  for (size_t i = 0; i < g_count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += factor * FloatValue(51, r, i);
    if (f[i] != want) FAIL("pre-multiplied all_reduce element %zu: %g, expected %g", i, f[i], want);
  }
  CHECK(ncclRedOpDestroy(premul, comm));
  CHECK(ncclCommDestroy(comm));
  free(f);
  fflush(stderr);
  dup2(saved, 2);
  char text[8192] = {0};
  rewind(capture);
  fread(text, 1, sizeof text - 1, capture);
  fclose(capture);
  unlink(path);
  const char* said[] = {
      "INFO ncclAllReduce: runs natively in xccl", "INFO ncclReduceScatter: runs natively in xccl",
      "INFO ncclBroadcast: runs natively in xccl", "is not one of NCCL's built-in ops"};
  for (size_t k = 0; k < sizeof said / sizeof said[0]; ++k)
    if (!strstr(text, said[k])) FAIL("stderr lacks \"%s\":\n%s", said[k], text);
}

/* Ranks over several nodes (XCCL_FAKE_NODES or one XCCL_HOSTID per rank): init, native
 * all_gathers across the nodes, the teams against the split, and with the double as vendor
 * (XCCL_SHIM_DOUBLE_LOG set) a forwarded all_reduce and a vendor-only split whose LSA team
 * the vendor answers. */
static void NodesRank(int nranks, int rank) {
  ncclComm_t comm = NULL;
  CHECK(ncclCommInitRank(&comm, nranks, g_ids[0], rank));
  CheckQueries(comm, nranks, rank);
  CheckAllGatherFloat(comm, nranks, rank, 40);
  CheckAllGatherInPlace(comm, nranks, rank, 41);
  if (getenv("XCCL_SHIM_DOUBLE_LOG")) {
    int32_t* send = malloc(g_count * sizeof(int32_t));
    int32_t* recv = malloc(g_count * sizeof(int32_t));
    for (size_t i = 0; i < g_count; ++i) send[i] = (int32_t)(Value(42, rank, i) % 200001) - 100000;
    memset(recv, 0xA5, g_count * sizeof(int32_t));
    CHECK(ncclAllReduce(send, recv, g_count, ncclInt32, ncclSum, comm, NULL));
    for (size_t i = 0; i < g_count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < nranks; ++r) want += (int32_t)(Value(42, r, i) % 200001) - 100000;
      if (recv[i] != want) FAIL("all_reduce element %zu: %d, expected %d", i, recv[i], want);
    }
    free(send);
    free(recv);
    ncclComm_t split = NULL;
    CHECK(ncclCommSplit(comm, 0, rank, &split, NULL));
    if (!split) FAIL("ncclCommSplit returned no communicator");
    struct XcclTestTeam split_world = ncclTeamWorld(split); /* known to the shim */
    if (split_world.nRanks != nranks || split_world.rank != rank || split_world.stride != 1)
      FAIL("the split's world team is {%d, %d, %d}", split_world.nRanks, split_world.rank,
           split_world.stride);
    struct XcclTestTeam vendor_lsa = ncclTeamLsa(split); /* the double's answer, logged */
    if (vendor_lsa.nRanks != 1 || vendor_lsa.rank != 0 || vendor_lsa.stride != 1)
      FAIL("a vendor-only communicator's LSA team is {%d, %d, %d}, not the double's {1, 0, 1}",
           vendor_lsa.nRanks, vendor_lsa.rank, vendor_lsa.stride);
    CHECK(ncclCommDestroy(split));
  }
  CheckAllGatherFloat(comm, nranks, rank, 43); /* native again after the forwarded calls */
  if (!getenv("XCCL_SHIM_DOUBLE_LOG")) CheckReductions(comm, nranks, rank, 44); /* native */
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
  CheckReductions(a->comm, a->nranks, a->rank, 31);
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

/* The native reductions never reached the double; the user-defined op's calls did, once each. */
static void CheckPreMulLog(int nranks) {
  const char* log = getenv("XCCL_SHIM_DOUBLE_LOG");
  if (!log) FAIL("XCCL_SHIM_DOUBLE_LOG is not set");
  const char* once[] = {"ncclRedOpCreatePreMulSum", "ncclAllReduce", "ncclRedOpDestroy"};
  for (int r = 0; r < nranks; ++r) {
    for (size_t f = 0; f < sizeof once / sizeof once[0]; ++f)
      if (CountLines(log, once[f], r) != 1)
        FAIL("rank %d: %s reached the vendor %d times, expected once (the native ones never)", r,
             once[f], CountLines(log, once[f], r));
    if (CountLines(log, "ncclReduceScatter", r) != 0)
      FAIL("rank %d: a native reduce_scatter was forwarded", r);
  }
}

/* g_node_of_rank from a comma list: node sizes in rank order (XCCL_FAKE_NODES) or one host id
 * per rank (nodes numbered in the order of their lowest rank, as xccl numbers them). */
static void SplitFromSizes(const char* spec, int nranks) {
  int rank = 0, node = 0;
  for (const char* p = spec; *p; ++node) {
    char* end = NULL;
    long size = strtol(p, &end, 10);
    if (end == p || size < 1 || rank + size > nranks) FAIL("bad XCCL_FAKE_NODES %s", spec);
    for (long i = 0; i < size; ++i) g_node_of_rank[rank++] = node;
    p = *end == ',' ? end + 1 : end;
  }
  if (rank != nranks) FAIL("XCCL_FAKE_NODES %s places %d of %d ranks", spec, rank, nranks);
}
static void SplitFromHosts(char hosts[][32], int nranks) {
  for (int r = 0; r < nranks; ++r) {
    g_node_of_rank[r] = r == 0 ? 0 : -1;
    int nodes = 0;
    for (int q = 0; q < r; ++q)
      nodes = g_node_of_rank[q] + 1 > nodes ? g_node_of_rank[q] + 1 : nodes;
    for (int q = 0; q < r && g_node_of_rank[r] < 0; ++q)
      if (strcmp(hosts[q], hosts[r]) == 0) g_node_of_rank[r] = g_node_of_rank[q];
    if (g_node_of_rank[r] < 0) g_node_of_rank[r] = nodes;
  }
}

/* The ids, made in rank 0's process after the fork, for host-id runs: every rank must read its
 * own XCCL_HOSTID, so no xccl call may happen before the fork. */
struct SharedIds {
  int ready;
  ncclUniqueId ids[NUM_IDS];
};

static void IdsFromRankZero(struct SharedIds* shared, int rank) {
  if (rank == 0) {
    CHECK(ncclGetUniqueId(&shared->ids[0])); /* the nodes mode's one communicator */
    __atomic_store_n(&shared->ready, 1, __ATOMIC_RELEASE);
  } else {
    struct timespec start, now, nap = {0, 1000000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!__atomic_load_n(&shared->ready, __ATOMIC_ACQUIRE)) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec > 60) FAIL("rank 0 made no ids within 60 s");
      nanosleep(&nap, NULL);
    }
  }
  g_ids[0] = shared->ids[0];
}

/* Across nodes: the forwarded calls reached the double once per rank, the native ones never. */
static void CheckNodesLog(int nranks) {
  const char* log = getenv("XCCL_SHIM_DOUBLE_LOG");
  if (CountLines(log, "ncclGetUniqueId", -1) != 1)
    FAIL("the vendor id was made %d times, expected once", CountLines(log, "ncclGetUniqueId", -1));
  const char* once[] = {"ncclCommInitRank", "ncclAllReduce", "ncclCommSplit", "ncclTeamLsa"};
  for (int r = 0; r < nranks; ++r) {
    for (size_t f = 0; f < sizeof once / sizeof once[0]; ++f)
      if (CountLines(log, once[f], r) != 1)
        FAIL("rank %d: %s reached the vendor %d times, expected once", r, once[f],
             CountLines(log, once[f], r));
    if (CountLines(log, "ncclAllGather", r) != 0)
      FAIL("rank %d: a native all_gather reached the vendor", r);
    if (CountLines(log, "ncclCommDestroy", r) != 2)
      FAIL("rank %d: %d vendor comms destroyed, expected 2", r,
           CountLines(log, "ncclCommDestroy", r));
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s native|initall|forward|nofallback|premul|nodes <nranks> [0|1|hosts]\n",
            argv[0]);
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
  const char* fake = getenv("XCCL_FAKE_NODES");
  if (fake && *fake) SplitFromSizes(fake, nranks);
  char hosts[16][32];
  const int by_host = strcmp(mode, "nodes") == 0 && argc > 3;
  if (by_host) {
    if (fake && *fake) FAIL("give either XCCL_FAKE_NODES or host ids, not both");
    int n = 0;
    for (const char* p = argv[3]; n < nranks; ++n) {
      const char* comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      if (len == 0 || len >= sizeof hosts[0]) FAIL("bad host id list %s", argv[3]);
      memcpy(hosts[n], p, len);
      hosts[n][len] = '\0';
      if (!comma) {
        ++n;
        break;
      }
      p = comma + 1;
    }
    if (n != nranks) FAIL("%d host ids for %d ranks", n, nranks);
    SplitFromHosts(hosts, nranks);
  }
  if (strcmp(mode, "initall") == 0) return InitAll(nranks);

  struct SharedIds* shared =
      mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) FAIL("mmap failed");
  if (!by_host)
    for (int i = 0; i < NUM_IDS; ++i) CHECK(ncclGetUniqueId(&g_ids[i]));
  pid_t pids[16];
  for (int r = 0; r < nranks; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) FAIL("fork failed");
    if (pids[r] == 0) {
      g_rank = r;
      if (by_host) {
        setenv("XCCL_HOSTID", hosts[r], 1);
        IdsFromRankZero(shared, r);
      }
      if (strcmp(mode, "nodes") == 0)
        NodesRank(nranks, r);
      else if (strcmp(mode, "native") == 0)
        NativeRank(nranks, r);
      else if (strcmp(mode, "forward") == 0)
        ForwardRank(nranks, r);
      else if (strcmp(mode, "nofallback") == 0)
        NoFallbackRank(nranks, r);
      else if (strcmp(mode, "premul") == 0)
        PreMulSumRank(nranks, r);
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
  if (strcmp(mode, "premul") == 0) CheckPreMulLog(nranks);
  if (strcmp(mode, "nodes") == 0 && getenv("XCCL_SHIM_DOUBLE_LOG")) CheckNodesLog(nranks);
  printf("shim client %s: OK (%d ranks, %zu elements each)\n", mode, nranks, g_count);
  return 0;
}
