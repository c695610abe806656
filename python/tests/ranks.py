"""Runs one body on every rank of a communicator, as threads of this process (xccl.init_all)
or as processes (multiprocessing, spawned), and hands back each rank's result. A rank that
raises fails the run with its traceback; a run that passes its limit is killed and fails."""

import multiprocessing
import os
import queue
import threading
import time
import traceback

import xccl

LIMIT_S = 120


def _threads(world, body, args):
    comms = xccl.init_all(world)
    results, errors = [None] * world, [None] * world

    def run(comm):
        try:
            results[comm.rank] = body(comm, *args)
        except BaseException:  # noqa: B902 - reported to the test
            errors[comm.rank] = traceback.format_exc()
            comm.abort()  # the peers' waits end instead of running to the deadline

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in comms]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT_S)
        if t.is_alive():
            raise AssertionError(f"a rank thread ran past {LIMIT_S} s")
    for comm in comms:
        if not comm._closed:
            comm.destroy()
    return results, errors


def _child(world, rank, uid_bytes, body, args, out):
    try:
        with xccl.Communicator(world, xccl.UniqueId(uid_bytes), rank) as comm:
            out.put((rank, "ok", body(comm, *args)))
    except BaseException:  # noqa: B902 - reported to the parent
        out.put((rank, "error", traceback.format_exc()))


def _processes(world, body, args):
    ctx = multiprocessing.get_context("spawn")
    uid = xccl.UniqueId()
    out = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(world, r, bytes(uid), body, args, out))
             for r in range(world)]
    for p in procs:
        p.start()
    results, errors = [None] * world, [None] * world
    reported = set()
    deadline = time.monotonic() + LIMIT_S
    try:
        while len(reported) < world:
            try:
                rank, status, value = out.get(timeout=0.2)
            except queue.Empty:
                # A rank that died without a word (a killed one) has no result to wait for.
                if all(procs[r].exitcode is not None for r in range(world) if r not in reported):
                    break
                if time.monotonic() > deadline:
                    missing = sorted(set(range(world)) - reported)
                    raise AssertionError(f"ranks {missing} gave no result within {LIMIT_S} s")
                continue
            reported.add(rank)
            if status == "ok":
                results[rank] = value
            else:
                errors[rank] = value
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    return results, errors


def run_ranks(world, mode, body, *args, allow_errors=False):
    """body(comm, *args) on `world` ranks; mode "threads" or "processes". Returns the results
    in rank order (and the errors, with allow_errors)."""
    results, errors = (_threads if mode == "threads" else _processes)(world, body, args)
    if allow_errors:
        return results, errors
    failed = [(r, e) for r, e in enumerate(errors) if e is not None]
    if failed:
        raise AssertionError("\n".join(f"rank {r} failed:\n{e}" for r, e in failed))
    return results


def rank_seed(seed, rank, extra=0):
    return (seed * 1000003 + rank * 7919 + extra) % (2**32)


def fresh_seed():
    return int.from_bytes(os.urandom(4), "little")
