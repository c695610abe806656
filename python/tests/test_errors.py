"""Every argument check raises its documented error before any C call (ValueError or
TypeError naming the operand), a failed C call raises XcclError with the code and the
library's message, and a killed rank raises XcclError in every survivor."""

import os
import signal
import threading

import numpy as np
import pytest

import xccl
from conftest import host_only
from ranks import run_ranks

pytestmark = host_only


@pytest.fixture(scope="module")
def pair():
    """Two thread ranks, each call run on both at once (a check that fails on one rank has
    not reached C, so its peer's matching call is made with valid arguments)."""
    comms = xccl.init_all(2)
    yield comms
    for c in comms:
        c.destroy()


def on_both(comms, fn):
    errors = [None, None]

    def run(c):
        try:
            fn(c)
        except BaseException as e:  # noqa: B902 - compared by the test
            errors[c.rank] = e

    threads = [threading.Thread(target=run, args=(c,)) for c in comms]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


def refused(comm, call, kind, words):
    with pytest.raises(kind) as info:
        call()
    for w in words:
        assert w in str(info.value), str(info.value)


def test_all_gather_argument_checks(pair):
    c = pair[0]
    good_in, good_out = np.zeros(8, np.float32), np.zeros(16, np.float32)
    refused(c, lambda: c.all_gather(np.zeros(15, np.float32), good_in), ValueError,
            ["out has 60 bytes", "needs 64"])
    refused(c, lambda: c.all_gather(good_out, np.zeros(8, np.float64)), ValueError,
            ["float64 elements are 8 bytes", "out's 4"])
    refused(c, lambda: c.all_gather(np.zeros(16, np.int32), good_in), ValueError,
            ["out holds int32, inp float32"])
    refused(c, lambda: c.all_gather(np.zeros((16, 2), np.float32)[:, 0], good_in), ValueError,
            ["out is not contiguous"])
    readonly = np.zeros(16, np.float32)
    readonly.setflags(write=False)
    refused(c, lambda: c.all_gather(readonly, good_in), ValueError, ["out is read-only"])
    refused(c, lambda: c.all_gather(good_out, np.zeros(8, np.complex64)), ValueError,
            ["no xccl data type", "dtype="])
    refused(c, lambda: c.all_gather(good_out, good_in, dtype="float128"), ValueError,
            ["unknown data type"])
    refused(c, lambda: c.all_gather(good_out, good_in, dtype="bfloat16"), ValueError,
            ["bfloat16 elements are 2 bytes"])
    refused(c, lambda: c.all_gather(good_out, object()), TypeError, ["inp is a object"])
    unaligned = np.zeros(65, np.uint8)[1:].view(np.float32)
    refused(c, lambda: c.all_gather(good_out, unaligned[:8]), ValueError, ["not aligned"])
    refused(c, lambda: c.all_gather(good_out, good_in, stream="s"), TypeError, ["stream"])


def test_reduction_argument_checks(pair):
    c = pair[0]
    good_in, good_out = np.zeros(16, np.float32), np.zeros(8, np.float32)
    refused(c, lambda: c.reduce_scatter(good_out, good_in, op="mul"), ValueError,
            ["unknown reduction op 'mul'", "sum"])
    refused(c, lambda: c.all_reduce(good_in, op=5), ValueError, ["op 5 is not a reduction op"])
    refused(c, lambda: c.reduce_scatter(np.zeros(7, np.float32), good_in), ValueError,
            ["inp has 64 bytes", "needs 56"])
    refused(c, lambda: c.reduce_scatter(np.zeros(8, np.int32), good_in), ValueError,
            ["out holds int32, inp float32"])
    refused(c, lambda: c.all_reduce(good_in, out=good_out), ValueError,
            ["out has 32 bytes, tensor 64"])
    readonly = np.zeros(16, np.float32)
    readonly.setflags(write=False)
    refused(c, lambda: c.all_reduce(readonly), ValueError, ["tensor is read-only"])
    # Overlapping buffers that are not NCCL's in-place layout: refused by libxccl itself, before
    # any rank moves a byte, so the peer need not call.
    shared = np.zeros(24, np.float32)
    refused(c, lambda: c.all_reduce(shared[:16], out=shared[8:]), xccl.XcclError,
            ["xcclAllReduce", "overlaps recvbuff but is not in place"])
    refused(c, lambda: c.reduce_scatter(shared[:8], shared[4:20]), xccl.XcclError,
            ["xcclReduceScatter", "overlaps recvbuff but is not in place"])
    refused(c, lambda: c.broadcast(good_in, root=2), ValueError, ["root must be in 0..1, not 2"])
    refused(c, lambda: c.broadcast(good_in, root="0"), TypeError, ["root must be an int"])
    refused(c, lambda: c.broadcast(good_in, out=good_out), ValueError,
            ["out has 32 bytes, tensor 64"])


