"""all_gather of every data type, in and out of place, against numpy, and barrier; 2, 3 and 4
ranks as threads (init_all) and as processes."""

import numpy as np
import pytest

import xccl
from conftest import host_only
from numerics import bf16_bits, e4m3_bits
from ranks import fresh_seed, rank_seed, run_ranks

pytestmark = host_only

# (xccl type, numpy dtype holding it, how to draw values)
TYPES = [
    ("int8", np.int8, "int"), ("uint8", np.uint8, "int"), ("int32", np.int32, "int"),
    ("uint32", np.uint32, "int"), ("int64", np.int64, "int"), ("uint64", np.uint64, "int"),
    ("float16", np.float16, "float"), ("float32", np.float32, "float"),
    ("float64", np.float64, "float"), ("bfloat16", np.uint16, "bf16"),
    ("float8_e4m3", np.uint8, "e4m3"), ("float8_e5m2", np.uint8, "int"),
]
COUNTS = [1, 7, 1000, 40503]  # 40503: past the inbox size, odd


def draw(kind, np_type, count, seed):
    rng = np.random.default_rng(seed)
    if kind == "int":
        info = np.iinfo(np_type)
        return rng.integers(info.min, info.max, size=count, dtype=np_type, endpoint=True)
    if kind == "float":
        return rng.standard_normal(count).astype(np_type)
    if kind == "bf16":
        return bf16_bits(rng.standard_normal(count))
    return e4m3_bits(rng.standard_normal(count) * 8)


def gather_every_type(comm, seed):
    """Every type and count, out of place then in place; returns how many were checked."""
    checked = 0
    for t_index, (name, np_type, kind) in enumerate(TYPES):
        for count in COUNTS:
            blocks = [draw(kind, np_type, count, rank_seed(seed, r, t_index * 100 + count))
                      for r in range(comm.size)]
            want = np.concatenate(blocks)
            explicit = name if name in ("bfloat16", "float8_e4m3", "float8_e5m2") else None
            out = np.empty(count * comm.size, np_type)
            out.view(np.uint8)[:] = 0xA5  # poison
            result = comm.all_gather(out, blocks[comm.rank], dtype=explicit)
            assert result is out
            np.testing.assert_array_equal(out, want, err_msg=f"{name} x {count} out of place")
            inplace = np.empty(count * comm.size, np_type)
            inplace.view(np.uint8)[:] = 0x5A
            inplace[comm.rank * count:(comm.rank + 1) * count] = blocks[comm.rank]
            comm.all_gather(inplace, inplace[comm.rank * count:(comm.rank + 1) * count],
                            dtype=explicit)
            np.testing.assert_array_equal(inplace, want, err_msg=f"{name} x {count} in place")
            checked += 2
    return checked


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("world", [2, 3, 4])
def test_all_gather_every_type_in_and_out_of_place(world, mode):
    results = run_ranks(world, mode, gather_every_type, fresh_seed())
    assert results == [2 * len(TYPES) * len(COUNTS)] * world


def barrier_orders(comm, rounds):
    """Each round: every rank writes its round into a shared numpy array after a barrier,
    then checks, after another barrier, that every rank did: a rank leaving a barrier early
    would read a stale entry."""
    seen = []
    board = np.zeros(comm.size, np.int64)
    for r in range(1, rounds + 1):
        mine = np.array([r * 1000 + comm.rank], np.int64)
        comm.barrier()
        comm.all_gather(board, mine)  # the board holds every rank's entry of this round
        comm.barrier()
        seen.append(board.copy())
    return [list(b) for b in seen]


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("world", [2, 3, 4])
def test_barrier(world, mode):
    rounds = 20
    results = run_ranks(world, mode, barrier_orders, rounds)
    want = [[r * 1000 + q for q in range(world)] for r in range(1, rounds + 1)]
    assert results == [want] * world


def describe_comm(comm):
    return (comm.rank, comm.size, comm.device, repr(comm))


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_rank_size_device(mode):
    results = run_ranks(3, mode, describe_comm)
    assert [r[:2] for r in results] == [(0, 3), (1, 3), (2, 3)]
    assert all("xccl.Communicator rank" in r[3] for r in results)


def test_unique_id_round_trips_as_bytes_and_pickle():
    import pickle
    uid = xccl.UniqueId()
    raw = bytes(uid)
    assert len(raw) == 128
    assert xccl.UniqueId(raw) == uid
    assert pickle.loads(pickle.dumps(uid)) == uid
    assert xccl.UniqueId() != uid  # each id is new
