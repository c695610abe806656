"""xccl's data types and how the tensors of numpy, torch, DLPack and the CUDA array interface
name them."""

import enum


class DataType(enum.IntEnum):
    """xcclDataType_t (xccl.h), numbered as ncclDataType_t."""
    int8 = 0
    uint8 = 1
    int32 = 2
    uint32 = 3
    int64 = 4
    uint64 = 5
    float16 = 6
    float32 = 7
    float64 = 8
    bfloat16 = 9
    float8_e4m3 = 10
    float8_e5m2 = 11


_SIZES = {DataType.int8: 1, DataType.uint8: 1, DataType.int32: 4, DataType.uint32: 4,
          DataType.int64: 8, DataType.uint64: 8, DataType.float16: 2, DataType.float32: 4,
          DataType.float64: 8, DataType.bfloat16: 2, DataType.float8_e4m3: 1,
          DataType.float8_e5m2: 1}

# Names a caller may pass for a type: the enum's, numpy's and torch's spellings.
_ALIASES = {"int8": DataType.int8, "uint8": DataType.uint8, "int32": DataType.int32,
            "uint32": DataType.uint32, "int64": DataType.int64, "uint64": DataType.uint64,
            "float16": DataType.float16, "half": DataType.float16, "float32": DataType.float32,
            "float": DataType.float32, "float64": DataType.float64, "double": DataType.float64,
            "bfloat16": DataType.bfloat16, "bf16": DataType.bfloat16,
            "float8_e4m3": DataType.float8_e4m3, "float8_e4m3fn": DataType.float8_e4m3,
            "fp8": DataType.float8_e4m3, "e4m3": DataType.float8_e4m3,
            "float8_e5m2": DataType.float8_e5m2, "e5m2": DataType.float8_e5m2}

# The array interface's type strings (numpy, __cuda_array_interface__), without byte order.
_TYPESTR = {"i1": DataType.int8, "u1": DataType.uint8, "i4": DataType.int32,
            "u4": DataType.uint32, "i8": DataType.int64, "u8": DataType.uint64,
            "f2": DataType.float16, "f4": DataType.float32, "f8": DataType.float64}

# DLPack's (type code, bits): 0 int, 1 uint, 2 float, 4 bfloat; DLPack 1.0's float8 codes.
_DLPACK = {(0, 8): DataType.int8, (1, 8): DataType.uint8, (0, 32): DataType.int32,
           (1, 32): DataType.uint32, (0, 64): DataType.int64, (1, 64): DataType.uint64,
           (2, 16): DataType.float16, (2, 32): DataType.float32, (2, 64): DataType.float64,
           (4, 16): DataType.bfloat16, (9, 8): DataType.float8_e4m3,
           (11, 8): DataType.float8_e5m2}


def size_of(dtype):
    return _SIZES[dtype]


def resolve(dtype):
    """A DataType from a DataType, an int, a name, a numpy dtype or a torch dtype."""
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return DataType(dtype)
    name = str(dtype)
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name in _ALIASES:
        return _ALIASES[name]
    raise ValueError(f"xccl: unknown data type {dtype!r}; one of "
                     f"{', '.join(t.name for t in DataType)}")


def from_typestr(typestr):
    """The DataType of an array-interface type string ('<f4'), or None (bool, complex, ...)."""
    return _TYPESTR.get(typestr[1:]) if len(typestr) >= 3 else None


def from_dlpack(code, bits):
    return _DLPACK.get((code, bits))


def from_torch(torch_dtype):
    name = str(torch_dtype)[len("torch."):]
    return _ALIASES.get(name)