def test_buffer_protocol_and_dlpack_tensors(pair):
    """bytearray (buffer protocol) and a DLPack-only wrapper gather like numpy arrays."""
    class DlpackOnly:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    rng = np.random.default_rng()
    blocks = [rng.integers(0, 256, 96, dtype=np.uint8) for _ in range(2)]
    outs = [bytearray(b"\xee" * 192), np.full(192, 0xEE, np.uint8)]

    def gather(comm):
        if comm.rank == 0:
            comm.all_gather(outs[0], bytes(blocks[0]))  # read-only input is fine
        else:
            comm.all_gather(DlpackOnly(outs[1]), DlpackOnly(blocks[1]))

    assert on_both(pair, gather) == [None, None]
    want = np.concatenate(blocks)
    np.testing.assert_array_equal(np.frombuffer(outs[0], np.uint8), want)
    np.testing.assert_array_equal(outs[1], want)


def test_communicator_argument_checks():
    uid = xccl.UniqueId()
    refused(None, lambda: xccl.Communicator(0, uid, 0), ValueError, ["nranks must be >= 1"])
    refused(None, lambda: xccl.Communicator(2, uid, 2), ValueError, ["rank must be in 0..1"])
    refused(None, lambda: xccl.Communicator(2, b"x" * 128, 0), TypeError, ["uid must be"])
    refused(None, lambda: xccl.Communicator(2.0, uid, 0), TypeError, ["nranks must be an int"])
    refused(None, lambda: xccl.UniqueId(b"short"), ValueError, ["128 bytes"])
    refused(None, lambda: xccl.init_all(2, devices=[0]), ValueError, ["2 ranks but 1 devices"])


def test_c_refusals_raise_xccl_error():
    """A UniqueId not made by xcclGetUniqueId: the C check refuses it, and XcclError carries
    the code and the library's message."""
    with pytest.raises(xccl.XcclError) as info:
        xccl.Communicator(2, xccl.UniqueId(bytes(128)), 0)
    assert info.value.result == xccl.Result.INVALID_ARGUMENT
    assert "bad magic" in info.value.message


