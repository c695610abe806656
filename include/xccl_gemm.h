/*
 * xccl GEMM plugin ABI (versions 1 and 2).
 *
 * ag_gemm does not own a GEMM: it calls a plugin, once per band of rows (or, through the
 * optional tile-wait entry, run() for its own rows and one tile-wait launch per peer source). A
 * plugin is a shared library libxccl-gemm-<name>.so that exports XCCL_GEMM_PLUGIN_SYMBOL_V2 (or,
 * built for version 1, XCCL_GEMM_PLUGIN_SYMBOL_V1), of type xcclGemmPlugin_v2_t (the same
 * layout as xcclGemmPlugin_v1_t); a caller may also hand xccl such a
 * struct directly. Like NCCL's net and tuner plugins the struct is versioned: its first two fields
 * (abi_version, struct_size) never move in any version, so a loader reads them first and refuses an
 * older or newer plugin with a message instead of calling through a pointer it misreads.
 *
 * The problem (same for every version 1 call):
 *   C[m, n] = (A[m, k] @ B[n, k]^T) * a_scale[m] (per row) * b_scale[n] (per column)
 *   A row-major with row stride lda (elements), B row-major [n, k] with row stride ldb (that
 *   is, each output column reads one contiguous row of B: the weight layout of a linear
 *   layer), C row-major with row stride ldc. Products are accumulated in fp32; the scales,
 *   when present, multiply the fp32 sum, which is then rounded (to nearest, ties to even) to
 *   C's type.
 * Input types: xcclBfloat16 or xcclFloat16 (a_type == b_type), or xcclFloat8e4m3 (OCP e4m3:
 * bias 7, no infinities, S.1111.111 is NaN, largest finite 448) with per-token A scales and
 * per-channel B scales in fp32 (xcclGemmScalePtpc). Output: xcclBfloat16 or xcclFloat16.
 *
 * Block scales (xcclGemmScaleBlock128, ABI version 2; DeepSeek-V3's format, as vLLM's
 * column-major per_token_group_quant_fp8 and DeepGEMM hand it over): e4m3 A and B; K is cut
 * into KB = ceil(k / 128) blocks of 128 (the last one may be shorter); A's scales are fp32
 * [KB][a_scale_ld], row i's scale for K block kb at a_scale[kb * a_scale_ld + i] (m contiguous,
 * a_scale_ld >= m); B's are fp32 [ceil(n / 128)][KB] row-major (DeepSeek's weight_scale_inv),
 * column j's for K block kb at b_scale[(j / 128) * KB + kb]. Then
 *   C[i][j] = sum over kb of (P(i, j, kb) * a_scale[kb * a_scale_ld + i]) * b_scale[(j / 128) *
 *             KB + kb],  P(i, j, kb) = sum over l in [128 kb, min(k, 128 kb + 128)) of
 *             A[i][l] * B[j][l],
 * every partial sum P in fp32 in l order, each product by a scale and each sum over kb in fp32.
 * For example with k = 300 (KB = 3) and a_scale_ld = 512, row 7's scale for K elements 256-299
 * is a_scale[2 * 512 + 7] and column 130's is b_scale[1 * 3 + 2]. A band [row_begin, row_end)
 * reads its rows' scales at a_scale[kb * a_scale_ld + i] for i in the band (never at
 * a_scale + row_begin, the ptpc arithmetic).
 *
 * Device-synchronising calls. Where ranks share a GPU in one process, a call that waits for the
 * whole device (cudaFree/hipFree, cudaFreeHost, cudaMalloc, pinned allocation or registration,
 * cudaDeviceSynchronize, a synchronous copy or one from pageable host memory, work on the legacy
 * stream, a kernel's first launch under lazy module loading) can wait for a peer's xccl kernel that
 * waits for this rank: a stall until the deadline. So run() and run_tile_wait() only enqueue
 * stream-ordered work and make no such call. init(), supports() and finalize() may: xccl calls
 * init and supports inside xcclAgGemmCreate before its rank agreement (no peer is past it), and
 * finalize where no peer can be waiting for this rank (docs/ARCHITECTURE.md, "Device-synchronising
 * calls").
 *
 * C99-clean; needs no GPU header (streams are opaque pointers, as in xccl.h).
 */
#ifndef XCCL_GEMM_H_
#define XCCL_GEMM_H_

#include <stddef.h>
#include <stdint.h>

#include "xccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XCCL_GEMM_PLUGIN_ABI_V1 1u
/* Version 2: the same entries, and problems may carry xcclGemmScaleBlock128 and a_scale_ld. A
 * version 1 plugin still loads and serves the other modes; xccl refuses it for block scales. */
#define XCCL_GEMM_PLUGIN_ABI_V2 2u
/* The symbols a plugin library exports (the loader takes the newest it finds; a plugin may
 * export both, for older xccl builds), and the library name the loader builds from a name. */
#define XCCL_GEMM_PLUGIN_SYMBOL_V1 "xcclGemmPlugin_v1"
#define XCCL_GEMM_PLUGIN_SYMBOL_V2 "xcclGemmPlugin_v2"
#define XCCL_GEMM_PLUGIN_LIB_PREFIX "libxccl-gemm-"
#define XCCL_GEMM_PLUGIN_LIB_SUFFIX ".so"

