/*
 * xccl: collective communication for GPU servers, with an NCCL-style C API.
 *
 * This header is C99-clean and needs no GPU header: a stream is an opaque pointer, so a
 * cudaStream_t or hipStream_t passes straight in (on the host platform it may be NULL).
 * Result codes and data types are numbered as NCCL's, so values can be cast across.
 */
#ifndef XCCL_H_
#define XCCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XCCL_MAJOR 0
#define XCCL_MINOR 1
#define XCCL_PATCH 0
#define XCCL_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define XCCL_VERSION_CODE XCCL_VERSION(XCCL_MAJOR, XCCL_MINOR, XCCL_PATCH)

/* Opaque communicator handle. A destroyed handle stays recognisable: using it again returns
 * xcclInvalidArgument instead of touching freed memory. */
typedef struct xcclComm* xcclComm_t;
#define XCCL_COMM_NULL NULL

/* Opaque stream handle: cudaStream_t / hipStream_t, or NULL on the host platform.
 * On a GPU a communicator's calls must also run on the device in the order they were issued:
 * issue them on one stream, or make each call's stream wait (an event) for the previous call's.
 * NULL there is the legacy default stream, which every rank of one process sharing a GPU shares:
 * one rank's call, waiting for its peers, would hold theirs behind it until the deadline. Give
 * each rank its own stream, created non-blocking, as NCCL users do. */
typedef void* xcclStream_t;

#define XCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[XCCL_UNIQUE_ID_BYTES];
} xcclUniqueId;

/* Numbered as ncclResult_t for 0..7; xcclTimeout is xccl's own: a wait passed its deadline. */
typedef enum {
  xcclSuccess = 0,
  xcclUnhandledDeviceError = 1, /* a CUDA/HIP runtime call failed */
  xcclSystemError = 2,          /* an OS call failed (socket, shm, thread) */
  xcclInternalError = 3,        /* a bug in xccl */
  xcclInvalidArgument = 4,      /* a bad pointer, count, type, rank ... */
  xcclInvalidUsage = 5,         /* a call that is wrong in this state (reused id, ...) */
  xcclRemoteError = 6,          /* a peer failed or died */
  xcclInProgress = 7,           /* a non-blocking operation has not finished */
  xcclTimeout = 8,              /* a wait passed XCCL_TIMEOUT_MS */
  xcclNumResults = 9
} xcclResult_t;

/* Numbered as ncclDataType_t. */
typedef enum {
  xcclInt8 = 0,
  xcclChar = 0,
  xcclUint8 = 1,
  xcclInt32 = 2,
  xcclInt = 2,
  xcclUint32 = 3,
  xcclInt64 = 4,
  xcclUint64 = 5,
  xcclFloat16 = 6,
  xcclHalf = 6,
  xcclFloat32 = 7,
  xcclFloat = 7,
  xcclFloat64 = 8,
  xcclDouble = 8,
  xcclBfloat16 = 9,
  xcclFloat8e4m3 = 10,
  xcclFloat8e5m2 = 11,
  xcclNumTypes = 12,
  /* Not a type. Makes every int a value of the enum in C++ (as NCCL's ncclMaxRedOp does), so
   * that a bad value from a caller is refused by the argument checks, not undefined there. */
  xcclDataTypeMaxEnum = 0x7fffffff
} xcclDataType_t;

/* Numbered as ncclRedOp_t. avg is the sum divided by the rank count. */
typedef enum {
  xcclSum = 0,
  xcclProd = 1,
  xcclMax = 2,
  xcclMin = 3,
  xcclAvg = 4,
  xcclNumOps = 5,
  xcclRedOpMaxEnum = 0x7fffffff /* not an op: as xcclDataTypeMaxEnum */
} xcclRedOp_t;

/* Communicator configuration. Always start from XCCL_CONFIG_INITIALIZER: size, magic and
 * version let a library accept callers built against older headers (fewer fields: the rest
 * take defaults) and newer ones (unknown trailing fields are ignored). */
#define XCCL_CONFIG_MAGIC 0x7863636cu /* "xccl" */
#define XCCL_CONFIG_UNDEF_INT INT32_MIN
#define XCCL_CONFIG_UNDEF_PTR NULL
typedef struct xcclConfig_v100 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;         /* 1 (default): init returns when ready. 0 is accepted, acts as 1. */
  int timeoutMs;        /* deadline of every wait; default XCCL_TIMEOUT_MS */
  const char* commName; /* shown in logs */
} xcclConfig_t;

