"""What the binding needs to know of a caller's tensor: its address, bytes, shape, element type,
whether it is dense, and where it lives. Read from torch tensors directly, else from the CUDA
array interface, the numpy array interface, DLPack or the buffer protocol, in that order."""

import ctypes
from dataclasses import dataclass
from typing import Optional, Tuple

from . import _dtypes
from ._dtypes import DataType


@dataclass
class TensorInfo:
    ptr: int
    nbytes: int
    shape: Tuple[int, ...]
    itemsize: int
    dtype: Optional[DataType]  # None where the type has no xccl equivalent (bool, complex, ...)
    contiguous: bool  # row-major dense
    device: str  # "cpu" or "gpu"
    device_id: int
    framework: str  # "torch", "cupy", "cuda_array_interface", "dlpack", "numpy", "buffer"
    readonly: bool = False


def _dense(shape, strides, itemsize):
    """Whether byte strides describe a row-major dense layout (dims of size 1 may stride any)."""
    if strides is None:
        return True
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def _count(shape):
    n = 1
    for extent in shape:
        n *= extent
    return n


_TORCH_TYPES = {}  # torch dtype -> DataType (or None), filled on first sight


def _from_torch(x):
    torch_dtype = x.dtype
    try:
        dtype = _TORCH_TYPES[torch_dtype]
    except KeyError:
        dtype = _TORCH_TYPES.setdefault(torch_dtype, _dtypes.from_torch(torch_dtype))
    itemsize = x.element_size()
    device_id = x.get_device()  # -1 for host memory
    return TensorInfo(ptr=x.data_ptr(), nbytes=x.numel() * itemsize, shape=tuple(x.shape),
                      itemsize=itemsize, dtype=dtype, contiguous=x.is_contiguous(),
                      device="gpu" if device_id >= 0 else "cpu", device_id=device_id,
                      framework="torch")


def _from_array_interface(d, device, device_id, framework):
    shape = tuple(d["shape"])
    typestr = d["typestr"]
    itemsize = int(typestr[2:])
    ptr, readonly = d["data"]
    strides = d.get("strides")
    offset = d.get("offset", 0) if device == "cpu" else 0
    return TensorInfo(ptr=(ptr or 0) + offset, nbytes=_count(shape) * itemsize, shape=shape,
                      itemsize=itemsize, dtype=_dtypes.from_typestr(typestr),
                      contiguous=_dense(shape, strides, itemsize), device=device,
                      device_id=device_id, framework=framework, readonly=bool(readonly))


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM, _DL_ROCM_HOST = 1, 2, 3, 10, 11


def _from_dlpack(x):
    capsule = x.__dlpack__()
    # A DLManagedTensor begins with its DLTensor. The capsule stays unconsumed: its destructor
    # hands the tensor back; `x` keeps the memory alive meanwhile.
    t = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    strides = None if not t.strides else tuple(t.strides[i] * itemsize for i in range(t.ndim))
    gpu = t.device.device_type in (_DL_CUDA, _DL_ROCM)
    dtype = _dtypes.from_dlpack(t.dtype.code, t.dtype.bits) if t.dtype.lanes == 1 else None
    return TensorInfo(ptr=(t.data or 0) + t.byte_offset, nbytes=_count(shape) * itemsize,
                      shape=shape, itemsize=itemsize, dtype=dtype,
                      contiguous=_dense(shape, strides, itemsize),
                      device="gpu" if gpu else "cpu", device_id=t.device.device_id if gpu else -1,
                      framework="dlpack")


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]

# struct-module format letters by (kind, size), for buffer-protocol objects.
_FORMATS = {"b": DataType.int8, "B": DataType.uint8, "e": DataType.float16,
            "f": DataType.float32, "d": DataType.float64}
_INTEGERS = {(True, 1): DataType.int8, (False, 1): DataType.uint8, (True, 4): DataType.int32,
             (False, 4): DataType.uint32, (True, 8): DataType.int64, (False, 8): DataType.uint64}


def _from_buffer(x):
    view = memoryview(x)
    fmt = view.format.lstrip("@=<>!")
    dtype = _FORMATS.get(fmt)
    if dtype is None and fmt in "bBhHiIlLqQ" and len(fmt) == 1:
        dtype = _INTEGERS.get((fmt.islower(), view.itemsize))
    buffer = _PyBuffer()
    _get_buffer(x, ctypes.byref(buffer), 0)  # PyBUF_SIMPLE: the address only
    try:
        ptr = buffer.buf or 0
    finally:
        _release_buffer(ctypes.byref(buffer))
    return TensorInfo(ptr=ptr, nbytes=view.nbytes, shape=tuple(view.shape),
                      itemsize=view.itemsize, dtype=dtype, contiguous=view.c_contiguous,
                      device="cpu", device_id=-1, framework="buffer", readonly=view.readonly)


def describe(x, what):
    """TensorInfo of `x`; TypeError naming `what` if it offers no interface the binding reads."""
    if type(x).__module__.startswith("torch") and hasattr(x, "data_ptr"):
        return _from_torch(x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        framework = "cupy" if type(x).__module__.startswith("cupy") else "cuda_array_interface"
        device_id = -1
        if hasattr(x, "device") and hasattr(x.device, "id"):
            device_id = x.device.id
        return _from_array_interface(cai, "gpu", device_id, framework)
    ai = getattr(x, "__array_interface__", None)
    if ai is not None:
        return _from_array_interface(ai, "cpu", -1, "numpy")
    if hasattr(x, "__dlpack__"):
        try:
            return _from_dlpack(x)
        except (TypeError, BufferError, ValueError):
            pass  # a producer that refuses: the buffer protocol may still serve
    try:
        return _from_buffer(x)
    except TypeError:
        pass
    raise TypeError(f"xccl: {what} is a {type(x).__name__}, which offers neither DLPack, the CUDA "
                    "array interface nor the buffer protocol")
