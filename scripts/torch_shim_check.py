#!/usr/bin/env python3
"""PyTorch's torch.distributed (nccl backend) over whatever libnccl.so.2 the process loads.

Run it with the xccl shim preloaded (scripts/torch_shim_check.sh does) and it checks that the
shim is the library in use, then, per rank process:
  - all_gather_into_tensor (native in the shim) on fresh random data of several sizes and
    dtypes, the output poisoned with NaN first, every element compared with the inputs the
    other ranks regenerate from their seeds;
  - all_reduce (forwarded to the real NCCL) against a float64 sum of the same inputs, and
    barrier (an all_reduce in the nccl backend), unless --gather-only (ranks sharing a GPU:
    NCCL refuses those communicators, so the forwarded ops cannot run there);
  - the median time of a 64 MiB (per rank) all_gather_into_tensor over 20 calls.

Usage: torch_shim_check.py --world N [--same-gpu] [--gather-only] [--label text]
Exit status 0 only if every rank passed. Every rank has a deadline (--timeout seconds).
"""
import argparse
import os
import sys

from torch_ranks import loaded_nccl_libraries, run_ranks


def rank_input(torch, rank, call, numel, dtype, device):
    """The tensor rank `rank` contributes to call `call`: any rank can regenerate it."""
    gen = torch.Generator(device="cpu").manual_seed(1000003 * rank + 7919 * call + numel)
    return torch.randn(numel, generator=gen, dtype=torch.float32).to(dtype).to(device)


def worker(args):
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = 0 if args.same_gpu else rank
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=os.environ["XCCL_CHECK_INIT"], rank=rank,
                            world_size=world)
    failures = []
    dev = torch.device("cuda", device)
    call = 0
    for dtype in (torch.float32, torch.bfloat16):
        for numel in (1, 1000, (1 << 20) + 3):
            call += 1
            mine = rank_input(torch, rank, call, numel, dtype, dev)
            out = torch.full((world * numel,), float("nan"), dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, mine)
            torch.cuda.synchronize()
            for src in range(world):
                want = rank_input(torch, src, call, numel, dtype, dev)
                got = out[src * numel:(src + 1) * numel]
                if not torch.equal(got, want):
                    bad = (got != want).sum().item()
                    failures.append(f"all_gather {dtype} numel {numel}: {bad} wrong from rank {src}")
            if not args.gather_only:
                x = rank_input(torch, rank, call, numel, torch.float32, dev)
                dist.all_reduce(x)
                ref = sum(rank_input(torch, s, call, numel, torch.float32, dev).double()
                          for s in range(world))
                err = (x.double() - ref).abs().max().item()
                if err > 1e-4 * world:
                    failures.append(f"all_reduce numel {numel}: max error {err}")
    if not args.gather_only:
        dist.barrier()

    # Timing: 64 MiB per rank, median of 20 calls after 5 warm-ups.
    numel = (64 << 20) // 4
    mine = torch.randn(numel, device=dev)
    out = torch.empty(world * numel, device=dev)
    times = []
    for i in range(25):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dist.all_gather_into_tensor(out, mine)
        stop.record()
        stop.synchronize()
        if i >= 5:
            times.append(start.elapsed_time(stop) * 1000.0)
    times.sort()
    median_us = times[len(times) // 2]
    if not torch.equal(out[rank * numel:(rank + 1) * numel], mine):
        failures.append("timed all_gather: own block wrong")

    libs = loaded_nccl_libraries()
    status = "FAIL" if failures else "ok"
    print(f"rank {rank}/{world} device {device}: {status}; all_gather 64MiB/rank median "
          f"{median_us:.0f} us; nccl libraries: {' '.join(libs)}", flush=True)
    for f in failures[:10]:
        print(f"rank {rank}: {f}", flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=1)
    parser.add_argument("--same-gpu", action="store_true")
    parser.add_argument("--gather-only", action="store_true")
    parser.add_argument("--label", default="")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.exit(worker(args))

    argv = [sys.executable, os.path.abspath(__file__), "--worker", "--world", str(args.world)]
    if args.same_gpu:
        argv.append("--same-gpu")
    if args.gather_only:
        argv.append("--gather-only")
    codes = run_ranks(argv, args.world, args.timeout)
    ok = all(c == 0 for c in codes)
    print(f"torch_shim_check {args.label} world {args.world}"
          f"{' sharing GPU 0' if args.same_gpu else ''}: {'PASS' if ok else 'FAIL'} "
          f"(exit codes {codes})", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
