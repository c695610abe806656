"""GemmRsOp through the reference plugin against an fp64 numpy reference: bf16, fp8 ptpc and fp8
block128, fused and split, 2, 3 and 4 ranks as threads, 2 as processes; fresh operands every
call, a new output and out=, fused and split byte for byte, and the argument checks."""

import numpy as np
import pytest

import xccl
from conftest import host_only
from numerics import bf16_bits, bf16_values, e4m3_bits, e4m3_values, rel_l2
from ranks import fresh_seed, rank_seed, run_ranks

pytestmark = host_only

N, K = 144, 320  # N not a multiple of 128, K not one of 128 (a short K block)
TOLERANCE = 1e-2  # each rank's partial and the sum are rounded to bf16


def operand(fmt, rows, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, K))
    if fmt == "bf16":
        bits = bf16_bits(x)
        return bits, bf16_values(bits)
    bits = e4m3_bits(x * 16)
    return bits, e4m3_values(bits)


def scales(fmt, role, rows, seed):
    rng = np.random.default_rng(seed)
    kb = -(-K // 128)
    if fmt == "ptpc":
        return rng.uniform(0.01, 0.1, rows).astype(np.float32)
    if role == "a":
        return rng.uniform(0.01, 0.1, (kb, rows)).astype(np.float32)
    return rng.uniform(0.01, 0.1, (-(-rows // 128), kb)).astype(np.float32)


def product(fmt, a, b, a_scale, b_scale):
    """A @ B^T in fp64 with the format's scales."""
    if fmt == "bf16":
        return a @ b.T
    if fmt == "ptpc":
        return (a @ b.T) * a_scale[:, None] * b_scale[None, :]
    part = np.zeros((a.shape[0], b.shape[0]))
    for kb in range(-(-K // 128)):
        block = a[:, kb * 128:(kb + 1) * 128] @ b[:, kb * 128:(kb + 1) * 128].T
        part += block * a_scale[kb][:, None] * np.repeat(b_scale[:, kb], 128)[:b.shape[0]][None, :]
    return part


def run_format(comm, fmt, seed):
    """Per mode, two calls (m 8 and 24 rows per rank): each rank's rows against fp64; returns
    the errors and the rows of each mode's last call."""
    dtype = "bfloat16" if fmt == "bf16" else "float8_e4m3"
    scale = {"bf16": None, "ptpc": "ptpc", "block": "block128"}[fmt]
    errors, last = [], {}
    for mode in ("fused", "split"):
        with xccl.GemmRsOp(comm, N, K, 24 * comm.size, dtype, scale=scale, mode=mode,
                           plugin="reference") as op:
            op.self_test()
            for round_, per_rank in enumerate((8, 24)):
                m = per_rank * comm.size
                want = np.zeros((m, N))
                mine = None
                for r in range(comm.size):
                    a_bits, a = operand(fmt, m, rank_seed(seed, r, round_))
                    b_bits, b = operand(fmt, N, rank_seed(seed, r, 50 + round_))
                    a_s = scales(fmt, "a", m, rank_seed(seed, r, 70 + round_)) \
                        if fmt != "bf16" else None
                    b_s = scales(fmt, "b", N, rank_seed(seed, r, 90 + round_)) \
                        if fmt != "bf16" else None
                    want += product(fmt, a, b, a_s, b_s)
                    if r == comm.rank:
                        mine = (a_bits, b_bits, a_s, b_s)
                rows = slice(comm.rank * per_rank, (comm.rank + 1) * per_rank)
                if round_ == 0:
                    got = op(*mine)
                else:
                    out = np.full((per_rank, N), 0xFFFF, np.uint16)  # poison: NaN in bf16
                    got = op(*mine, out=out)
                    assert got is out
                assert got.shape == (per_rank, N)
                errors.append(rel_l2(bf16_values(got), want[rows]))
                last[mode] = got.copy()
    return errors, last


@pytest.mark.parametrize("fmt", ["bf16", "ptpc", "block"])
@pytest.mark.parametrize("world,ranks", [(2, "threads"), (3, "threads"), (4, "threads"),
                                         (2, "processes")])
def test_gemm_rs_against_fp64(world, ranks, fmt):
    results = run_ranks(world, ranks, run_format, fmt, fresh_seed())
    for rank, (errors, last) in enumerate(results):
        assert len(errors) == 4
        for e in errors:
            assert np.isfinite(e) and e < TOLERANCE, f"rank {rank}: relative L2 {errors}"
        np.testing.assert_array_equal(last["fused"], last["split"],
                                      err_msg=f"rank {rank}: fused and split differ")


def check_arguments(comm):
    with pytest.raises(xccl.XcclError, match="not a multiple of"):
        xccl.GemmRsOp(comm, N, K, 24 * comm.size + 1, "bfloat16", plugin="reference")
    with pytest.raises(ValueError, match="scale"):
        xccl.GemmRsOp(comm, N, K, 24 * comm.size, "bfloat16", scale="ptpc")
    with pytest.raises(ValueError, match="mode"):
        xccl.GemmRsOp(comm, N, K, 24 * comm.size, "bfloat16", mode="both")
    with xccl.GemmRsOp(comm, N, K, 24 * comm.size, "bfloat16", plugin="reference") as op:
        a, _ = operand("bf16", 8 * comm.size, 1)
        b, _ = operand("bf16", N, 2)
        with pytest.raises(ValueError, match="multiple"):
            op(a[:8 * comm.size - 1], b)
        with pytest.raises(ValueError, match="shape"):
            op(a, np.ascontiguousarray(b[:, :K - 1]))
        with pytest.raises(ValueError, match="no scales"):
            op(a, b, a_scale=np.ones(8 * comm.size, np.float32))
        with pytest.raises(ValueError, match="shape"):
            op(a, b, out=np.zeros((1, N), np.uint16))
        with pytest.raises(xccl.XcclError, match="multiple of"):
            op.self_test(8 * comm.size + 1)
        got = op(a, b)  # still usable
        assert got.shape == (8, N)
    with pytest.raises(ValueError, match="destroyed"):
        op(a, b)
    return True


def test_gemm_rs_arguments():
    assert all(run_ranks(2, "threads", check_arguments))
