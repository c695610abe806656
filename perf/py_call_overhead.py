#!/usr/bin/env python3
"""The Python binding's cost per call against the C API: an all_gather of 8 bytes in all (one
float32 per rank at 2 ranks, as all_gather_perf -b 8 counts), thread ranks of one process,
timed through `xccl` and, in the same command, by all_gather_perf (the C harness) with the
same ranks, iterations and warm-ups. Plain calls; with --graph also graph-launched ones (10
calls captured per torch.cuda.graph, as all_gather_perf -G 10), where the binding is not on
the replay path at all. Rows: one rank (the binding's own cost, no other thread
contending for the GIL), --ranks threads (the GIL passes between them at every call) and, with
--processes, --ranks processes. Prints, per row, the median over --rounds of the slowest
rank's time per call (us), for both, and their difference.

    PYTHONPATH=<build>/python perf/py_call_overhead.py --perf <build>/perf/all_gather_perf
    ... --graph                          (GPU builds, with torch: ranks share GPU 0)
"""

import argparse
import re
import statistics
import subprocess
import sys
import threading
import time

import xccl


def time_python(comms, iters, warmup, rounds, graph):
    """Median over rounds of the slowest rank's us per call."""
    import numpy as np
    torch = None
    if xccl.platform != "host":
        import torch
    per_round = [[0.0] * len(comms) for _ in range(rounds)]
    start_line = threading.Barrier(len(comms))

    def run(comm):
        if torch is not None:
            torch.cuda.set_device(comm.device)
            stream = torch.cuda.Stream()
            torch.cuda.set_stream(stream)
            inp = torch.ones(2 // comm.size or 1, device="cuda")
            out = torch.empty(inp.numel() * comm.size, device="cuda")
        else:
            inp = np.ones(2 // comm.size or 1, np.float32)
            out = np.empty(inp.size * comm.size, np.float32)
        sync = (lambda: stream.synchronize()) if torch is not None else (lambda: None)
        for _ in range(warmup):
            comm.all_gather(out, inp)
        sync()
        launch = lambda: comm.all_gather(out, inp)  # noqa: E731
        calls = iters
        if graph:
            g = torch.cuda.CUDAGraph()
            start_line.wait()  # torch syncs the device at capture: nothing pending anywhere
            with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):
                for _ in range(10):
                    comm.all_gather(out, inp)
            start_line.wait()
            launch, calls = g.replay, max(1, iters // 10)
            for _ in range(3):
                launch()
            sync()
        for r in range(rounds):
            start_line.wait()
            t0 = time.perf_counter()
            for _ in range(calls):
                launch()
            sync()
            per_round[r][comm.rank] = (time.perf_counter() - t0) * 1e6 / iters

    threads = [threading.Thread(target=run, args=(c,)) for c in comms]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statistics.median(max(r) for r in per_round)


def _process_rank(nranks, rank, uid_bytes, iters, warmup, rounds, results):
    import numpy as np
    with xccl.Communicator(nranks, xccl.UniqueId(uid_bytes), rank) as comm:
        inp = np.ones(2 // nranks or 1, np.float32)
        out = np.empty(inp.size * nranks, np.float32)
        for _ in range(warmup):
            comm.all_gather(out, inp)
        for r in range(rounds):
            comm.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                comm.all_gather(out, inp)
            results.put((r, rank, (time.perf_counter() - t0) * 1e6 / iters))


def time_python_processes(nranks, iters, warmup, rounds):
    """As time_python, each rank a process (the host platform)."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    uid = xccl.UniqueId()
    results = ctx.Queue()
    procs = [ctx.Process(target=_process_rank,
                         args=(nranks, r, bytes(uid), iters, warmup, rounds, results))
             for r in range(nranks)]
    for p in procs:
        p.start()
    per_round = [[0.0] * nranks for _ in range(rounds)]
    for _ in range(nranks * rounds):
        r, rank, us = results.get(timeout=300)
        per_round[r][rank] = us
    for p in procs:
        p.join(60)
    return statistics.median(max(r) for r in per_round)


def time_c(perf, ranks, iters, warmup, rounds, graph, processes=False):
    """all_gather_perf's out-of-place time column (us), median over rounds (one run each)."""
    times = []
    for _ in range(rounds):
        cmd = [perf, "-np" if processes else "-t", str(ranks), "-b", "8", "-e", "8",
               "-n", str(iters), "-w", str(warmup)]
        if graph:
            cmd += ["-G", "10"]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout
        row = next(line for line in text.splitlines()
                   if line.strip() and not line.lstrip().startswith("#"))
        times.append(float(re.split(r"\s+", row.strip())[5]))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--perf", required=True, help="all_gather_perf of the same build")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--graph", action="store_true", help="also graph-launched (GPU, torch)")
    parser.add_argument("--processes", action="store_true",
                        help="also ranks as processes (host platform)")
    args = parser.parse_args()
    devices = [0] * args.ranks if xccl.platform != "host" else None
    modes = [False, True] if args.graph else [False]
    print(f"# py_call_overhead: {args.ranks} thread ranks ({xccl.platform}), 8 B all_gather, "
          f"{args.iters} calls after {args.warmup} warm-ups, median of {args.rounds} rounds "
          f"(slowest rank); libxccl {xccl.library_path}")
    print(f"# {'ranks':>11} {'mode':>6} {'python(us)':>11} {'C(us)':>8} {'overhead(us)':>13}")
    rows = [(1, "threads"), (args.ranks, "threads")]
    if args.processes:
        rows.append((args.ranks, "processes"))
    for ranks, kind in rows:
        for graph in modes:
            if kind == "processes":
                if graph:
                    continue
                py = time_python_processes(ranks, args.iters, args.warmup, args.rounds)
            else:
                comms = xccl.init_all(ranks, devices[:ranks] if devices else None)
                py = time_python(comms, args.iters, args.warmup, args.rounds, graph)
                for c in comms:
                    c.destroy()
            c_time = time_c(args.perf, ranks, args.iters, args.warmup, args.rounds, graph,
                            kind == "processes")
            label = "1 thread" if ranks == 1 else f"{ranks} {kind}"
            print(f"  {label:>11} {'graph' if graph else 'plain':>6} {py:11.2f} {c_time:8.2f} "
                  f"{py - c_time:13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