#define XCCL_CONFIG_INITIALIZER                                                        \
  {                                                                                    \
    sizeof(xcclConfig_t), XCCL_CONFIG_MAGIC, XCCL_VERSION_CODE, XCCL_CONFIG_UNDEF_INT, \
        XCCL_CONFIG_UNDEF_INT, XCCL_CONFIG_UNDEF_PTR                                   \
  }

/* Library version as XCCL_VERSION_CODE. */
xcclResult_t xcclGetVersion(int* version);

/* The platform this library was built for: "host", "cuda" or "hip" (a binding picks its
 * tensors' device and stream handling by it). Never NULL. */
const char* xcclGetPlatformName(void);

/* Makes a unique id in the calling process (the rendezvous root runs here, in a thread, until
 * every rank has joined). With XCCL_COMM_ID=host:port set, the id names that address and
 * rank 0 serves the rendezvous instead. An id initialises one communicator only. */
xcclResult_t xcclGetUniqueId(xcclUniqueId* uniqueId);

/* Collective over nranks callers sharing one id. Blocks until all ranks have joined, or until
 * the deadline (xcclTimeout naming the missing ranks). */
xcclResult_t xcclCommInitRank(xcclComm_t* comm, int nranks, xcclUniqueId commId, int rank);
xcclResult_t xcclCommInitRankConfig(xcclComm_t* comm, int nranks, xcclUniqueId commId, int rank,
                                    xcclConfig_t* config);

/* ndev ranks in this process, rank i on devlist[i] (NULL: device i modulo the visible device
 * count on GPU platforms). Devices may repeat: several ranks may share one GPU. */
xcclResult_t xcclCommInitAll(xcclComm_t* comms, int ndev, const int* devlist);

/* Abort may be called from another thread while a call on the communicator is blocked (a peer
 * that never comes): that call returns an error within milliseconds, then abort frees. Destroy
 * from another thread waits for such a call to end (at its deadline at the latest).
 * Finalize checks the handle: every call has already completed (host) or handed all of its
 * work, the DMA queues' included, to the caller's stream (GPU), so there is nothing of xccl's
 * own to flush; synchronise those streams before Destroy. Destroy frees. Abort frees without
 * waiting, also when peers are gone. After Destroy/Abort the handle must not be used (a call with
 * it returns xcclInvalidArgument). */
xcclResult_t xcclCommFinalize(xcclComm_t comm);
xcclResult_t xcclCommDestroy(xcclComm_t comm);
xcclResult_t xcclCommAbort(xcclComm_t comm);

/* A new communicator of comm's ranks without the n_exclude ranks listed (NCCL 2.27's
 * ncclCommShrink): called by every rank not excluded, never by the excluded ones, which may be
 * dead, hung, or alive and doing something else; it works right after a failed call. The
 * survivors keep their order: new rank = the number of survivors below the old rank. Every
 * survivor must pass the same list (xcclInvalidUsage otherwise). config NULL: comm's
 * configuration. flags: XCCL_SHRINK_DEFAULT, or XCCL_SHRINK_ABORT to stop comm's queued work
 * first (after a failure). comm stays this rank's to destroy or abort, which then waits for no
 * one. Every wait has comm's deadline; a survivor that never comes is named at it. */
#define XCCL_SHRINK_DEFAULT 0
#define XCCL_SHRINK_ABORT 1
xcclResult_t xcclCommShrink(xcclComm_t comm, const int* exclude_ranks, int n_exclude,
                            xcclComm_t* newcomm, xcclConfig_t* config, int flags);
/* Stops comm's queued work and fails it (NCCL 2.27's ncclCommRevoke): later calls on it return
 * xcclInvalidUsage saying it was revoked, its peers' waits on this rank end, shrink still works
 * on it, and destroy or abort frees it. flags: 0 (NCCL's NCCL_REVOKE_DEFAULT). */
xcclResult_t xcclCommRevoke(xcclComm_t comm, int flags);

/* The first asynchronous failure of this communicator (a dead peer, a missed deadline), or
 * xcclSuccess. Once an error is recorded, collectives on this communicator return it.
 * A collective call refused for its own arguments (xcclInvalidArgument, nothing moved) has not
 * happened, as in NCCL: the peers' matching calls fail at their deadline naming this rank, and
 * the communicator is then failed. Treat such a refusal as fatal to the communicator (abort
 * it): a next call made before the peers' deadline would be paired with their pending one. */
xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t* asyncError);

xcclResult_t xcclCommCount(const xcclComm_t comm, int* count);
xcclResult_t xcclCommUserRank(const xcclComm_t comm, int* rank);
xcclResult_t xcclCommDevice(const xcclComm_t comm, int* device);
/* Number of DMA queues this rank opened: on the host platform one per peer of its node, at most
 * 16 (a queue then serves several peers, each in order); on a GPU of its own one per peer; none
 * where ranks share a GPU (their copy engines could deadlock each other), unless
 * XCCL_GPU_QUEUES sets a count (at most one per peer). Fused ag_gemm needs one per peer. */
xcclResult_t xcclCommQueueCount(const xcclComm_t comm, int* count);

/* Nodes. Init groups ranks into nodes by host (XCCL_HOSTID replaces the host's identity, as
 * NCCL_HOSTID does; XCCL_FAKE_NODES, for tests, splits ranks into nodes by rank blocks). Nodes
 * are numbered from 0 in the order of their lowest rank; a rank's local rank is its index among
 * its node's ranks, in ascending rank order. Every rank gets the same answers for every rank.
 * Every output pointer is required (xcclInvalidArgument naming a NULL one; nothing written).
 * xcclCommNodeInfo: this rank's node, the number of nodes, this rank's local rank and the number
 * of ranks on its node. */
xcclResult_t xcclCommNodeInfo(const xcclComm_t comm, int* node, int* nodeCount, int* localRank,
                              int* localSize);
/* The node and local rank of any rank (0 <= rank < the rank count): the ranks that share this
 * rank's node are those with its node, and its rail (the ranks with its local rank on every
 * node; none on a node with fewer ranks) those with its local rank. */
xcclResult_t xcclCommRankNode(const xcclComm_t comm, int rank, int* node, int* localRank);

const char* xcclGetErrorString(xcclResult_t result);
/* Text of the last failure on this communicator (or, for comm NULL, of this thread's most
 * recent failure; successful calls do not erase it). Never NULL. */
const char* xcclGetLastError(xcclComm_t comm);

/* NCCL semantics: recvbuff holds nranks blocks of sendcount elements, block r from rank r.
 * In place when sendbuff == recvbuff + rank * sendcount * size. On the host platform the call
 * returns when this rank's recvbuff is complete. Every rank passes the same count: on the host
 * platform ranks that pass different counts all fail at once (xcclInvalidUsage, "different
 * counts"), except that a rank passing 0 takes no part and returns at once, its peers failing at
 * their deadline (xcclTimeout, naming it); on a GPU a mismatch is not detected. On a GPU the
 * blocks go straight into the peers' receive buffers where they can reach them (ranks of one
 * process; other processes when recvbuff lies in xcclMemAlloc memory or a window), else through
 * inboxes. With one rank: a copy out of place, nothing in place. */
xcclResult_t xcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           xcclDataType_t datatype, xcclComm_t comm, xcclStream_t stream);

/* Reductions: every one of the 12 types, every op, count 0 (nothing moves), any alignment.
 * Accuracy: fp16, bf16, fp8 e4m3 and e5m2 accumulate in fp32 and are rounded once (to nearest
 * even; fp8 saturates to its largest finite value, fp16/bf16 overflow to inf); fp32 accumulates
 * in fp32 and fp64 in fp64; integers wrap as two's complement of their width; max and min of
 * floats give NaN where any rank's value is NaN; avg is the sum divided by the rank count,
 * rounded once (integers: the wrapped sum, truncated toward zero).
 * Determinism: every element is reduced in rank order, ((x0 op x1) op x2) op ... x(n-1) with xr
 * rank r's value, whatever the size, engine or timing, so on a given communicator the same
 * inputs give bitwise the same result on every rank and in every run. With ranks on several
 * nodes the fixed order is node by node, on every platform: each node's ranks in rank order into
 * an accumulator, then the nodes' accumulators in node order (nodes numbered by their lowest
 * rank); the accumulators cross the network as they are (fp32 for the 16- and 8-bit floats), so
 * the result is still rounded once.
 * Every rank passes the same count, type and op; on the host platform ranks that pass different
 * counts all fail at the first step: xcclInvalidUsage naming the other count, or, for a rank
 * whose wait a peer's report of the mismatch reaches first, xcclRemoteError naming the rank that
 * passed the other count; a rank passing 0 takes no part (its peers fail at their deadline,
 * naming it). On a GPU a mismatch is not detected.
 * Engines on a GPU: ranks read their part straight from every rank's buffers where they reach
 * them (ranks of one process; ranks of several processes of one node when every rank's sendbuff,
 * and for all_reduce recvbuff, lies in xcclMemAlloc memory or a window registered on the
 * communicator), else the data goes through inboxes. Between processes, as with NCCL's
 * symmetric windows, every rank's buffers of one call are such memory or none's are: a call that
 * mixes them fails at the deadline (xcclTimeout), some ranks having taken each engine. A peer
 * process that cannot map such memory (out of resources) fails the call at once on the buffer's
 * rank (xcclUnhandledDeviceError, naming the peer) and its peers through the failed
 * communicator. */