def test_ag_gemm_argument_checks(pair):
    ops = [None, None]

    def create(comm):
        ops[comm.rank] = xccl.AgGemmOp(comm, 32, 64, 256, "float8_e4m3", scale="block128",
                                       plugin="reference")

    assert on_both(pair, create) == [None, None]
    op = ops[0]
    a, b = np.zeros((100, 64), np.uint8), np.zeros((32, 64), np.uint8)
    a_scale, b_scale = np.ones((1, 100), np.float32), np.ones((1, 1), np.float32)
    refused(None, lambda: op(np.zeros((300, 64), np.uint8), b, a_scale, b_scale), ValueError,
            ["a has 300 rows", "m_max (256)"])
    refused(None, lambda: op(np.zeros((100, 63), np.uint8), b, a_scale, b_scale), ValueError,
            ["a has shape [100, 63]", "[100, 64]"])
    refused(None, lambda: op(a, np.zeros((33, 64), np.uint8), a_scale, b_scale), ValueError,
            ["b has shape"])
    refused(None, lambda: op(a.astype(np.float32), b, a_scale, b_scale), ValueError,
            ["a holds float32", "float8_e4m3"])
    refused(None, lambda: op(a, b, None, b_scale), ValueError, ["a_scale is required"])
    refused(None, lambda: op(a, b, np.ones(100, np.float32), b_scale), ValueError,
            ["a_scale has shape [100]", "[1, 100]"])
    refused(None, lambda: op(a, b, a_scale, np.ones((1, 1), np.float64)), ValueError,
            ["b_scale holds float64"])
    refused(None, lambda: op(a, b, a_scale, b_scale, out=np.zeros((512, 32), np.float32)),
            ValueError, ["out holds float32", "bfloat16"])
    refused(None, lambda: op(a, b, a_scale, b_scale, out=np.zeros((511, 32), np.uint16)),
            ValueError, ["out has shape [511, 32]", "[512, 32]"])
    refused(None, lambda: op(a[::2], b, a_scale, b_scale), ValueError, ["a is not contiguous"])
    refused(None, lambda: op.padded_m(0), ValueError, ["m must be in 1..m_max"])
    refused(None, lambda: op.local_rows(257), ValueError, ["m must be in 1..m_max"])
    refused(None, lambda: xccl.AgGemmOp(pair[0], 32, 64, 256, "int8"), ValueError,
            ["bfloat16, float16 or float8_e4m3"])
    refused(None, lambda: xccl.AgGemmOp(pair[0], 32, 64, 256, "bfloat16", scale="ptpc"),
            ValueError, ["needs float8_e4m3"])
    refused(None, lambda: xccl.AgGemmOp(pair[0], 32, 64, 256, "bfloat16", mode="both"),
            ValueError, ["'fused' or 'split'"])
    refused(None, lambda: xccl.AgGemmOp(pair[0], 32, 64, 256, "bfloat16", scale="block64"),
            ValueError, ["scale must be one of"])
    for o in ops:
        o.destroy()
    refused(None, lambda: op.padded_m(1), ValueError, ["already destroyed"])


def test_ag_gemm_c_refusals_raise_xccl_error(pair):
    """Collective refusals: n not a multiple of 16, an unknown plugin; every rank raises
    XcclError with the library's message."""
    def bad_n(comm):
        xccl.AgGemmOp(comm, 30, 64, 256, "bfloat16", plugin="reference")

    errors = on_both(pair, bad_n)
    for e in errors:
        assert isinstance(e, xccl.XcclError), e
        assert e.result in (xccl.Result.INVALID_ARGUMENT, xccl.Result.REMOTE_ERROR,
                            xccl.Result.INVALID_USAGE)
    assert any("multiple of 16" in e.message for e in errors), [e.message for e in errors]

    def bad_plugin(comm):
        xccl.AgGemmOp(comm, 32, 64, 256, "bfloat16", plugin="no-such-gemm")

    errors = on_both(pair, bad_plugin)
    assert all(isinstance(e, xccl.XcclError) for e in errors), errors
    assert any("no-such-gemm" in e.message for e in errors), [e.message for e in errors]


def test_destroyed_communicator_is_refused():
    comms = xccl.init_all(1)
    comms[0].destroy()
    refused(None, lambda: comms[0].barrier(), ValueError, ["already destroyed or aborted"])
    comms[0].destroy()  # a second destroy is a no-op


VICTIM = 2


def killed_rank(comm, seed):
    """All ranks gather once; then the victim SIGKILLs itself and each survivor's next
    all_gather must raise XcclError naming it."""
    data = np.random.default_rng(seed + comm.rank).standard_normal(1024).astype(np.float32)
    out = np.empty(1024 * comm.size, np.float32)
    comm.all_gather(out, data)
    if comm.rank == VICTIM:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        comm.all_gather(out, data)
    except xccl.XcclError as e:
        return (int(e.result), e.message)
    return None


def test_killed_rank_raises_in_every_survivor():
    results, errors = run_ranks(3, "processes", killed_rank, 5, allow_errors=True)
    assert errors[VICTIM] is None and results[VICTIM] is None  # the victim said nothing
    for rank in (0, 1):
        assert errors[rank] is None, errors[rank]
        assert results[rank] is not None, f"rank {rank}'s call succeeded after the kill"
        code, message = results[rank]
        assert code in (xccl.Result.REMOTE_ERROR, xccl.Result.TIMEOUT), (code, message)
        assert f"rank {VICTIM}" in message, message
