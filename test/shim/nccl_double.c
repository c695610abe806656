/*
 * A stand-in for a vendor NCCL, for the shim's forwarding tests: ranks are processes of one
 * machine meeting in a POSIX shared-memory segment named by the unique id. It implements
 * all_reduce (sum of int32/float) and all_gather on host buffers, and logs every call as
 * "<function> <rank>" lines to $XCCL_SHIM_DOUBLE_LOG so tests can see what was forwarded.
 *
 * ncclAllReduce asks its own exported ncclCommCount for the rank count on purpose: unless the
 * shim loads it with RTLD_DEEPBIND, that call would land in the shim and fail, which is the
 * interposition trap real vendor libraries fall into. ncclAllReduce and the release also ask
 * the process's global scope for ncclCommGetAsyncError, which DEEPBIND does not cover: NCCL
 * 2.28.9 under PyTorch reached the shim's that way with its own communicator (docs/PERF.md), so
 * the shim must hand a vendor handle through, during destroy too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define SLOT_BYTES (1u << 20)
#define MAX_RANKS 16
#define EXPORT __attribute__((visibility("default")))

struct Shared {
  int arrived;
  int generation;
  int joined;
  char slots[MAX_RANKS][SLOT_BYTES];
};

struct ncclComm {
  int nranks, rank;
  char name[64];
  struct Shared* shm;
  int owns_shm; /* 0 for a split, which uses its parent's */
};

static void LogCall(const char* function, int rank) {
  const char* path = getenv("XCCL_SHIM_DOUBLE_LOG");
  if (!path || !*path) return;
  char line[128];
  int n = snprintf(line, sizeof line, "%s %d\n", function, rank);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) != n) { /* a test will notice the missing line */
  }
  close(fd);
}

static void Barrier(struct ncclComm* c) {
  int gen = __atomic_load_n(&c->shm->generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&c->shm->arrived, 1, __ATOMIC_ACQ_REL) == c->nranks) {
    __atomic_store_n(&c->shm->arrived, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->shm->generation, gen + 1, __ATOMIC_RELEASE);
  } else {
    while (__atomic_load_n(&c->shm->generation, __ATOMIC_ACQUIRE) == gen) sched_yield();
  }
}

EXPORT ncclResult_t ncclGetVersion(int* version) {
  *version = 21234; /* distinct from the shim's, so a test could tell them apart */
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static unsigned counter;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "/xccl_double_%d_%ld_%u", (int)getpid(),
           (long)ts.tv_nsec, counter++);
  LogCall("ncclGetUniqueId", -1);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  struct ncclComm* c = calloc(1, sizeof *c);
  c->nranks = nranks;
  c->rank = rank;
  memcpy(c->name, id.internal, sizeof c->name - 1);
  int fd = shm_open(c->name, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, sizeof(struct Shared)) != 0) {
    free(c);
    return ncclSystemError;
  }
  c->owns_shm = 1;
  c->shm = mmap(NULL, sizeof(struct Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (c->shm == MAP_FAILED) {
    free(c);
    return ncclSystemError;
  }
  __atomic_add_fetch(&c->shm->joined, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(&c->shm->joined, __ATOMIC_ACQUIRE) < nranks) sched_yield();
  /* Every rank has it mapped: the name can go, so a crashed test leaves nothing behind. */
  if (rank == 0) shm_unlink(c->name);
  LogCall("ncclCommInitRank", rank);
  *comm = c;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t* config) {
  if (config && config->magic != 0xcafebeefu) return ncclInvalidArgument;
  LogCall("ncclCommInitRankConfig", rank);
  return ncclCommInitRank(comm, nranks, id, rank);
}

/* Split into one color (every rank): a communicator over the same ranks and shared block.
 * Non-blocking configs are refused: NCCL would write *newcomm later, from its own thread, into
 * whatever variable the caller passed, so a shim must never forward one with a variable of its
 * own stack. */
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                  ncclConfig_t* config) {
  (void)key;
  if (config && config->blocking == 0) {
    LogCall("ncclCommSplit(non-blocking)", comm->rank);
    return ncclInvalidUsage;
  }
  LogCall("ncclCommSplit", comm->rank);
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = NULL;
    return ncclSuccess;
  }
  struct ncclComm* c = calloc(1, sizeof *c);
  *c = *comm;
  c->owns_shm = 0;
  *newcomm = c;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->nranks;
  return ncclSuccess;
}
EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}
EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  (void)comm;
  *device = 0;
  return ncclSuccess;
}

/* The state of `comm` as the first ncclCommGetAsyncError in the global scope (the program and
 * what it loaded at start, a shim included) reports it. dlsym(RTLD_DEFAULT) would search this
 * library first when it was opened with RTLD_DEEPBIND; the program's handle does not. */
static ncclResult_t GlobalScopeAsyncError(ncclComm_t comm) {
  typedef ncclResult_t (*AsyncErrorFn)(ncclComm_t, ncclResult_t*);
  void* program = dlopen(NULL, RTLD_NOW);
  AsyncErrorFn fn = program ? (AsyncErrorFn)dlsym(program, "ncclCommGetAsyncError") : NULL;
  if (program) dlclose(program);
  ncclResult_t state = ncclSuccess;
  if (fn == NULL) return ncclSuccess; /* nothing global: only this library's own */
  ncclResult_t r = fn(comm, &state);
  return r != ncclSuccess ? r : state;
}