/* NCCL semantics: sendbuff holds nranks blocks of recvcount elements; rank r gets the reduction
 * of block r of every rank. In place when recvbuff == sendbuff + rank * recvcount * size; any
 * other overlap is refused. With one rank: a copy out of place (avg: the value itself). */
xcclResult_t xcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               xcclDataType_t datatype, xcclRedOp_t op, xcclComm_t comm,
                               xcclStream_t stream);

/* NCCL semantics: every rank gets the reduction of every rank's `count` elements. In place when
 * sendbuff == recvbuff; any other overlap is refused. Every rank gets the same bits: the result
 * is reduced once per element, by the rank that owns that part, and then gathered. */
xcclResult_t xcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           xcclDataType_t datatype, xcclRedOp_t op, xcclComm_t comm,
                           xcclStream_t stream);

/* NCCL semantics: every rank's recvbuff gets root's `count` elements of sendbuff, bit for bit
 * (any type; NaN payloads and signed zeros kept). sendbuff is read on root only (other ranks may
 * pass anything, NULL included); in place when sendbuff == recvbuff on root; any other overlap
 * on root is refused. Every rank passes the same count, type and root: on the host platform a
 * rank that sees another root's or count's pieces fails with xcclInvalidUsage at once, and its
 * peers by their next call at the latest (a rank whose peers all agree with it may complete);
 * on a GPU a mismatch is not detected. */
xcclResult_t xcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           xcclDataType_t datatype, int root, xcclComm_t comm, xcclStream_t stream);

/* ---- Memory and registration (zero-copy all_gather) ----
 * xcclMemAlloc: `size` bytes (> 0) that peers of this node can map: device memory of the
 * calling thread's current device on GPU platforms (IPC-exportable), page-aligned heap memory on
 * the host platform. Not zero-filled. A peer process maps it when a zero-copy call first uses
 * it (a GPU size is rounded up to 2 MiB so that no other allocation shares its mapping).
 * xcclMemFree takes only pointers xcclMemAlloc returned (NULL: nothing to do), refuses one that
 * still lies in a registered window (xcclInvalidUsage: deregister it first), and has every peer
 * process drop its map before the memory goes (free it only once no call uses it; on GPUs it waits
 * for the device as cudaFree does). */
xcclResult_t xcclMemAlloc(void** ptr, size_t size);
xcclResult_t xcclMemFree(void* ptr);

/* A symmetric window (NCCL 2.27 semantics): collective over the communicator's ranks, each
 * passing a buffer of its own inside one xcclMemAlloc allocation (sizes may differ); every rank
 * maps every peer's buffer on its node once, here. An all_gather whose receive buffer lies wholly
 * in a window of this communicator takes the zero-copy engine from peers of other processes too
 * (ranks of one process reach each other's buffers without one). winFlags: XCCL_WIN_DEFAULT.
 * Where one rank's check or mapping fails, every rank's register fails (nothing stays mapped).
 * Every rank deregisters its own window once no call on the stream still uses it (the call does
 * not wait for the other ranks); afterwards the buffer is ordinary xcclMemAlloc memory. */
typedef struct xcclWindow* xcclWindow_t;
#define XCCL_WIN_DEFAULT 0x00
xcclResult_t xcclCommWindowRegister(xcclComm_t comm, void* buff, size_t size, xcclWindow_t* win,
                                    int winFlags);
xcclResult_t xcclCommWindowDeregister(xcclComm_t comm, xcclWindow_t win);

