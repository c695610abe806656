"""reduce_scatter and all_reduce of every data type and op, in and out of place, 2, 3 and 4
ranks as threads and processes, every element against a reference computed here in rank order
(xccl.h: narrow floats accumulate in fp32 and round once, integers wrap, avg truncates toward
zero); the outputs' bits equal on every rank. The same as processes split into fake nodes (2+2,
2+1), against the node-by-node order. Then broadcast from every root, bit for bit."""

import numpy as np
import pytest

import xccl
from conftest import host_only
from numerics import (bf16_bits, bf16_values, e4m3_bits_exact, e4m3_values, e5m2_bits,
                      e5m2_values, round_to_format)
from ranks import fresh_seed, rank_seed, run_ranks

pytestmark = host_only

# xccl type -> (numpy storage, accumulator, bits -> accumulator values, accumulator -> bits)
FORMATS = {
    "int8": (np.int8, None), "uint8": (np.uint8, None), "int32": (np.int32, None),
    "uint32": (np.uint32, None), "int64": (np.int64, None), "uint64": (np.uint64, None),
    "float16": (np.float16, (lambda x: x.astype(np.float32), lambda a: a.astype(np.float16))),
    "float32": (np.float32, (lambda x: x, lambda a: a)),
    "float64": (np.float64, (lambda x: x, lambda a: a)),
    "bfloat16": (np.uint16, (lambda x: bf16_values(x).astype(np.float32), bf16_bits)),
    "float8_e4m3": (np.uint8, (lambda x: e4m3_values(x).astype(np.float32),
                               lambda a: e4m3_bits_exact(round_to_format(a, 3, -6, 448.0)))),
    "float8_e5m2": (np.uint8, (lambda x: e5m2_values(x).astype(np.float32), e5m2_bits)),
}
NAMED_BY_DTYPE = ("bfloat16", "float8_e4m3", "float8_e5m2")  # numpy has no such dtype
OPS = ["sum", "prod", "max", "min", "avg"]


def draw(name, count, seed):
    """Fresh values of every type: integers over their whole range (sums and products wrap),
    floats near 1 in magnitude with random signs (products of four stay finite)."""
    rng = np.random.default_rng(seed)
    storage, _ = FORMATS[name]
    if name.startswith(("int", "uint")):
        info = np.iinfo(storage)
        return rng.integers(info.min, info.max, size=count, dtype=storage, endpoint=True)
    values = rng.standard_normal(count) * 2
    if name == "bfloat16":
        return bf16_bits(values)
    if name == "float8_e4m3":
        return e4m3_bits_exact(round_to_format(values, 3, -6, 448.0))
    if name == "float8_e5m2":
        return e5m2_bits(values)
    return values.astype(storage)


def reference(name, op, inputs, nodes=None):
    """Every rank's input reduced in rank order, as xccl.h promises; with `nodes` (ranks per
    node, in rank order) node by node: each node's ranks into an unrounded accumulator, then the
    nodes' accumulators in order, rounded once."""
    storage, floats = FORMATS[name]
    n = len(inputs)
    if floats is None:
        acc = inputs[0].copy()
        with np.errstate(over="ignore"):
            for x in inputs[1:]:
                if op in ("sum", "avg"):
                    acc = (acc + x).astype(storage)
                elif op == "prod":
                    acc = (acc * x).astype(storage)
                else:
                    acc = np.maximum(acc, x) if op == "max" else np.minimum(acc, x)
        if op == "avg":  # the wrapped sum, truncated toward zero
            q = acc // storage(n)
            if np.issubdtype(storage, np.signedinteger):
                q = q + ((acc % storage(n) != 0) & (acc < 0)).astype(storage)
            acc = q.astype(storage)
        return acc
    load, store = floats

    def combine(values):
        acc = values[0].copy()
        for v in values[1:]:
            if op in ("sum", "avg"):
                acc = acc + v
            elif op == "prod":
                acc = acc * v
            else:  # the earlier rank's value on a tie, as xccl: +0 and -0 keep their order
                acc = np.where(acc < v, v, acc) if op == "max" else np.where(v < acc, v, acc)
        return acc

    loaded = [load(x) for x in inputs]
    ends = np.cumsum(nodes if nodes else [n])
    with np.errstate(over="ignore", invalid="ignore"):
        acc = combine([combine(loaded[end - size:end]) for size, end in
                       zip(nodes if nodes else [n], ends)])
        if op == "avg":
            acc = acc / acc.dtype.type(n)
        return store(acc)


COUNTS = [1, 7, 1000, 20011]  # 20011 x 4 ranks x 8 bytes: past one region step, odd


