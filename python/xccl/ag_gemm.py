"""AgGemmOp: the fused all-gather + GEMM (xcclAgGemm*) on tensors.

Every rank holds A_r [m][k] and B_r [n][k] and gets C = concat_s(A_s) @ B_r^T,
[size * padded_m(m)][n], source s's rows from s * padded_m (padding rows zero)."""

import ctypes
from collections import namedtuple

from . import _gemm_args, _streams
from ._dtypes import DataType
from ._errors import check
from ._library import lib, platform
from ._views import view


LocalRows = namedtuple("LocalRows", "rows scales tiles")
LocalRows.__doc__ = """This rank's receive slot for a call of m rows: rows [padded_m][k]; scales
(fp8) [padded_m] (ptpc) or every tile's floats in order (blockscale), else None; tiles
(blockscale) a list of (row_begin, row_end, view [KB][row_end - row_begin]), else []."""


def _ceil_div(a, b):
    return -(-a // b)


class AgGemmOp:
    """xcclAgGemmCreateScaled on `comm`: C = all_gather(A) @ B^T for any m up to m_max.

    dtype: the inputs' type (bfloat16, float16 or float8_e4m3); out_dtype: C's (default bf16
    for fp8, else dtype); scale: None (bf16/fp16; fp8 means "ptpc"), "ptpc" or "block128";
    mode: "fused" or "split"; chunks: bands per source (0: the default rule); plugin: a GEMM
    plugin's name ("reference", "cublaslt") or path, None for XCCL_GEMM_PLUGIN. A context
    manager; every call is collective over comm's ranks with the same m."""

    def __init__(self, comm, n, k, m_max, dtype, *, out_dtype=None, scale=None, mode="fused",
                 chunks=0, plugin=None):
        self.dtype, self.out_dtype, self.scale = _gemm_args.check_create(
            "ag_gemm", n, k, m_max, chunks, dtype, out_dtype, scale, mode, plugin)
        self.comm, self.n, self.k, self.m_max, self.mode = comm, n, k, m_max, mode
        self._kb = _ceil_div(k, 128)
        handle = ctypes.c_void_p()
        comm_handle = comm._live_handle("AgGemmOp")
        check("xcclAgGemmCreateScaled",
              lib.xcclAgGemmCreateScaled(comm_handle, n, k, m_max, int(self.dtype),
                                         int(self.out_dtype), _gemm_args.SCALES[scale], _gemm_args.MODES[mode],
                                         chunks, plugin.encode() if plugin else None, None,
                                         ctypes.byref(handle)), comm_handle)
        self._handle = handle.value
        self._closed = False

    def _op(self, call):
        if self._closed:
            raise ValueError(f"xccl: {call} on an AgGemmOp already destroyed")
        return self._handle

    def destroy(self):
        if not self._closed:
            self._closed = True
            check("xcclAgGemmDestroy", lib.xcclAgGemmDestroy(self._handle))

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.destroy()
        return False

    def _check_m(self, m):
        if not isinstance(m, int) or isinstance(m, bool):
            raise TypeError(f"xccl: m must be an int, not {type(m).__name__}")
        if not 1 <= m <= self.m_max:
            raise ValueError(f"xccl: m must be in 1..m_max ({self.m_max}), not {m}")

    def padded_m(self, m):
        """The rows each source's receive slot has for a call of m rows (m rounded up to 256)."""
        self._check_m(m)
        out = ctypes.c_int64()
        check("xcclAgGemmPaddedM", lib.xcclAgGemmPaddedM(self._op("padded_m"), m,
                                                         ctypes.byref(out)))
        return out.value

    def chunks(self, m):
        """The bands per source a fused call of m rows uses."""
        self._check_m(m)
        out = ctypes.c_int()
        check("xcclAgGemmChunks", lib.xcclAgGemmChunks(self._op("chunks"), m, ctypes.byref(out)))
        return out.value

    def self_test(self, m=None, stream=None):
        """The collective check of the gather path for m rows (default m_max); raises
        XcclError naming a wrong receive slot."""
        m = self.m_max if m is None else m
        self._check_m(m)
        handle_stream = _streams.resolve(stream, platform, (), self.comm.device)
        check("xcclAgGemmSelfTest", lib.xcclAgGemmSelfTest(self._op("self_test"), m,
                                                           handle_stream))

    def _view(self, ptr, shape, dtype):
        return view(platform, ptr, shape, dtype, self.comm.device, self)

    def local_rows(self, m):
        """LocalRows viewing this rank's receive slot (and scales) for a call of m rows: quantise
        into them and pass them to the op, which then skips its copy."""
        self._check_m(m)
        op = self._op("local_rows")
        padded = self.padded_m(m)
        rows, scales = ctypes.c_void_p(), ctypes.POINTER(ctypes.c_float)()
        check("xcclAgGemmLocalRows", lib.xcclAgGemmLocalRows(op, m, ctypes.byref(rows),
                                                             ctypes.byref(scales)))
        rows_view = self._view(rows.value, (padded, self.k), self.dtype)
        scale_ptr = ctypes.cast(scales, ctypes.c_void_p).value
        if self.scale is None:
            return LocalRows(rows_view, None, [])
        if self.scale == "ptpc":
            return LocalRows(rows_view, self._view(scale_ptr, (padded,), DataType.float32), [])
        tiles = []
        count = ctypes.c_int()
        index = 0
        while True:
            begin, end = ctypes.c_int64(), ctypes.c_int64()
            tile_ptr = ctypes.POINTER(ctypes.c_float)()
            check("xcclAgGemmLocalScaleTile",
                  lib.xcclAgGemmLocalScaleTile(op, m, index, ctypes.byref(count),
                                               ctypes.byref(begin), ctypes.byref(end),
                                               ctypes.byref(tile_ptr)))
            address = ctypes.cast(tile_ptr, ctypes.c_void_p).value
            tiles.append((begin.value, end.value,
                          self._view(address, (self._kb, end.value - begin.value),
                                     DataType.float32)))
            index += 1
            if index >= count.value:
                break
        all_scales = self._view(scale_ptr, (self._kb * padded,), DataType.float32)
        return LocalRows(rows_view, all_scales, tiles)

    def _operand(self, x, what, shape, dtype, writable=False):
        return _gemm_args.operand(self.comm, x, what, shape, dtype, writable)

    def _a_scale_shape(self, a_info, a_scale, m, shape):
        """The shape a blockscale a_scale must have: [KB][m], or, where a and a_scale are
        local_rows' own rows and scales, their tiles' [KB * padded_m]."""
        info = self.comm.check_tensor(a_scale, "a_scale")
        if info.shape == shape:
            return shape
        rows, scales = ctypes.c_void_p(), ctypes.POINTER(ctypes.c_float)()
        check("xcclAgGemmLocalRows", lib.xcclAgGemmLocalRows(self._handle, m, ctypes.byref(rows),
                                                             ctypes.byref(scales)))
        if a_info.ptr == rows.value and info.ptr == ctypes.cast(scales, ctypes.c_void_p).value:
            return (self._kb * self.padded_m(m),)
        return shape

    def __call__(self, a, b, a_scale=None, b_scale=None, out=None, stream=None):
        """C for this call, into `out` when given, else a view of the op's own buffer (valid
        until the next call). a [m][k], b [n][k]; fp8: a_scale and b_scale in the op's format
        (ptpc [m] and [n]; block128 [ceil(k/128)][m] and [ceil(n/128)][ceil(k/128)]). With
        local_rows' rows[:m] as a, pass its scales (ptpc: scales[:m]; block128: scales whole)."""
        op = self._op("AgGemmOp call")
        first = self.comm.check_tensor(a, "a")
        if len(first.shape) != 2:
            raise ValueError(f"xccl: a must be 2-D [m][k], not of shape {list(first.shape)}")
        m = first.shape[0]
        if not 1 <= m <= self.m_max:
            raise ValueError(f"xccl: a has {m} rows; the op takes 1..m_max ({self.m_max})")
        infos = [self._operand(a, "a", (m, self.k), self.dtype),
                 self._operand(b, "b", (self.n, self.k), self.dtype)]
        scale_ptrs = [None, None]
        if self.scale is None:
            for what, s in (("a_scale", a_scale), ("b_scale", b_scale)):
                if s is not None:
                    raise ValueError(f"xccl: {what} given, but {self.dtype.name} inputs have no "
                                     "scales")
        else:
            if self.scale == "ptpc":
                shapes = ((m,), (self.n,))
            else:
                shapes = ((self._kb, m), (_ceil_div(self.n, 128), self._kb))
            for i, (what, s, shape) in enumerate((("a_scale", a_scale, shapes[0]),
                                                  ("b_scale", b_scale, shapes[1]))):
                if s is None:
                    raise ValueError(f"xccl: {what} is required for {self.scale} fp8 inputs")
                if i == 0 and self.scale == "block128":
                    shape = self._a_scale_shape(first, s, m, shape)
                info = self._operand(s, what, shape, DataType.float32)
                scale_ptrs[i] = info.ptr
                infos.append(info)
        padded = self.padded_m(m)
        out_ptr = None
        if out is not None:
            info = self._operand(out, "out", (self.comm.size * padded, self.n), self.out_dtype,
                                 writable=True)
            out_ptr = info.ptr
            infos.append(info)
        result = ctypes.c_void_p()
        handle_stream = _streams.resolve(stream, platform, infos, self.comm.device)
        check("xcclAgGemmRun",
              lib.xcclAgGemmRun(op, infos[0].ptr, scale_ptrs[0], infos[1].ptr, scale_ptrs[1], m,
                                out_ptr, ctypes.byref(result), handle_stream))
        if out is not None:
            return out
        return self._view(result.value, (self.comm.size * padded, self.n), self.out_dtype)
