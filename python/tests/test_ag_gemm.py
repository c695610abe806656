"""AgGemmOp through the reference plugin against an fp64 numpy reference: bf16, fp8 ptpc and
fp8 block128, fused and split, 2, 3 and 4 ranks as threads, 2 and 3 as processes; two fresh
operand sets per op, out= and the op's own buffer, local_rows, padding rows, self_test."""

import numpy as np
import pytest

import xccl
from conftest import host_only
from numerics import bf16_bits, bf16_values, e4m3_bits, e4m3_values, reference_c, rel_l2
from ranks import fresh_seed, rank_seed, run_ranks

pytestmark = host_only

N, K, M_MAX = 144, 320, 400  # N not a multiple of 128, K not one of 128 (a short K block)
TOLERANCE = 1e-2  # bf16 output; fp8 inputs are compared on their own quantised values


def operands(fmt, m, n, k, seed):
    """(a_bits, a_values, a_scale) for one source, or (b_bits, b_values, b_scale) with m=n."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k))
    if fmt == "bf16":
        bits = bf16_bits(x)
        return bits, bf16_values(bits), None
    bits = e4m3_bits(x * 16)
    return bits, e4m3_values(bits), None


def scales_for(fmt, role, rows, k, seed):
    rng = np.random.default_rng(seed)
    kb = -(-k // 128)
    if fmt == "ptpc":
        return rng.uniform(0.01, 0.1, rows).astype(np.float32)
    if role == "a":
        return rng.uniform(0.01, 0.1, (kb, rows)).astype(np.float32)
    return rng.uniform(0.01, 0.1, (-(-rows // 128), kb)).astype(np.float32)


def run_format(comm, fmt, mode, seed):
    """Two operand sets (m 400 then 200) through one op, into out= then the op's buffer, then
    once through local_rows; returns each call's relative L2 error against fp64."""
    dtype = "bfloat16" if fmt == "bf16" else "float8_e4m3"
    scale = {"bf16": None, "ptpc": "ptpc", "block": "block128"}[fmt]
    errors = []
    with xccl.AgGemmOp(comm, N, K, M_MAX, dtype, scale=scale, mode=mode,
                       plugin="reference") as op:
        op.self_test()
        assert op.padded_m(200) == 256 and op.padded_m(400) == 512
        for round_, m in enumerate((400, 200)):
            sources, source_scales = [], []
            for r in range(comm.size):
                bits, values, _ = operands(fmt, m, N, K, rank_seed(seed, r, round_))
                sources.append((bits, values))
                if fmt != "bf16":
                    source_scales.append(
                        scales_for(fmt, "a", m, K, rank_seed(seed, r, 50 + round_)))
            b_bits, b_values, _ = operands(fmt, N, N, K, rank_seed(seed, comm.rank, 99 + round_))
            b_scale = scales_for(fmt, "b", N, K, rank_seed(seed, comm.rank, 77)) \
                if fmt != "bf16" else None
            padded = op.padded_m(m)
            want = reference_c([v for _, v in sources], b_values, padded,
                               None if fmt == "bf16" else ("ptpc" if fmt == "ptpc" else "block"),
                               source_scales, b_scale)
            a_scale = source_scales[comm.rank] if fmt != "bf16" else None
            a_bits = sources[comm.rank][0]
            out = np.full((comm.size * padded, N), 0xFFFF, np.uint16)  # poison: NaN in bf16
            got = op(a_bits, b_bits, a_scale, b_scale, out=out)
            assert got is out
            errors.append(rel_l2(bf16_values(out), want))
            # The op's own buffer: the same C.
            own = op(a_bits, b_bits, a_scale, b_scale)
            assert own.shape == (comm.size * padded, N)
            np.testing.assert_array_equal(own, out)
        # local_rows: quantise into the slot (and its scales), then run without the copy.
        m = 200
        local = op.local_rows(m)
        assert local.rows.shape == (op.padded_m(m), K)
        bits, values, _ = operands(fmt, m, N, K, rank_seed(seed, comm.rank, 1234))
        sources = [operands(fmt, m, N, K, rank_seed(seed, r, 1234))[1] for r in range(comm.size)]
        local.rows[:m] = bits
        if fmt == "bf16":
            assert local.scales is None
            a_scales, a_scale_arg, b_scale = None, None, None
        else:
            a_scales = [scales_for(fmt, "a", m, K, rank_seed(seed, r, 4321))
                        for r in range(comm.size)]
            b_scale = scales_for(fmt, "b", N, K, rank_seed(seed, comm.rank, 77))
            if fmt == "ptpc":
                local.scales[:m] = a_scales[comm.rank]
                a_scale_arg = local.scales[:m]
            else:
                assert local.tiles, "blockscale ops have scale tiles"
                for begin, end, tile in local.tiles:
                    rows = slice(begin, min(end, m))
                    if begin < m:
                        tile[:, :rows.stop - begin] = a_scales[comm.rank][:, rows]
                a_scale_arg = local.scales
        b_bits, b_values, _ = operands(fmt, N, N, K, rank_seed(seed, comm.rank, 99))
        want = reference_c(sources, b_values, op.padded_m(m),
                           None if fmt == "bf16" else ("ptpc" if fmt == "ptpc" else "block"),
                           a_scales, b_scale)
        got = op(local.rows[:m], b_bits, a_scale_arg, b_scale)
        errors.append(rel_l2(bf16_values(got), want))
        assert op.chunks(m) >= 1
    return errors


@pytest.mark.parametrize("mode", ["fused", "split"])
@pytest.mark.parametrize("fmt", ["bf16", "ptpc", "block"])
@pytest.mark.parametrize("world,ranks", [(2, "threads"), (3, "threads"), (4, "threads"),
                                         (2, "processes"), (3, "processes")])
def test_ag_gemm_against_fp64(world, ranks, fmt, mode):
    results = run_ranks(world, ranks, run_format, fmt, mode, fresh_seed())
    for rank, errors in enumerate(results):
        assert len(errors) == 3
        for e in errors:
            assert np.isfinite(e) and e < TOLERANCE, f"rank {rank}: relative L2 {errors}"
