"""GemmRsOp: GEMM + reduce-scatter (xcclGemmRs*) on tensors, the row-parallel half.

Every rank holds A_r [m][k] (its shard of the inner dimension) and B_r [n][k] and receives rows
[rank * m / size, (rank + 1) * m / size) of C = sum_r A_r @ B_r^T, [m][n]; m a multiple of size."""

import ctypes

from . import _gemm_args, _streams
from ._dtypes import DataType
from ._errors import check
from ._library import lib, platform



def _ceil_div(a, b):
    return -(-a // b)


class GemmRsOp:
    """xcclGemmRsCreate on `comm`: this rank's rows of sum_r A_r @ B_r^T for any m up to m_max
    (a multiple of comm.size).

    dtype: the inputs' type (bfloat16, float16 or float8_e4m3); out_dtype: C's (default bf16 for
    fp8, else dtype); scale: None (bf16/fp16; fp8 means "ptpc"), "ptpc" or "block128"; mode:
    "fused" or "split"; chunks: fused mode's chunks per owner's block (0: the default); plugin: a
    GEMM plugin's name ("reference", "cublaslt") or path, None for XCCL_GEMM_PLUGIN. A context
    manager; every call is collective over comm's ranks with the same m."""

    def __init__(self, comm, n, k, m_max, dtype, *, out_dtype=None, scale=None, mode="fused",
                 chunks=0, plugin=None):
        self.dtype, self.out_dtype, self.scale = _gemm_args.check_create(
            "gemm_rs", n, k, m_max, chunks, dtype, out_dtype, scale, mode, plugin)
        self.comm, self.n, self.k, self.m_max, self.mode = comm, n, k, m_max, mode
        self._kb = _ceil_div(k, 128)
        handle = ctypes.c_void_p()
        comm_handle = comm._live_handle("GemmRsOp")
        check("xcclGemmRsCreate",
              lib.xcclGemmRsCreate(comm_handle, n, k, m_max, int(self.dtype), int(self.out_dtype),
                                   _gemm_args.SCALES[scale], _gemm_args.MODES[mode], chunks,
                                   plugin.encode() if plugin else None, None,
                                   ctypes.byref(handle)), comm_handle)
        self._handle = handle.value
        self._closed = False

    def destroy(self):
        if not self._closed:
            self._closed = True
            check("xcclGemmRsDestroy", lib.xcclGemmRsDestroy(self._handle))

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.destroy()
        return False

    def self_test(self, m=None, stream=None):
        """The collective check of the exchange for m rows (default m_max); raises XcclError
        naming this rank's first wrong element."""
        m = self.m_max if m is None else m
        if not isinstance(m, int) or isinstance(m, bool):
            raise TypeError(f"xccl: m must be an int, not {type(m).__name__}")
        if self._closed:
            raise ValueError("xccl: self_test on a GemmRsOp already destroyed")
        handle_stream = _streams.resolve(stream, platform, (), self.comm.device)
        check("xcclGemmRsSelfTest", lib.xcclGemmRsSelfTest(self._handle, m, handle_stream))

    def _operand(self, x, what, shape, dtype, writable=False):
        return _gemm_args.operand(self.comm, x, what, shape, dtype, writable)

    def _new_out(self, like, rows):
        """An output like `like`'s kind: a numpy array (bf16 as its uint16 bits) or a torch
        tensor on like's device."""
        if type(like).__module__.split(".")[0] == "torch":
            import torch
            dtype = torch.bfloat16 if self.out_dtype == DataType.bfloat16 else torch.float16
            return torch.empty((rows, self.n), dtype=dtype, device=like.device)
        import numpy as np
        return np.empty((rows, self.n), np.float16 if self.out_dtype == DataType.float16
                        else np.uint16)

    def __call__(self, a, b, a_scale=None, b_scale=None, out=None, stream=None):
        """This rank's rows of C, [m / size][n], into `out` when given, else into a new array
        or tensor like `a`. a [m][k], b [n][k]; fp8: a_scale and b_scale (ptpc [m] and [n];
        block128 [ceil(k/128)][m] and [ceil(n/128)][ceil(k/128)])."""
        if self._closed:
            raise ValueError("xccl: GemmRsOp call on an op already destroyed")
        first = self.comm.check_tensor(a, "a")
        if len(first.shape) != 2:
            raise ValueError(f"xccl: a must be 2-D [m][k], not of shape {list(first.shape)}")
        m = first.shape[0]
        size = self.comm.size
        if not 1 <= m <= self.m_max or m % size != 0:
            raise ValueError(f"xccl: a has {m} rows; the op takes a multiple of {size} up to "
                             f"m_max ({self.m_max})")
        infos = [self._operand(a, "a", (m, self.k), self.dtype),
                 self._operand(b, "b", (self.n, self.k), self.dtype)]
        scale_ptrs = [None, None]
        if self.scale is None:
            for what, s in (("a_scale", a_scale), ("b_scale", b_scale)):
                if s is not None:
                    raise ValueError(f"xccl: {what} given, but {self.dtype.name} inputs have no "
                                     "scales")
        else:
            shapes = (((m,), (self.n,)) if self.scale == "ptpc" else
                      ((self._kb, m), (_ceil_div(self.n, 128), self._kb)))
            for i, (what, s) in enumerate((("a_scale", a_scale), ("b_scale", b_scale))):
                if s is None:
                    raise ValueError(f"xccl: {what} is required for {self.scale} fp8 inputs")
                info = self._operand(s, what, shapes[i], DataType.float32)
                scale_ptrs[i] = info.ptr
                infos.append(info)
        if out is None:
            out = self._new_out(a, m // size)
        infos.append(self._operand(out, "out", (m // size, self.n), self.out_dtype,
                                   writable=True))
        handle_stream = _streams.resolve(stream, platform, infos, self.comm.device)
        check("xcclGemmRsRun",
              lib.xcclGemmRsRun(self._handle, infos[0].ptr, scale_ptrs[0], infos[1].ptr,
                                scale_ptrs[1], m, infos[-1].ptr, handle_stream))
        return out