typedef enum {
  xcclGemmScaleNone = 0,     /* C = A @ B^T; a_scale and b_scale are ignored (may be NULL) */
  xcclGemmScalePtpc = 1,     /* per-token a_scale[m] and per-channel b_scale[n], fp32 */
  xcclGemmScaleBlock128 = 2, /* ABI version 2: 1x128 A and 128x128 B block scales (above) */
  /* Not a mode. Makes every int a value of the enum in C++, so that a plugin may check a bad
   * value (xcclDataTypeMaxEnum in xccl.h says why). */
  xcclGemmScaleModeMaxEnum = 0x7fffffff
} xcclGemmScaleMode_t;

/* One GEMM. In a supports() query only the shape, types, scale mode and strides are read;
 * the pointers may be NULL there. In run() every pointer refers to memory the plugin can read
 * (device memory on GPU platforms, host memory on the host platform). */
typedef struct {
  int64_t m, n, k;
  xcclDataType_t a_type, b_type, c_type;
  xcclGemmScaleMode_t scale_mode;
  int64_t lda, ldb, ldc; /* row strides in elements: lda >= k, ldb >= k, ldc >= n */
  const void* a;         /* [m][lda] */
  const void* b;         /* [n][ldb] */
  void* c;               /* [m][ldc] */
  const float* a_scale;  /* ptpc: [m]; blockscale: [ceil(k/128)][a_scale_ld] */
  const float* b_scale;  /* ptpc: [n]; blockscale: [ceil(n/128)][ceil(k/128)] */
  /* Version 2 (after every version 1 field, so a version 1 plugin reads the same struct): */
  int64_t a_scale_ld; /* blockscale: elements between K blocks of a_scale, >= m; else 0 */
} xcclGemmProblem;

/* The rows of C one run() call computes: [row_begin, row_end), 0 <= row_begin <= row_end <= m,
 * from rows [row_begin, row_end) of A and of a_scale and all of B. Rows outside the band are
 * neither read (A) nor written (C), so bands may be computed as their inputs arrive; a band's
 * bytes must not depend on how C was cut into bands. */
typedef struct {
  int64_t row_begin;
  int64_t row_end;
} xcclGemmBand;

/* Arguments of the optional tile-wait entry: one launch covers rows [row_begin, row_end) of C
 * cut into num_bands bands. Band i < num_bands - 1 covers rows [row_begin + i*band_rows,
 * row_begin + (i+1)*band_rows); the last band covers the rest, up to row_end (it may be shorter
 * or longer than band_rows: ag_gemm's chunk rule gives the remainder to the last band). Band
 * i's inputs are ready once flags[i] has reached *epoch, compared modulo 2^32
 * ((int32_t)(flags[i] - *epoch) >= 0). Each output tile, before reading A, waits on the device
 * for the flags of every band its rows overlap. The epoch is read on the device when the kernel
 * runs, never passed by value, so a captured graph replays with the current epoch. flags and
 * epoch are device memory written by other agents (DMA queues, peers): read them with
 * volatile/acquire loads. A wait gives up after timeout_ns (0: the plugin's own limit) and the
 * tile is left unwritten; the op finds the missing peer through its own deadline-bounded waits.
 * Host plugins leave run_tile_wait NULL; the op then waits per band itself and calls run(). */
typedef struct {
  int64_t row_begin;
  int64_t row_end;
  int64_t band_rows;
  int32_t num_bands;
  const volatile uint32_t* flags; /* [num_bands] */
  const volatile uint32_t* epoch; /* one word */
  uint64_t timeout_ns;
} xcclGemmTileWait;

/* Every entry returns xcclSuccess or a failure code; none may be called concurrently on one
 * ctx unless the plugin says otherwise. */
typedef struct xcclGemmPlugin_v1 {
  /* Never move, in any version: the loader reads these two before anything else. */
  uint32_t abi_version; /* XCCL_GEMM_PLUGIN_ABI_V1, or _V2 under XCCL_GEMM_PLUGIN_SYMBOL_V2 */
  size_t struct_size;   /* sizeof(xcclGemmPlugin_v1_t) as the plugin was built */

  const char* name; /* short, e.g. "reference"; shown in logs and errors */

  /* Creates the plugin's state for one device (the GPU ordinal; 0 on the host platform). On
   * GPUs init, or supports() once it knows the problem, should allocate what run() needs and load
   * every kernel run() will launch (see "Device-synchronising calls" above). */
  xcclResult_t (*init)(void** ctx, int device);
  xcclResult_t (*finalize)(void* ctx);

  /* xcclSuccess: run() handles this problem. xcclInvalidArgument: it does not (the caller may
   * try another plugin). Anything else: the query itself failed. */
  xcclResult_t (*supports)(void* ctx, const xcclGemmProblem* problem);

  /* Computes one band of C, enqueued on `stream` (cudaStream_t/hipStream_t; NULL and
   * synchronous on the host platform). */
  xcclResult_t (*run)(void* ctx, const xcclGemmProblem* problem, const xcclGemmBand* band,
                      void* stream);

  /* Optional (NULL if absent): rows [wait->row_begin, wait->row_end) in one launch whose
   * tiles each wait for their band's flag; see xcclGemmTileWait. */
  xcclResult_t (*run_tile_wait)(void* ctx, const xcclGemmProblem* problem,
                                const xcclGemmTileWait* wait, void* stream);
} xcclGemmPlugin_v1_t;

/* Version 2 keeps version 1's entries (its problems may carry block scales). */
typedef xcclGemmPlugin_v1_t xcclGemmPlugin_v2_t;

#ifdef __cplusplus
}
#endif

#endif /* XCCL_GEMM_H_ */