/* A local registration (not collective, NCCL semantics): `buff` (size > 0 bytes of device memory
 * on GPU platforms) is exported once and the export kept with *handle. Zero-copy needs none:
 * ranks of one process reach each other's buffers, and peer processes map xcclMemAlloc memory
 * on first use. Deregister takes a handle of this communicator, once. */
xcclResult_t xcclCommRegister(const xcclComm_t comm, void* buff, size_t size, void** handle);
xcclResult_t xcclCommDeregister(const xcclComm_t comm, void* handle);

/* Returns (host) or completes on the stream (GPU) once every rank has entered it. */
xcclResult_t xcclBarrier(xcclComm_t comm, xcclStream_t stream);

/* ---- ag_gemm: fused all-gather + GEMM ----
 * Each rank holds A_r [m][k] (its tokens) and B_r [n][k] (its weight shard, row-major, one
 * row per output column) and receives C = concat_s(A_s) @ B_r^T, [nranks * padded_m][n],
 * row-major, where padded_m = xcclAgGemmPaddedM(m): source s's rows start at row
 * s * padded_m, and rows past its m (padding up to whole 256-row tiles) are zero.
 * Inputs: bf16 or fp16 (no scales), or fp8 e4m3 with fp32 scales, either per token and per
 * channel (ptpc: A scales [m], B scales [n]) or in blocks (blockscale, DeepSeek-V3's format as
 * vLLM's column-major per_token_group_quant_fp8 and DeepGEMM hand it over: KB = ceil(k / 128),
 * A scales [KB][m] with m contiguous, row i's scale for K block kb at a_scale[kb * m + i]; B
 * scales [ceil(n / 128)][KB] row-major, column j's at b_scale[(j / 128) * KB + kb]; the
 * arithmetic is xccl_gemm.h's). Output bf16 or fp16. The GEMM is a plugin (xccl_gemm.h). One
 * op serves any m up to m_max. Every call is collective over the communicator's ranks, with the
 * same m on every rank. */
typedef struct xcclAgGemm* xcclAgGemm_t;
struct xcclGemmPlugin_v1;

/* The scales of an op's inputs (the values of xcclGemmScaleMode_t in xccl_gemm.h). */
typedef enum {
  xcclAgGemmScalesDefault = 0,         /* fp8: per token and channel; bf16/fp16: none */
  xcclAgGemmScalesPtpc = 1,            /* fp8 only */
  xcclAgGemmScalesBlock128 = 2,        /* fp8 only: 1x128 A blocks, 128x128 B blocks */
  xcclAgGemmScalesMaxEnum = 0x7fffffff /* not a value: as xcclDataTypeMaxEnum */
} xcclAgGemmScales_t;

typedef enum {
  xcclAgGemmFused = 0, /* peers' rows pushed in bands, GEMM per band as they arrive (default) */
  xcclAgGemmSplit = 1, /* xcclAllGather of A (and its scales), then one GEMM */
  xcclAgGemmModeMaxEnum = 0x7fffffff /* not a mode: as xcclDataTypeMaxEnum */
} xcclAgGemmMode_t;

/* plugin_name: a name ("reference": libxccl-gemm-reference.so, found on the library search
 * path) or a path; NULL or "" takes XCCL_GEMM_PLUGIN. plugin: a struct the caller passes
 * instead (then plugin_name must be NULL). chunks: bands per source in fused mode, 0 to 8.
 * 0 = the default rule: the most bands, up to 4, whose output tiles (256 x 256) over the
 * nranks - 1 peers reach 1024, else 1 (measured, docs/PERF.md); a pinned value takes the
 * largest divisor of the row tiles up to it. Refused (nothing allocated): n not a positive
 * multiple of 16, k or m_max < 1, unsupported dtypes, a mode other than the two, chunks
 * outside 0..8, a plugin that does not support the shape, both plugin_name and plugin, a
 * communicator spanning more than one node, and fused mode on one with fewer DMA queues than
 * peers (xcclInvalidUsage: use split there). Collective: where one rank's
 * argument check, plugin init, shape check or allocation fails, every other rank's create fails
 * too (xcclRemoteError naming that rank); ranks that pass different n, k, m_max, types, mode or
 * chunks all fail (xcclInvalidUsage naming one that differs). */
