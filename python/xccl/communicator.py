"""UniqueId, Communicator and init_all: xccl.h's communicator calls, with collectives on
tensors."""

import ctypes
import sys

from . import _dtypes, _ops, _streams, _tensors
from ._errors import XcclError, check
from ._library import ConfigStruct, UniqueIdStruct, lib, platform

_CONFIG_MAGIC = 0x7863636C
_CONFIG_UNDEF_INT = -(2**31)


class UniqueId:
    """The rendezvous id of one communicator: made by one rank (UniqueId()), sent to the others
    as bytes (bytes(uid), or pickled), rebuilt there with UniqueId(those_bytes)."""

    SIZE = 128

    def __init__(self, data=None):
        self._struct = UniqueIdStruct()
        if data is None:
            check("xcclGetUniqueId", lib.xcclGetUniqueId(ctypes.byref(self._struct)))
            return
        data = bytes(data)
        if len(data) != self.SIZE:
            raise ValueError(f"xccl: a UniqueId is {self.SIZE} bytes, not {len(data)}")
        ctypes.memmove(ctypes.addressof(self._struct), data, self.SIZE)

    def __bytes__(self):
        return ctypes.string_at(ctypes.addressof(self._struct), self.SIZE)

    def __reduce__(self):
        return (UniqueId, (bytes(self),))

    def __eq__(self, other):
        return isinstance(other, UniqueId) and bytes(self) == bytes(other)

    def __hash__(self):
        return hash(bytes(self))


def _set_device(device):
    """Makes `device` the calling thread's current GPU, as xcclCommInitRank expects."""
    if "torch" in sys.modules:
        import torch
        torch.cuda.set_device(device)
        return
    name = "libcudart" if platform == "cuda" else "libamdhip64"
    runtime = None
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            if name in line:
                runtime = line.split()[-1]
                break
    if runtime is None:
        raise RuntimeError(f"xccl: cannot set device {device}: {name} is not loaded")
    setter_name = "cudaSetDevice" if platform == "cuda" else "hipSetDevice"
    setter = getattr(ctypes.CDLL(runtime), setter_name)
    result = setter(ctypes.c_int(device))
    if result != 0:
        raise RuntimeError(f"xccl: setting device {device} failed (runtime error {result})")


def _check_int(name, value, low, high=None):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"xccl: {name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"xccl: {name} must be {bound}, not {value}")


