#!/usr/bin/env python3
"""A small model trained with torch.distributed over whatever libnccl.so.2 the processes load
(the xccl shim where torch_train_check.sh preloads it), checked against one process that trains
the same model on the whole global batch.

Modes:
  ddp   DistributedDataParallel: every rank starts from its own random weights, so the model
        broadcast at wrap time (ncclBroadcast) is what makes the ranks agree; gradients are
        all-reduced per bucket (ncclAllReduce).
  fsdp  FSDP2 (fully_shard on every Linear and on the root): parameters all-gathered
        (ncclAllGather), gradients reduce-scattered (ncclReduceScatter).
Every step the ranks' local losses are averaged with all_reduce(AVG); rank 0 writes them, and the
launcher compares them with the single-process losses of the same steps (fp32, TF32 off): the
largest relative difference must stay within --rtol. The global batch is split evenly, so the
mean of the local mean losses is the global mean loss and the averaged gradient is its gradient.

Usage: torch_train_check.py --world N --mode ddp|fsdp [--same-gpu] [--steps S] [--label text]
                           [--expect-lib PATH]
Exit status 0 only if every rank finished and the losses match.
"""
import argparse
import json
import os
import sys
import tempfile
import time

from torch_ranks import loaded_nccl_libraries, run_ranks

IN, HIDDEN, OUT, BATCH = 32, 128, 8, 64


def make_model(torch, seed, device):
    torch.manual_seed(seed)
    nn = torch.nn
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                         nn.Linear(HIDDEN, OUT)).to(device)


def global_batch(torch, step, device):
    """Step `step`'s inputs and targets, the same in every process."""
    gen = torch.Generator(device="cpu").manual_seed(7)
    teacher = torch.randn(IN, OUT, generator=gen)
    gen.manual_seed(1000 + step)
    x = torch.randn(BATCH, IN, generator=gen)
    return x.to(device), torch.sin(x @ teacher).to(device)


def reference_losses(torch, steps, lr, device):
    model = make_model(torch, 0, device)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = global_batch(torch, step, device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def worker(args):
    import torch
    import torch.distributed as dist

    torch.backends.cuda.matmul.allow_tf32 = False
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", 0 if args.same_gpu else rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=os.environ["XCCL_CHECK_INIT"], rank=rank,
                            world_size=world, device_id=device)
    if args.mode == "ddp":
        # Weights that differ per rank: only the broadcast at wrap time makes them rank 0's.
        model = torch.nn.parallel.DistributedDataParallel(make_model(torch, rank, device),
                                                          device_ids=[device.index])
    else:
        from torch.distributed.fsdp import fully_shard
        model = make_model(torch, 0, device)
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    share = BATCH // world
    losses, times = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        x, y = global_batch(torch, step, device)
        x, y = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(mean.item())  # synchronises: the step's time includes its collectives
        times.append(time.perf_counter() - start)
    times = sorted(times[10:])
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"losses": losses, "step_ms": 1e3 * times[len(times) // 2],
                       "libraries": loaded_nccl_libraries()}, f)
    dist.destroy_process_group()
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--mode", choices=("ddp", "fsdp"), default="ddp")
    parser.add_argument("--same-gpu", action="store_true")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--label", default="")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--expect-lib", default="",
                        help="a path that must be among the libnccl files rank 0 mapped (the shim)")
    parser.add_argument("--out", default="")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.exit(worker(args))
    if args.world < 1 or BATCH % args.world:
        parser.error(f"--world must divide the global batch of {BATCH}")
    if args.steps < 11:
        parser.error("--steps must be at least 11 (the first 10 are left out of the step time)")

    out = os.path.join(tempfile.mkdtemp(), "losses.json")
    argv = [sys.executable, os.path.abspath(__file__), "--worker", "--world", str(args.world),
            "--mode", args.mode, "--steps", str(args.steps), "--lr", str(args.lr), "--out", out]
    if args.same_gpu:
        argv.append("--same-gpu")
    codes = run_ranks(argv, args.world, args.timeout)
    what = (f"torch_train_check {args.label} {args.mode} world {args.world}"
            f"{' sharing GPU 0' if args.same_gpu else ''}")
    if not all(c == 0 for c in codes) or not os.path.exists(out):
        print(f"{what}: FAIL (exit codes {codes})", flush=True)
        sys.exit(1)
    with open(out) as f:
        run = json.load(f)

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    want = reference_losses(torch, args.steps, args.lr, torch.device("cuda", 0))
    got = run["losses"]
    worst = max(abs(g - w) / max(abs(w), 1e-12) for g, w in zip(got, want))
    loaded = not args.expect_lib or args.expect_lib in run["libraries"]
    ok = len(got) == len(want) and worst <= args.rtol and loaded
    print(f"{what}: {'PASS' if ok else 'FAIL'}; {len(got)} steps, loss {got[0]:.5f} -> "
          f"{got[-1]:.5f} (single process {want[0]:.5f} -> {want[-1]:.5f}), largest relative "
          f"difference {worst:.2e} (bound {args.rtol:g}); median step {run['step_ms']:.2f} ms; "
          f"libnccl: {' '.join(run['libraries'])}"
          f"{'' if loaded else f' (not {args.expect_lib}: the preload did not take)'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