xcclResult_t xcclAgGemmCreate(xcclComm_t comm, int64_t n, int64_t k, int64_t m_max,
                              xcclDataType_t in_type, xcclDataType_t out_type,
                              xcclAgGemmMode_t mode, int chunks, const char* plugin_name,
                              const struct xcclGemmPlugin_v1* plugin, xcclAgGemm_t* op);
/* xcclAgGemmCreate with the inputs' scales named (xcclAgGemmCreate is this with
 * xcclAgGemmScalesDefault). Block scales need fp8 inputs and a plugin of GEMM ABI version 2 or
 * later (an older one is refused, naming it and the mode); ranks asking for different scales
 * fail as for any other difference. */
xcclResult_t xcclAgGemmCreateScaled(xcclComm_t comm, int64_t n, int64_t k, int64_t m_max,
                                    xcclDataType_t in_type, xcclDataType_t out_type,
                                    xcclAgGemmScales_t scales, xcclAgGemmMode_t mode, int chunks,
                                    const char* plugin_name, const struct xcclGemmPlugin_v1* plugin,
                                    xcclAgGemm_t* op);
/* The row count every source's receive slot has for a call of m rows: m rounded up to 256. */
xcclResult_t xcclAgGemmPaddedM(xcclAgGemm_t op, int64_t m, int64_t* padded_m);
/* This rank's receive slot for a call of m rows ([padded_m][k] of in_type) and, for fp8, its
 * scales (ptpc: [padded_m] fp32; blockscale: the tiles below; NULL without scales): a caller may
 * write A there (quantise into it) and pass these pointers to xcclAgGemmRun, which then skips
 * the copy (the padding rows, m to padded_m, and their scales it still sets to zero). */
xcclResult_t xcclAgGemmLocalRows(xcclAgGemm_t op, int64_t m, void** rows, float** scales);
/* Blockscale ops: the receive slot's scales are kept as one packed tile per band of rows (the
 * unit a peer receives in one put and a GEMM call reads), so a caller quantising
 * into local_rows writes tile by tile. For a call of m rows, *tiles (if not NULL) says how many
 * there are; tile `tile` (0 <= tile < *tiles; pass 0 to learn the count) covers rows
 * [*row_begin, *row_end) of the padded receive slot and lies at *scales,
 * [KB][*row_end - *row_begin] fp32 with rows contiguous: row i's scale for K block kb at
 * (*scales)[kb * (*row_end - *row_begin) + i - *row_begin]. The tiles follow each other: tile 0
 * is at local_rows' scales.
 * Refused for ops without block scales. */
xcclResult_t xcclAgGemmLocalScaleTile(xcclAgGemm_t op, int64_t m, int tile, int* tiles,
                                      int64_t* row_begin, int64_t* row_end, float** scales);
/* The bands per source a fused call of m rows uses (a split op answers what a fused op of its
 * shape would use; it runs one GEMM over all rows). */
xcclResult_t xcclAgGemmChunks(xcclAgGemm_t op, int64_t m, int* chunks);
/* C for this call: into `out` ([nranks * padded_m][n] of out_type) or, with out NULL, into
 * the op's own buffer; *result (if not NULL) says where C is. a_scale/b_scale: fp8 only, in the
 * op's format (ptpc: [m] and [n]; blockscale: [KB][m] and [ceil(n / 128)][KB], see above).
 * Every rank must pass the same m (as every rank of an all_gather passes the same count): a
 * mismatch is not detected and gives a wrong C. Operands are dense (row strides
 * k and n). The op refuses pointers not aligned to their
 * element size. The cublaslt plugin tunes for 256-byte-aligned b and out (the op's own buffers
 * and local_rows are); less aligned ones run its algorithm where it accepts them, else
 * cuBLASLt's choice for their alignment, which may be slower. */
xcclResult_t xcclAgGemmRun(xcclAgGemm_t op, const void* a, const float* a_scale, const void* b,
                           const float* b_scale, int64_t m, void* out, void** result,
                           xcclStream_t stream);
/* Collective check of the gather path for m rows: every rank fills its receive slot with a
 * pattern, the rows are exchanged as in a run, every rank checks every receive slot, all meet in a
 * barrier, and only then does a rank that found a wrong receive slot fail (xcclInternalError
 * naming the receive slot, the count of wrong bytes, the first wrong row, and whose pattern of
 * which round it holds there, if any). It synchronises the stream (not capturable). */