def reduce_every_type(comm, seed, nodes=None, counts=COUNTS):
    """Every type x op x count, reduce_scatter and all_reduce, out of place then in place;
    returns the outputs' bytes (compared across ranks by the caller) and how many were checked.
    `nodes`: the ranks per node the communicator was split into (XCCL_FAKE_NODES)."""
    outputs, checked = [], 0
    for t_index, name in enumerate(FORMATS):
        storage = FORMATS[name][0]
        explicit = name if name in NAMED_BY_DTYPE else None
        for o_index, op in enumerate(OPS):
            for count in counts:
                tag = (t_index * 10 + o_index) * 100000 + count
                inputs = [draw(name, count * comm.size, rank_seed(seed, r, tag))
                          for r in range(comm.size)]
                want = reference(name, op, inputs, nodes)
                mine = inputs[comm.rank]
                what = f"{name} {op} x {count}"
                block = want[comm.rank * count:(comm.rank + 1) * count]
                # reduce_scatter: out of place, then into inp's own block
                out = np.empty(count, storage)
                out.view(np.uint8)[:] = 0xA5
                assert comm.reduce_scatter(out, mine, op=op, dtype=explicit) is out
                np.testing.assert_array_equal(out.view(np.uint8), block.view(np.uint8),
                                              err_msg=f"reduce_scatter {what}")
                inp = mine.copy()
                own = inp[comm.rank * count:(comm.rank + 1) * count]
                comm.reduce_scatter(own, inp, op=op, dtype=explicit)
                np.testing.assert_array_equal(own.view(np.uint8), block.view(np.uint8),
                                              err_msg=f"reduce_scatter {what} in place")
                # all_reduce: into out, then in place
                out = np.empty(count * comm.size, storage)
                out.view(np.uint8)[:] = 0x5A
                assert comm.all_reduce(mine, op=op, out=out, dtype=explicit) is out
                np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8),
                                              err_msg=f"all_reduce {what}")
                tensor = mine.copy()
                assert comm.all_reduce(tensor, op=xccl.RedOp[op], dtype=explicit) is tensor
                np.testing.assert_array_equal(tensor.view(np.uint8), want.view(np.uint8),
                                              err_msg=f"all_reduce {what} in place")
                outputs.append(out.tobytes())
                checked += 4
    return checked, outputs


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("world", [2, 3, 4])
def test_reductions_every_type_and_op_in_and_out_of_place(world, mode):
    results = run_ranks(world, mode, reduce_every_type, fresh_seed())
    assert [r[0] for r in results] == [4 * len(FORMATS) * len(OPS) * len(COUNTS)] * world
    assert all(r[1] == results[0][1] for r in results), "the outputs' bits differ between ranks"


@pytest.mark.parametrize("nodes", [[2, 2], [2, 1]])
def test_reductions_across_fake_nodes(nodes, monkeypatch):
    """Processes split into nodes (the other node's ranks over sockets): node by node, as
    xccl.h promises, every type and op."""
    monkeypatch.setenv("XCCL_FAKE_NODES", ",".join(map(str, nodes)))
    monkeypatch.setenv("XCCL_SOCKET_IFNAME", "lo")
    world = sum(nodes)
    counts = [1, 7, 20011]
    results = run_ranks(world, "processes", reduce_every_type, fresh_seed(), nodes, counts)
    assert [r[0] for r in results] == [4 * len(FORMATS) * len(OPS) * len(counts)] * world
    assert all(r[1] == results[0][1] for r in results), "the outputs' bits differ between ranks"


def test_op_names():
    assert xccl.RedOp.avg == 4 and len(xccl.RedOp) == 5


def broadcast_every_root_and_type(comm, seed):
    """Every root and type, random bytes (NaN payloads included), in place and into out."""
    checked = 0
    for root in range(comm.size):
        for t_index, name in enumerate(FORMATS):
            storage = FORMATS[name][0]
            explicit = name if name in NAMED_BY_DTYPE else None
            for count in COUNTS:
                rng = np.random.default_rng(rank_seed(seed, root, t_index * 100000 + count))
                want = rng.integers(0, 256, size=count * np.dtype(storage).itemsize,
                                    dtype=np.uint8).view(storage)
                mine = want.copy() if comm.rank == root else np.full(count, 0, storage)
                out = np.empty(count, storage)
                out.view(np.uint8)[:] = 0xA5
                assert comm.broadcast(mine, root=root, out=out, dtype=explicit) is out
                np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8),
                                              err_msg=f"broadcast {name} x {count} from {root}")
                assert comm.broadcast(mine, root=root, dtype=explicit) is mine
                np.testing.assert_array_equal(mine.view(np.uint8), want.view(np.uint8),
                                              err_msg=f"in-place broadcast {name} x {count}")
                checked += 2
    return checked


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("world", [2, 3])
def test_broadcast_every_root_and_type(world, mode):
    results = run_ranks(world, mode, broadcast_every_root_and_type, fresh_seed())
    assert results == [2 * world * len(FORMATS) * len(COUNTS)] * world
