"""On a GPU, with torch: all_gather, the reductions and broadcast of torch tensors with 2 and 4
thread ranks sharing GPU 0
(each on its own stream, taken as torch's current one), ag_gemm through the cublaslt plugin
(bf16, fp8 ptpc, fp8 block128) against a float64 torch reference, and one all_gather and one
ag_gemm captured in a torch.cuda.graph, replayed with fresh data."""

import os
import threading
import traceback

import pytest

import xccl

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
pytestmark = pytest.mark.skipif(
    xccl.platform == "host" or not torch.cuda.is_available(),
    reason=f"needs a GPU build of libxccl and a GPU (libxccl: {xccl.platform}, "
           f"torch sees a GPU: {torch.cuda.is_available()})")

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32,
          torch.float64, torch.bfloat16, "float8_e4m3fn"]
LIMIT_S = 120
# Fused ag_gemm needs a DMA queue per peer, which ranks sharing a GPU get only from
# XCCL_GPU_QUEUES, read once per process at the first init: set it before starting pytest.
needs_queues = pytest.mark.skipif(
    os.environ.get("XCCL_GPU_QUEUES") != "1",
    reason="fused ag_gemm with ranks sharing a GPU needs XCCL_GPU_QUEUES=1 in the environment "
           "(run: XCCL_GPU_QUEUES=1 pytest -k 'fused or graph')")


def on_threads(world, body, *args):
    """body(comm, stream, *args) on `world` ranks sharing GPU 0, one thread and stream each."""
    comms = xccl.init_all(world, [0] * world)
    results, errors = [None] * world, [None] * world

    def run(comm):
        try:
            torch.cuda.set_device(0)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                results[comm.rank] = body(comm, stream, *args)
        except BaseException:  # noqa: B902 - reported below
            errors[comm.rank] = traceback.format_exc()
            comm.abort()

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in comms]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT_S)
        assert not t.is_alive(), f"a rank ran past {LIMIT_S} s"
    for c in comms:
        if not c._closed:
            c.destroy()
    failed = [f"rank {r}:\n{e}" for r, e in enumerate(errors) if e]
    assert not failed, "\n".join(failed)
    return results


def random_tensor(dtype, count, generator):
    if dtype == "float8_e4m3fn":
        return (torch.randn(count, generator=generator, device="cuda") * 8).to(
            torch.float8_e4m3fn)
    if dtype.is_floating_point:
        return torch.randn(count, generator=generator, device="cuda").to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (count,), generator=generator, device="cuda",
                         dtype=dtype)


def bits(t):
    """The tensor's bytes as uint8 (compares fp8 and NaN-free floats exactly)."""
    return t.contiguous().view(torch.uint8)


def gather_torch(comm, stream, seed):
    checked = 0
    for i, dtype in enumerate(DTYPES):
        for count in (1, 4099, 1 << 20):
            blocks = []
            for r in range(comm.size):
                g = torch.Generator(device="cuda").manual_seed(seed + 1000 * i + 17 * r + count)
                blocks.append(random_tensor(dtype, count, g))
            out = torch.empty(count * comm.size, dtype=blocks[0].dtype, device="cuda")
            bits(out).fill_(0xA5)
            comm.all_gather(out, blocks[comm.rank])  # on torch's current stream: `stream`
            stream.synchronize()
            want = torch.cat([bits(b) for b in blocks])
            assert torch.equal(bits(out), want), f"{dtype} x {count}"
            inplace = torch.empty_like(out)
            bits(inplace).fill_(0x5A)
            mine = inplace[comm.rank * count:(comm.rank + 1) * count]
            mine.copy_(blocks[comm.rank])
            comm.all_gather(inplace, mine)
            stream.synchronize()
            assert torch.equal(bits(inplace), want), f"{dtype} in place"
            checked += 2
    return checked


@pytest.mark.parametrize("world", [2, 4])
def test_all_gather_torch_tensors_ranks_sharing_gpu0(world):
    seed = int.from_bytes(os.urandom(3), "little")
    assert on_threads(world, gather_torch, seed) == [2 * 3 * len(DTYPES)] * world