static ncclResult_t Release(ncclComm_t comm, const char* function) {
  if (GlobalScopeAsyncError(comm) != ncclSuccess) return ncclInvalidArgument;
  LogCall(function, comm->rank);
  Barrier(comm);
  if (comm->owns_shm) munmap(comm->shm, sizeof(struct Shared));
  free(comm);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return Release(comm, "ncclCommDestroy"); }
EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return Release(comm, "ncclCommAbort"); }
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  LogCall("ncclCommFinalize", comm->rank);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  (void)comm;
  *error = ncclSuccess;
  return ncclSuccess;
}
EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return "nccl double: unsupported argument";
}
EXPORT ncclResult_t ncclGroupStart(void) {
  LogCall("ncclGroupStart", -1);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclGroupEnd(void) {
  LogCall("ncclGroupEnd", -1);
  return ncclSuccess;
}

static size_t TypeSize(ncclDataType_t t) { return t == ncclInt32 || t == ncclFloat32 ? 4 : 0; }

/* ncclRedOpCreatePreMulSum of a host float scalar: op handles from ncclNumOps up, one process
 * each (ranks fork before they make any). */
#define MAX_PREMUL_OPS 8
static float g_premul[MAX_PREMUL_OPS];
static int g_premul_count;
EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                             ncclScalarResidence_t residence, ncclComm_t comm) {
  if (op == NULL || scalar == NULL || comm == NULL || datatype != ncclFloat32 ||
      residence != ncclScalarHostImmediate || g_premul_count == MAX_PREMUL_OPS)
    return ncclInvalidArgument;
  LogCall("ncclRedOpCreatePreMulSum", comm->rank);
  g_premul[g_premul_count] = *(const float*)scalar;
  *op = (ncclRedOp_t)(ncclNumOps + g_premul_count++);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (comm == NULL || (int)op < (int)ncclNumOps || (int)op >= (int)ncclNumOps + g_premul_count)
    return ncclInvalidArgument;
  LogCall("ncclRedOpDestroy", comm->rank);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream) {
  (void)stream;
  int nranks = 0;
  if (ncclCommCount(comm, &nranks) != ncclSuccess) return ncclInternalError;
  if (GlobalScopeAsyncError(comm) != ncclSuccess) return ncclInvalidArgument;
  size_t bytes = count * TypeSize(datatype);
  const int premul = (int)op - (int)ncclNumOps; /* a pre-multiplied float sum, else ncclSum */
  if ((op != ncclSum && (premul < 0 || premul >= g_premul_count || datatype != ncclFloat32)) ||
      TypeSize(datatype) == 0 || bytes > SLOT_BYTES)
    return ncclInvalidArgument;
  const float factor = premul >= 0 ? g_premul[premul] : 1.0f;
  LogCall("ncclAllReduce", comm->rank);
  memcpy(comm->shm->slots[comm->rank], sendbuff, bytes);
  Barrier(comm);
  for (size_t i = 0; i < count; ++i) {
    if (datatype == ncclInt32) {
      int32_t s = 0;
      for (int r = 0; r < nranks; ++r) s += ((const int32_t*)comm->shm->slots[r])[i];
      ((int32_t*)recvbuff)[i] = s;
    } else {
      float s = 0;
      for (int r = 0; r < nranks; ++r) s += factor * ((const float*)comm->shm->slots[r])[i];
      ((float*)recvbuff)[i] = s;
    }
  }
  Barrier(comm); /* nobody refills a slot before every rank has read it */
  return ncclSuccess;
}

/* NCCL 2.28's device API, as far as forwarding goes: the device communicator records the rank
 * of the (vendor) communicator it was made from, so the test sees which one the shim passed. */
struct ncclDevCommRequirements;
EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs,
                                      void* out) {
  (void)reqs;
  if (comm == NULL || out == NULL) return ncclInvalidArgument;
  LogCall("ncclDevCommCreate", comm->rank);
  memcpy(out, &comm->rank, sizeof(int));
  return ncclSuccess;
}
EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* dev_comm) {
  if (comm == NULL || dev_comm == NULL) return ncclInvalidArgument;
  LogCall("ncclDevCommDestroy", comm->rank);
  return ncclSuccess;
}

/* The LSA team of the double's own communicators (the shim asks it for vendor-only ones):
 * every rank a team of its own, logged. */
struct DoubleTeam {
  int nRanks, rank, stride;
};
EXPORT struct DoubleTeam ncclTeamLsa(ncclComm_t comm) {
  struct DoubleTeam team = {1, 0, 1};
  if (comm != NULL) LogCall("ncclTeamLsa", comm->rank);
  return team;
}

EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  size_t bytes = sendcount * TypeSize(datatype);
  if (TypeSize(datatype) == 0 || bytes > SLOT_BYTES) return ncclInvalidArgument;
  LogCall("ncclAllGather", comm->rank);
  memcpy(comm->shm->slots[comm->rank], sendbuff, bytes);
  Barrier(comm);
  for (int r = 0; r < comm->nranks; ++r)
    memcpy((char*)recvbuff + (size_t)r * bytes, comm->shm->slots[r], bytes);
  Barrier(comm);
  return ncclSuccess;
}
