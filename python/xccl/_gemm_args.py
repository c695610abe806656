"""The argument checks the GEMM fused ops (AgGemmOp, GemmRsOp) share: create's shape, types,
scale, mode and plugin, and an operand's shape and type."""

from . import _dtypes
from ._dtypes import DataType

SCALES = {None: 0, "default": 0, "ptpc": 1, "block128": 2, "blockscale": 2}
MODES = {"fused": 0, "split": 1}
FP8 = (DataType.float8_e4m3,)
_INPUTS = (DataType.bfloat16, DataType.float16, DataType.float8_e4m3)


def check_create(op, n, k, m_max, chunks, dtype, out_dtype, scale, mode, plugin):
    """Returns (dtype, out_dtype, scale name or None) for op `op` ("ag_gemm", "gemm_rs"), or
    raises TypeError/ValueError naming the argument."""
    for name, value in (("n", n), ("k", k), ("m_max", m_max), ("chunks", chunks)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"xccl: {name} must be an int, not {type(value).__name__}")
    dtype = _dtypes.resolve(dtype)
    if dtype not in _INPUTS:
        raise ValueError(f"xccl: {op} takes bfloat16, float16 or float8_e4m3 inputs, "
                         f"not {dtype.name}")
    default_out = DataType.bfloat16 if dtype in FP8 else dtype
    out_dtype = _dtypes.resolve(out_dtype) if out_dtype is not None else default_out
    if scale not in SCALES:
        raise ValueError(f"xccl: scale must be one of None, 'ptpc', 'block128', not {scale!r}")
    if mode not in MODES:
        raise ValueError(f"xccl: mode must be 'fused' or 'split', not {mode!r}")
    if plugin is not None and not isinstance(plugin, str):
        raise TypeError("xccl: plugin must be a name or a path (str)")
    if dtype not in FP8 and SCALES[scale] != 0:
        raise ValueError(f"xccl: scale {scale!r} needs float8_e4m3 inputs, not {dtype.name}")
    scale_name = "block128" if SCALES[scale] == 2 else ("ptpc" if dtype in FP8 else None)
    return dtype, out_dtype, scale_name


def operand(comm, x, what, shape, dtype, writable=False):
    """comm.check_tensor(x) with the op's shape and element type (raw uint8 bits pass for the
    types numpy lacks)."""
    info = comm.check_tensor(x, what, writable=writable)
    if info.shape != tuple(shape):
        raise ValueError(f"xccl: {what} has shape {list(info.shape)}, the op needs {list(shape)}")
    raw_bits = info.dtype in (None, DataType.uint8) and dtype in (
        DataType.bfloat16, DataType.float8_e4m3, DataType.float8_e5m2)
    if info.itemsize != _dtypes.size_of(dtype) or (info.dtype != dtype and not raw_bits):
        got = info.dtype.name if info.dtype is not None else f"{info.itemsize}-byte elements"
        raise ValueError(f"xccl: {what} holds {got}, the op needs {dtype.name}")
    return info