xcclResult_t xcclAgGemmSelfTest(xcclAgGemm_t op, int64_t m, xcclStream_t stream);
/* Frees the op. Before or after its communicator's destroy or abort: after it, every other call
 * on the op is refused (xcclInvalidArgument), and destroy frees what the op holds. */
xcclResult_t xcclAgGemmDestroy(xcclAgGemm_t op);

/* ---- gemm_rs: GEMM fused with reduce-scatter (the row-parallel half) ----
 * Each rank holds A_r [m][k] (its shard of the inner dimension: k = K / nranks) and B_r [n][k]
 * (its weight shard, row-major, one row per output column); the result is C = sum over ranks of
 * A_r @ B_r^T, [m][n], of which rank r receives rows [r * m / nranks, (r + 1) * m / nranks):
 * m must be a multiple of nranks (refused otherwise, xcclInvalidArgument), no padding. Types and
 * scales as ag_gemm's (bf16/fp16 without scales, fp8 e4m3 with ptpc or block scales; A scales
 * ptpc [m], block [KB][m] with m contiguous). Each rank's partial product is rounded to out_type
 * and the partials are reduced as xcclReduceScatter reduces them (fp32 accumulation in rank
 * order, rounded once), so split and fused give the same bytes wherever the plugin computes a
 * band as it computes the whole. The GEMM is a plugin (xccl_gemm.h). Every call is collective,
 * with the same m on every rank. */
typedef struct xcclGemmRs* xcclGemmRs_t;

typedef enum {
  xcclGemmRsFused = 0, /* chunk by chunk: the GEMM of the next chunk beside the reduce-scatter of
                          this one (default) */
  xcclGemmRsSplit = 1, /* one GEMM over all m rows, then xcclReduceScatter */
  xcclGemmRsModeMaxEnum = 0x7fffffff /* not a mode: as xcclDataTypeMaxEnum */
} xcclGemmRsMode_t;

/* plugin_name, plugin and scales as xcclAgGemmCreateScaled's. chunks: fused mode's chunks per
 * owner's block, 0 to 8 (0: XCCL_GEMMRS_CHUNKS where set, else 1 where two ranks of a node share a
 * GPU, whose chunks have nothing to overlap with, else 4, or fewer where a block has fewer rows).
 * Refused (nothing allocated): n not a positive multiple of 16, k or m_max < 1, m_max not a
 * multiple of nranks, unsupported types or scales, a mode other than the two, chunks outside 0..8,
 * a plugin that does not support the shape, both plugin_name and plugin. Collective as
 * xcclAgGemmCreate: every rank fails where one does, and ranks asking for different ops fail
 * (xcclInvalidUsage naming one). */
xcclResult_t xcclGemmRsCreate(xcclComm_t comm, int64_t n, int64_t k, int64_t m_max,
                              xcclDataType_t in_type, xcclDataType_t out_type,
                              xcclAgGemmScales_t scales, xcclGemmRsMode_t mode, int chunks,
                              const char* plugin_name, const struct xcclGemmPlugin_v1* plugin,
                              xcclGemmRs_t* op);
/* This rank's rows of C, [m / nranks][n] of out_type, into `out`, which must not overlap the
 * operands. a_scale/b_scale: fp8 only (ptpc: [m] and [n]; block: [KB][m] and
 * [ceil(n / 128)][KB]). Dense operands (row strides k and n), each aligned to its element
 * size. m: a multiple of nranks, 1 <= m <= m_max, the same on every rank (a mismatch is
 * detected on the host platform only, as for xcclReduceScatter). */
xcclResult_t xcclGemmRsRun(xcclGemmRs_t op, const void* a, const float* a_scale, const void* b,
                           const float* b_scale, int64_t m, void* out, xcclStream_t stream);
/* Collective check of the exchange for m rows: every rank's partial products hold a known
 * pattern (-1, 0, 1), they are reduce-scattered as a run of m rows does, every rank checks its
 * rows, all meet in a barrier, and only then does a rank with wrong rows fail (xcclInternalError
 * naming the count of wrong elements, the first one's row and column, its bits and the expected
 * ones). It synchronises the stream (not capturable). */
xcclResult_t xcclGemmRsSelfTest(xcclGemmRs_t op, int64_t m, xcclStream_t stream);
/* Frees the op (as xcclAgGemmDestroy: before or after its communicator's end). */
xcclResult_t xcclGemmRsDestroy(xcclGemmRs_t op);

#ifdef __cplusplus
}
#endif

#endif /* XCCL_H_ */