class Communicator:
    """One rank of a communicator: Communicator(nranks, uid, rank) joins the others (blocking
    until all have, or XCCL_TIMEOUT_MS). `device` sets the calling thread's GPU first (GPU
    platforms). A context manager: destroyed on exit, aborted if the block raised."""

    def __init__(self, nranks, uid, rank, *, device=None, timeout_ms=None, name=None,
                 _handle=None):
        if _handle is not None:
            self._handle = _handle
        else:
            _check_int("nranks", nranks, 1)
            _check_int("rank", rank, 0, nranks - 1)
            if not isinstance(uid, UniqueId):
                raise TypeError(f"xccl: uid must be a UniqueId, not {type(uid).__name__}")
            if device is not None:
                _check_int("device", device, 0)
                if platform != "host":
                    _set_device(device)
            handle = ctypes.c_void_p()
            if timeout_ms is None and name is None:
                result = lib.xcclCommInitRank(ctypes.byref(handle), nranks, uid._struct, rank)
            else:
                if timeout_ms is not None:
                    _check_int("timeout_ms", timeout_ms, 1, 2**31 - 1)
                self._name = name.encode() if name is not None else None
                config = ConfigStruct(ctypes.sizeof(ConfigStruct), _CONFIG_MAGIC, 100,
                                      _CONFIG_UNDEF_INT,
                                      _CONFIG_UNDEF_INT if timeout_ms is None else timeout_ms,
                                      self._name)
                result = lib.xcclCommInitRankConfig(ctypes.byref(handle), nranks, uid._struct,
                                                    rank, ctypes.byref(config))
            check("xcclCommInitRank", result)
            self._handle = handle.value
        self._closed = False
        self.rank = self._query("xcclCommUserRank", lib.xcclCommUserRank)
        self.size = self._query("xcclCommCount", lib.xcclCommCount)
        self.device = self._query("xcclCommDevice", lib.xcclCommDevice)

    def _query(self, call, fn):
        value = ctypes.c_int()
        check(call, fn(self._handle, ctypes.byref(value)), self._handle)
        return value.value

    def _live_handle(self, call):
        if self._closed:
            raise ValueError(f"xccl: {call} on a communicator already destroyed or aborted")
        return self._handle

    @property
    def handle(self):
        """The xcclComm_t, for C code that takes it (an int)."""
        return self._handle

    def __repr__(self):
        state = "closed" if self._closed else "live"
        return (f"<xccl.Communicator rank {self.rank} of {self.size}, device {self.device}, "
                f"{platform}, {state}>")

    # ---- lifecycle
    def destroy(self):
        """Frees the communicator (xcclCommDestroy). Synchronise its streams first."""
        if not self._closed:
            self._closed = True
            check("xcclCommDestroy", lib.xcclCommDestroy(self._handle))

    def abort(self):
        """Frees the communicator without waiting for anyone (xcclCommAbort): also when peers
        are dead; a call blocked on it in another thread returns an error."""
        if not self._closed:
            self._closed = True
            check("xcclCommAbort", lib.xcclCommAbort(self._handle))

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.destroy()
        else:
            self.abort()
        return False

    def async_error(self):
        """The first asynchronous failure recorded (an XcclError to raise), or None."""
        result = ctypes.c_int()
        handle = self._live_handle("async_error")
        check("xcclCommGetAsyncError", lib.xcclCommGetAsyncError(handle, ctypes.byref(result)),
              handle)
        if result.value == 0:
            return None
        text = lib.xcclGetLastError(handle)
        return XcclError("xcclCommGetAsyncError", result.value, text.decode(errors="replace"))

    # ---- checks shared by the calls on tensors
    def check_tensor(self, x, what, writable=False):
        """TensorInfo of x, after the checks every operand takes: on this platform's side
        (host memory on the host platform, this rank's GPU on a GPU), dense, aligned."""
        info = _tensors.describe(x, what)
        if platform == "host" and info.device != "cpu":
            raise ValueError(f"xccl: {what} is on a GPU, but this libxccl is the host platform's")
        if platform != "host":
            if info.device != "gpu":
                raise ValueError(f"xccl: {what} is in host memory; this communicator's rank works "
                                 f"on GPU {self.device} ({platform})")
            if info.device_id >= 0 and info.device_id != self.device:
                raise ValueError(f"xccl: {what} is on GPU {info.device_id}, this rank on GPU "
                                 f"{self.device}")
        if not info.contiguous:
            raise ValueError(f"xccl: {what} is not contiguous (row-major dense)")
        if info.itemsize and info.ptr % info.itemsize:
            raise ValueError(f"xccl: {what} at {info.ptr:#x} is not aligned to its element size "
                             f"({info.itemsize})")
        if writable and info.readonly:
            raise ValueError(f"xccl: {what} is read-only")
        return info

    # ---- collectives
    def _operand_type(self, src, dst, dtype):
        """The xcclDataType_t of a call on src and dst: dtype where given (bfloat16 or float8
        bits in uint16/uint8 numpy arrays), else theirs, which must agree."""
        kind = _dtypes.resolve(dtype) if dtype is not None else src.dtype
        if kind is None:
            raise ValueError("xccl: inp's element type has no xccl data type; pass dtype=")
        size = _dtypes.size_of(kind)
        if src.itemsize != size or dst.itemsize != size:
            raise ValueError(f"xccl: {kind.name} elements are {size} bytes; inp's are "
                             f"{src.itemsize}, out's {dst.itemsize}")
        if dtype is None and dst.dtype != src.dtype:
            raise ValueError(f"xccl: out holds {dst.dtype.name if dst.dtype else '?'}, inp "
                             f"{src.dtype.name}")
        return kind, size

    def _in_and_out(self, tensor, out, dtype, call):
        """The operands of a call whose output is `tensor` itself (in place) or `out` of the same
        size: (src, dst, kind, size)."""
        src = self.check_tensor(tensor, "tensor", writable=out is tensor)
        dst = src if out is tensor else self.check_tensor(out, "out", writable=True)
        kind, size = self._operand_type(src, dst, dtype)
        if dst.nbytes != src.nbytes:
            raise ValueError(f"xccl: out has {dst.nbytes} bytes, tensor {src.nbytes}; {call} "
                             "needs the same")
        return src, dst, kind, size

    def all_gather(self, out, inp, stream=None, dtype=None):
        """out <- every rank's inp, rank order (xcclAllGather). `out` holds size x inp's
        elements; inp may be out's own block (in place). dtype: for tensors whose element type
        has no xccl name of its own (bfloat16 or float8 bits in uint16/uint8 numpy arrays)."""
        handle = self._live_handle("all_gather")
        src = self.check_tensor(inp, "inp")
        dst = self.check_tensor(out, "out", writable=True)
        kind, size = self._operand_type(src, dst, dtype)
        if dst.nbytes != src.nbytes * self.size:
            raise ValueError(f"xccl: out has {dst.nbytes} bytes; an all_gather of inp's "
                             f"{src.nbytes} over {self.size} ranks needs {src.nbytes * self.size}")
        handle_stream = _streams.resolve(stream, platform, (src, dst), self.device)
        check("xcclAllGather",
              lib.xcclAllGather(src.ptr, dst.ptr, src.nbytes // size, int(kind), handle,
                                handle_stream), handle)
        return out

    def reduce_scatter(self, out, inp, op="sum", stream=None, dtype=None):
        """out <- block `rank` of every rank's inp, reduced in rank order (xcclReduceScatter).
        inp holds size x out's elements; out may be inp's own block (in place). op: "sum",
        "prod", "max", "min", "avg" (or a RedOp); dtype as for all_gather."""
        handle = self._live_handle("reduce_scatter")
        red = _ops.resolve(op)
        src = self.check_tensor(inp, "inp")
        dst = self.check_tensor(out, "out", writable=True)
        kind, size = self._operand_type(src, dst, dtype)
        if src.nbytes != dst.nbytes * self.size:
            raise ValueError(f"xccl: inp has {src.nbytes} bytes; a reduce_scatter into out's "
                             f"{dst.nbytes} over {self.size} ranks needs "
                             f"{dst.nbytes * self.size}")
        handle_stream = _streams.resolve(stream, platform, (src, dst), self.device)
        check("xcclReduceScatter",
              lib.xcclReduceScatter(src.ptr, dst.ptr, dst.nbytes // size, int(kind), int(red),
                                    handle, handle_stream), handle)
        return out

    def all_reduce(self, tensor, op="sum", out=None, stream=None, dtype=None):
        """out <- every rank's tensor, reduced in rank order (xcclAllReduce); in place (out is
        tensor) unless out is given, which must hold as many elements. Returns out."""
        handle = self._live_handle("all_reduce")
        red = _ops.resolve(op)
        out = tensor if out is None else out
        src, dst, kind, size = self._in_and_out(tensor, out, dtype, "an all_reduce")
        handle_stream = _streams.resolve(stream, platform, (src, dst), self.device)
        check("xcclAllReduce",
              lib.xcclAllReduce(src.ptr, dst.ptr, src.nbytes // size, int(kind), int(red),
                                handle, handle_stream), handle)
        return out

    def broadcast(self, tensor, root=0, out=None, stream=None, dtype=None):
        """out <- root's tensor, bit for bit (xcclBroadcast); in place (out is tensor) unless
        out is given. On ranks other than root only out is written (tensor is not read then, but
        must still describe as many bytes). Returns out."""
        handle = self._live_handle("broadcast")
        _check_int("root", root, 0, self.size - 1)
        out = tensor if out is None else out
        src, dst, kind, size = self._in_and_out(tensor, out, dtype, "a broadcast")
        handle_stream = _streams.resolve(stream, platform, (src, dst), self.device)
        check("xcclBroadcast",
              lib.xcclBroadcast(src.ptr, dst.ptr, dst.nbytes // size, int(kind), root, handle,
                                handle_stream), handle)
        return out

    def barrier(self, stream=None):
        """Returns (host) or completes on the stream (GPU) once every rank has entered it."""
        handle = self._live_handle("barrier")
        check("xcclBarrier", lib.xcclBarrier(handle, _streams.resolve(stream, platform, (),
                                                                        self.device)), handle)


def init_all(n, devices=None):
    """n ranks in this process (xcclCommInitAll), rank i on devices[i] (default: GPU i modulo
    the GPU count on GPU platforms); devices may repeat. Drive each rank from its own thread."""
    _check_int("n", n, 1)
    handles = (ctypes.c_void_p * n)()
    devlist = None
    if devices is not None:
        devices = list(devices)
        if len(devices) != n:
            raise ValueError(f"xccl: {n} ranks but {len(devices)} devices")
        for d in devices:
            _check_int("device", d, 0)
        devlist = (ctypes.c_int * n)(*devices)
    check("xcclCommInitAll", lib.xcclCommInitAll(handles, n, devlist))
    return [Communicator(n, None, i, _handle=handles[i]) for i in range(n)]
