"""xccl: collective communication for GPU servers (libxccl through ctypes).

    uid = xccl.UniqueId()                      # on one rank; send bytes(uid) to the others
    with xccl.Communicator(nranks, uid, rank) as comm:
        comm.all_gather(out, inp)
        comm.reduce_scatter(out, inp, op="sum")
        comm.all_reduce(tensor, op="avg")          # in place; out= for another tensor
        comm.broadcast(tensor, root=0)             # in place; out= for another tensor
        comm.barrier()
        with xccl.AgGemmOp(comm, n=N, k=K, m_max=M, dtype="float8_e4m3") as op:
            op.self_test()
            c = op(a, b, a_scale, b_scale)

Tensors: torch, cupy, numpy or anything offering DLPack, __cuda_array_interface__ or the
buffer protocol. Streams: the caller's, else torch's (or cupy's) current one.
"""

from ._dtypes import DataType
from ._errors import Result, XcclError
from ._ops import RedOp
from ._library import path as library_path
from ._library import platform
from .ag_gemm import AgGemmOp, LocalRows
from .gemm_rs import GemmRsOp
from .communicator import Communicator, UniqueId, init_all


def version():
    """libxccl's version as (major, minor, patch)."""
    import ctypes
    from ._errors import check
    from ._library import lib
    code = ctypes.c_int()
    check("xcclGetVersion", lib.xcclGetVersion(ctypes.byref(code)))
    return (code.value // 10000, code.value // 100 % 100, code.value % 100)


__all__ = ["AgGemmOp", "Communicator", "DataType", "GemmRsOp", "LocalRows", "RedOp", "Result",
           "UniqueId", "XcclError", "init_all", "library_path", "platform", "version"]