def reduce_torch(comm, stream, seed):
    """bf16 and fp32 sums, fp16 avg, int32 max: all_reduce in place and into out,
    reduce_scatter into out, against a float64 (integer: exact) torch reference within one
    rounding; broadcast from every root bit for bit; every rank's all_reduce bits returned."""
    cases = [(torch.bfloat16, "sum"), (torch.float32, "sum"), (torch.float16, "avg"),
             (torch.int32, "max")]
    outputs = []
    for i, (dtype, op) in enumerate(cases):
        count = 4099 * comm.size
        inputs = []
        for r in range(comm.size):
            g = torch.Generator(device="cuda").manual_seed(seed + 1000 * i + 17 * r)
            inputs.append(random_tensor(dtype, count, g))
        stacked = torch.stack([x.to(torch.float64) for x in inputs])
        if op == "max":
            want = stacked.max(0).values
        else:
            want = stacked.sum(0) / (comm.size if op == "avg" else 1)
        tol = 0 if op == "max" else 2 * torch.finfo(dtype).eps * stacked.abs().sum(0)
        out = torch.empty_like(inputs[comm.rank])
        comm.all_reduce(inputs[comm.rank], op=op, out=out)
        mine = inputs[comm.rank].clone()
        comm.all_reduce(mine, op=op)
        block = torch.empty(count // comm.size, dtype=dtype, device="cuda")
        comm.reduce_scatter(block, inputs[comm.rank], op=op)
        stream.synchronize()
        assert torch.equal(bits(out), bits(mine)), f"{dtype} {op}: in place differs"
        err = (out.to(torch.float64) - want).abs()
        assert bool((err <= tol + 1e-30).all()), f"{dtype} {op}: off by up to {err.max()}"
        part = slice(comm.rank * block.numel(), (comm.rank + 1) * block.numel())
        assert torch.equal(bits(block), bits(out[part])), f"{dtype} {op}: reduce_scatter"
        outputs.append(bits(out).cpu())
    for root in range(comm.size):
        g = torch.Generator(device="cuda").manual_seed(seed + 77 + root)
        want = random_tensor(torch.bfloat16, 100003, g)
        t = want.clone() if comm.rank == root else torch.zeros_like(want)
        comm.broadcast(t, root=root)
        stream.synchronize()
        assert torch.equal(bits(t), bits(want)), f"broadcast from {root}"
    return outputs


@pytest.mark.parametrize("world", [2, 4])
def test_reductions_and_broadcast_torch_tensors_ranks_sharing_gpu0(world):
    seed = int.from_bytes(os.urandom(3), "little")
    results = on_threads(world, reduce_torch, seed)
    for r in range(1, world):
        assert all(torch.equal(a, b) for a, b in zip(results[0], results[r])), \
            f"rank {r}'s all_reduce bits differ from rank 0's"


N, K, M_MAX = 384, 1024, 1024


def make_operands(fmt, m, seed, rank, world):
    """Every source's A (and scales) and this rank's B (and scales), fp8 or bf16 on GPU."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    kb = -(-K // 128)
    sources, a_scales = [], []
    for _ in range(world):
        x = torch.randn(m, K, generator=g, device="cuda")
        sources.append(x.to(torch.bfloat16) if fmt == "bf16" else (x * 16).to(
            torch.float8_e4m3fn))
        if fmt == "ptpc":
            a_scales.append(torch.rand(m, generator=g, device="cuda") * 0.09 + 0.01)
        elif fmt == "block":
            a_scales.append(torch.rand(kb, m, generator=g, device="cuda") * 0.09 + 0.01)
    g_b = torch.Generator(device="cuda").manual_seed(seed * 31 + rank)
    y = torch.randn(N, K, generator=g_b, device="cuda")
    b = y.to(torch.bfloat16) if fmt == "bf16" else (y * 16).to(torch.float8_e4m3fn)
    b_scale = None
    if fmt == "ptpc":
        b_scale = torch.rand(N, generator=g_b, device="cuda") * 0.09 + 0.01
    elif fmt == "block":
        b_scale = torch.rand(-(-N // 128), kb, generator=g_b, device="cuda") * 0.09 + 0.01
    return sources, a_scales, b, b_scale


def reference(fmt, sources, a_scales, b, b_scale, padded):
    b64 = b.to(torch.float64)
    c = torch.zeros(len(sources) * padded, N, dtype=torch.float64, device="cuda")
    for s, a in enumerate(sources):
        a64 = a.to(torch.float64)
        m = a.shape[0]
        if fmt == "bf16":
            part = a64 @ b64.T
        elif fmt == "ptpc":
            part = (a64 @ b64.T) * a_scales[s].double()[:, None] * b_scale.double()[None, :]
        else:
            part = torch.zeros(m, N, dtype=torch.float64, device="cuda")
            for kb in range(-(-K // 128)):
                cols = slice(kb * 128, (kb + 1) * 128)
                block = a64[:, cols] @ b64[:, cols].T
                column_scales = b_scale.double()[:, kb].repeat_interleave(128)[:N]
                part += block * a_scales[s].double()[kb][:, None] * column_scales[None, :]
        c[s * padded:s * padded + m] = part
    return c


def rel_l2(got, want):
    return float(torch.linalg.norm(got.double() - want) / torch.linalg.norm(want))


def ag_gemm_cublaslt(comm, stream, fmt, mode, seed):
    dtype = "bfloat16" if fmt == "bf16" else "float8_e4m3"
    scale = {"bf16": None, "ptpc": "ptpc", "block": "block128"}[fmt]
    errors = []
    with xccl.AgGemmOp(comm, N, K, M_MAX, dtype, scale=scale, mode=mode,
                       plugin="cublaslt") as op:
        op.self_test()
        for round_, m in enumerate((1024, 512)):
            sources, a_scales, b, b_scale = make_operands(fmt, m, seed + round_, comm.rank,
                                                          comm.size)
            padded = op.padded_m(m)
            out = torch.full((comm.size * padded, N), float("nan"), dtype=torch.bfloat16,
                             device="cuda")
            a_scale = a_scales[comm.rank] if a_scales else None
            op(sources[comm.rank], b, a_scale, b_scale, out=out)
            stream.synchronize()
            errors.append(rel_l2(out, reference(fmt, sources, a_scales, b, b_scale, padded)))
    return errors


@pytest.mark.parametrize("mode", [pytest.param("fused", marks=needs_queues), "split"])
@pytest.mark.parametrize("fmt", ["bf16", "ptpc", "block"])
def test_ag_gemm_cublaslt_against_torch(fmt, mode):
    seed = int.from_bytes(os.urandom(3), "little")
    for rank, errors in enumerate(on_threads(2, ag_gemm_cublaslt, fmt, mode, seed)):
        assert all(e < 1e-2 for e in errors), f"rank {rank}: relative L2 {errors}"


def gemm_rs_operands(fmt, m, seed, rank):
    """Rank `rank`'s A [m][K] and B [N][K] (with scales), the same on every rank that asks."""
    g = torch.Generator(device="cuda").manual_seed(seed * 131 + rank)
    kb = -(-K // 128)
    x, y = torch.randn(m, K, generator=g, device="cuda"), torch.randn(N, K, generator=g,
                                                                       device="cuda")
    if fmt == "bf16":
        return x.to(torch.bfloat16), y.to(torch.bfloat16), None, None
    a, b = (x * 16).to(torch.float8_e4m3fn), (y * 16).to(torch.float8_e4m3fn)
    if fmt == "ptpc":
        return (a, b, torch.rand(m, generator=g, device="cuda") * 0.09 + 0.01,
                torch.rand(N, generator=g, device="cuda") * 0.09 + 0.01)
    return (a, b, torch.rand(kb, m, generator=g, device="cuda") * 0.09 + 0.01,
            torch.rand(-(-N // 128), kb, generator=g, device="cuda") * 0.09 + 0.01)


def gemm_rs_product(fmt, a, b, a_scale, b_scale):
    """A @ B^T in fp64 with the format's scales."""
    a64, b64 = a.to(torch.float64), b.to(torch.float64)
    if fmt == "bf16":
        return a64 @ b64.T
    if fmt == "ptpc":
        return (a64 @ b64.T) * a_scale.double()[:, None] * b_scale.double()[None, :]
    part = torch.zeros(a.shape[0], N, dtype=torch.float64, device="cuda")
    for kb in range(-(-K // 128)):
        cols = slice(kb * 128, (kb + 1) * 128)
        column_scales = b_scale.double()[:, kb].repeat_interleave(128)[:N]
        part += (a64[:, cols] @ b64[:, cols].T) * a_scale.double()[kb][:, None] * \
            column_scales[None, :]
    return part


def gemm_rs_torch(comm, stream, fmt, plugin, seed):
    """Per mode, two calls (m 512 and 1024): this rank's rows of sum_r A_r @ B_r^T against an
    fp64 reference (a poisoned out= for the second); returns the errors and each mode's last
    output."""
    dtype = "bfloat16" if fmt == "bf16" else "float8_e4m3"
    scale = {"bf16": None, "ptpc": "ptpc", "block": "block128"}[fmt]
    errors, last = [], {}
    for mode in ("fused", "split"):
        with xccl.GemmRsOp(comm, N, K, M_MAX, dtype, scale=scale, mode=mode,
                           plugin=plugin) as op:
            op.self_test()
            for round_, m in enumerate((512, 1024)):
                want = None
                for r in range(comm.size):
                    operands = gemm_rs_operands(fmt, m, seed + round_, r)
                    part = gemm_rs_product(fmt, *operands)
                    want = part if want is None else want + part
                    if r == comm.rank:
                        mine = operands
                rows = m // comm.size
                if round_ == 0:
                    got = op(*mine)
                else:
                    out = torch.full((rows, N), float("nan"), dtype=torch.bfloat16,
                                     device="cuda")
                    got = op(*mine, out=out)
                    assert got.data_ptr() == out.data_ptr()
                stream.synchronize()
                errors.append(rel_l2(got, want[comm.rank * rows:(comm.rank + 1) * rows]))
                last[mode] = got.clone()
    return errors, last


@pytest.mark.parametrize("plugin", ["reference", "cublaslt"])
@pytest.mark.parametrize("fmt", ["bf16", "ptpc", "block"])
def test_gemm_rs_torch_tensors_against_fp64(fmt, plugin):
    seed = int.from_bytes(os.urandom(3), "little")
    for rank, (errors, last) in enumerate(on_threads(2, gemm_rs_torch, fmt, plugin, seed)):
        assert len(errors) == 4
        assert all(e < 1e-2 for e in errors), f"rank {rank}: relative L2 {errors}"
        if plugin == "reference":  # each band as the full run computes it
            assert torch.equal(bits(last["fused"]), bits(last["split"])), \
                f"rank {rank}: fused and split differ"


def captured(comm, stream, meet, seed):
    """One all_gather and one fused ag_gemm captured in a torch.cuda.graph, replayed 3 times
    with fresh data copied into the captured inputs; every replay checked."""
    count = 12345
    inp = torch.empty(count, device="cuda")
    out = torch.empty(count * comm.size, device="cuda")
    op = xccl.AgGemmOp(comm, N, K, M_MAX, "float8_e4m3", scale="ptpc", plugin="cublaslt")
    op.self_test()
    m = 512
    a = torch.empty(m, K, device="cuda", dtype=torch.float8_e4m3fn)
    a_scale = torch.empty(m, device="cuda")
    b = torch.empty(N, K, device="cuda", dtype=torch.float8_e4m3fn)
    b_scale = torch.empty(N, device="cuda")
    c = torch.empty(comm.size * op.padded_m(m), N, device="cuda", dtype=torch.bfloat16)
    stream.synchronize()
    meet.wait()  # no rank has work pending when the captures begin (torch syncs the device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
        comm.all_gather(out, inp)
        op(a, b, a_scale, b_scale, out=c)
    meet.wait()
    replays = []
    for replay in range(3):
        g = torch.Generator(device="cuda").manual_seed(seed + replay)
        blocks = [torch.randn(count, generator=g, device="cuda") for _ in range(comm.size)]
        sources, a_scales, b_new, b_scale_new = make_operands("ptpc", m, seed + replay,
                                                              comm.rank, comm.size)
        inp.copy_(blocks[comm.rank])
        a.copy_(sources[comm.rank])
        a_scale.copy_(a_scales[comm.rank])
        b.copy_(b_new)
        b_scale.copy_(b_scale_new)
        out.fill_(float("nan"))
        c.fill_(float("nan"))
        graph.replay()
        stream.synchronize()
        gathered = torch.equal(out, torch.cat(blocks))
        error = rel_l2(c, reference("ptpc", sources, a_scales, b_new, b_scale_new,
                                    op.padded_m(m)))
        replays.append((gathered, error))
    stream.synchronize()
    meet.wait()
    op.destroy()
    return replays


@needs_queues
def test_graph_capture_replays_with_fresh_data():
    meet = threading.Barrier(2, timeout=LIMIT_S)
    seed = int.from_bytes(os.urandom(3), "little")
    for rank, replays in enumerate(on_threads(2, captured, meet, seed)):
        for i, (gathered, error) in enumerate(replays):
            assert gathered, f"rank {rank}, replay {i}: all_gather differs"
            assert error < 1e-2, f"rank {rank}, replay {i}: ag_gemm relative L2 {error}"
