"""Tensors that view memory the library owns (an op's output, its receive slot and scales):
numpy arrays on the host platform; torch tensors on a GPU when torch is loaded, else cupy
arrays, else an object offering the CUDA array interface. A view is valid while its op lives."""

import ctypes
import sys

from ._dtypes import DataType, size_of

_NUMPY_NAMES = {DataType.int8: "int8", DataType.uint8: "uint8", DataType.int32: "int32",
                DataType.uint32: "uint32", DataType.int64: "int64", DataType.uint64: "uint64",
                DataType.float16: "float16", DataType.float32: "float32",
                DataType.float64: "float64",
                # numpy has no bfloat16 or float8: their bits, as the unsigned type of their size
                DataType.bfloat16: "uint16", DataType.float8_e4m3: "uint8",
                DataType.float8_e5m2: "uint8"}
_TORCH_NAMES = {DataType.int8: "int8", DataType.uint8: "uint8", DataType.int32: "int32",
                DataType.uint32: "uint32", DataType.int64: "int64", DataType.uint64: "uint64",
                DataType.float16: "float16", DataType.float32: "float32",
                DataType.float64: "float64", DataType.bfloat16: "bfloat16",
                DataType.float8_e4m3: "float8_e4m3fn", DataType.float8_e5m2: "float8_e5m2"}
_RAW_TYPESTR = {1: "|u1", 2: "<u2", 4: "<u4", 8: "<u8"}


class DeviceArray:
    """Device memory described by the CUDA array interface (version 3, no stream to wait on)."""

    def __init__(self, ptr, shape, dtype, device_id, owner):
        self.dtype = dtype
        self.device_id = device_id
        self._owner = owner  # the op whose memory this is: kept alive with the view
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": _RAW_TYPESTR[size_of(dtype)],
            "data": (ptr, False), "strides": None, "version": 3, "stream": None}


def numpy_dtype(dtype):
    import numpy
    return numpy.dtype(_NUMPY_NAMES[dtype])


def torch_dtype(dtype):
    import torch
    return getattr(torch, _TORCH_NAMES[dtype])


def host_view(ptr, shape, dtype):
    import numpy
    count = 1
    for extent in shape:
        count *= extent
    if count == 0:
        return numpy.empty(shape, numpy_dtype(dtype))
    raw = (ctypes.c_uint8 * (count * size_of(dtype))).from_address(ptr)
    return numpy.frombuffer(raw, dtype=numpy_dtype(dtype)).reshape(shape)


def device_view(ptr, shape, dtype, device_id, owner):
    raw = DeviceArray(ptr, shape, dtype, device_id, owner)
    if "torch" in sys.modules:
        import torch
        t = torch.as_tensor(raw, device=torch.device("cuda", device_id))
        return t.view(torch_dtype(dtype))
    if "cupy" in sys.modules:
        import cupy
        with cupy.cuda.Device(device_id):
            return cupy.asarray(raw)
    return raw


def view(platform, ptr, shape, dtype, device_id, owner):
    if platform == "host":
        return host_view(ptr, shape, dtype)
    return device_view(ptr, shape, dtype, device_id, owner)
