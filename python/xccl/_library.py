"""Finds and opens libxccl, and declares the C functions the binding calls.

Looked for, in order: the file XCCL_LIBRARY names; beside this package (what the build and
`pip install` put there); the prefix's lib folder of a CMake install
(<prefix>/lib/python3/dist-packages/xccl -> <prefix>/lib); the loader's search path.
"""

import ctypes
import os

_SONAME = "libxccl.so.0"
_here = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    named = os.environ.get("XCCL_LIBRARY")
    if named:
        return [named]
    return [
        os.path.join(_here, _SONAME),
        os.path.normpath(os.path.join(_here, "..", "..", "..", _SONAME)),
        _SONAME,
    ]


def _open():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            # RTLD_GLOBAL: the GEMM plugins it loads resolve nothing from it, but the NCCL shim
            # and a framework's own copy must see one libxccl in the process, not two.
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("xccl: cannot load libxccl; set XCCL_LIBRARY to its path. Tried: " +
                      "; ".join(tried))


lib, path = _open()

_c_int_p = ctypes.POINTER(ctypes.c_int)
_i64_p = ctypes.POINTER(ctypes.c_int64)
_vp = ctypes.c_void_p
_vpp = ctypes.POINTER(ctypes.c_void_p)
_fpp = ctypes.POINTER(ctypes.POINTER(ctypes.c_float))


class UniqueIdStruct(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class ConfigStruct(ctypes.Structure):
    """xcclConfig_t, version 100 (xccl.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("blocking", ctypes.c_int), ("timeoutMs", ctypes.c_int),
                ("commName", ctypes.c_char_p)]


# (name, restype, argtypes); every xcclResult_t is a C int.
_SIGNATURES = [
    ("xcclGetVersion", ctypes.c_int, [_c_int_p]),
    ("xcclGetPlatformName", ctypes.c_char_p, []),
    ("xcclGetUniqueId", ctypes.c_int, [ctypes.POINTER(UniqueIdStruct)]),
    ("xcclCommInitRank", ctypes.c_int, [_vpp, ctypes.c_int, UniqueIdStruct, ctypes.c_int]),
    ("xcclCommInitRankConfig", ctypes.c_int,
     [_vpp, ctypes.c_int, UniqueIdStruct, ctypes.c_int, ctypes.POINTER(ConfigStruct)]),
    ("xcclCommInitAll", ctypes.c_int, [_vpp, ctypes.c_int, _c_int_p]),
    ("xcclCommDestroy", ctypes.c_int, [_vp]),
    ("xcclCommAbort", ctypes.c_int, [_vp]),
    ("xcclCommGetAsyncError", ctypes.c_int, [_vp, _c_int_p]),
    ("xcclCommCount", ctypes.c_int, [_vp, _c_int_p]),
    ("xcclCommUserRank", ctypes.c_int, [_vp, _c_int_p]),
    ("xcclCommDevice", ctypes.c_int, [_vp, _c_int_p]),
    ("xcclGetErrorString", ctypes.c_char_p, [ctypes.c_int]),
    ("xcclGetLastError", ctypes.c_char_p, [_vp]),
    ("xcclAllGather", ctypes.c_int, [_vp, _vp, ctypes.c_size_t, ctypes.c_int, _vp, _vp]),
    ("xcclBarrier", ctypes.c_int, [_vp, _vp]),
    ("xcclReduceScatter", ctypes.c_int,
     [_vp, _vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _vp, _vp]),
    ("xcclAllReduce", ctypes.c_int,
     [_vp, _vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _vp, _vp]),
    ("xcclBroadcast", ctypes.c_int,
     [_vp, _vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _vp, _vp]),
    ("xcclAgGemmCreateScaled", ctypes.c_int,
     [_vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
      ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, _vp, _vpp]),
    ("xcclAgGemmPaddedM", ctypes.c_int, [_vp, ctypes.c_int64, _i64_p]),
    ("xcclAgGemmLocalRows", ctypes.c_int, [_vp, ctypes.c_int64, _vpp, _fpp]),
    ("xcclAgGemmLocalScaleTile", ctypes.c_int,
     [_vp, ctypes.c_int64, ctypes.c_int, _c_int_p, _i64_p, _i64_p, _fpp]),
    ("xcclAgGemmChunks", ctypes.c_int, [_vp, ctypes.c_int64, _c_int_p]),
    ("xcclAgGemmRun", ctypes.c_int,
     [_vp, _vp, _vp, _vp, _vp, ctypes.c_int64, _vp, _vpp, _vp]),
    ("xcclAgGemmSelfTest", ctypes.c_int, [_vp, ctypes.c_int64, _vp]),
    ("xcclAgGemmDestroy", ctypes.c_int, [_vp]),
    ("xcclGemmRsCreate", ctypes.c_int,
     [_vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
      ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, _vp, _vpp]),
    ("xcclGemmRsRun", ctypes.c_int, [_vp, _vp, _vp, _vp, _vp, ctypes.c_int64, _vp, _vp]),
    ("xcclGemmRsSelfTest", ctypes.c_int, [_vp, ctypes.c_int64, _vp]),
    ("xcclGemmRsDestroy", ctypes.c_int, [_vp]),
]

for _name, _restype, _argtypes in _SIGNATURES:
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes

platform = lib.xcclGetPlatformName().decode()
