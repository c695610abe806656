"""What the PyTorch checks over the NCCL shim share: a free port for the rendezvous, the libnccl
files a process has mapped (which library torch is really using), and one process per rank
started from the same script with a common deadline."""
import os
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loaded_nccl_libraries():
    """The libnccl files mapped into this process (proves which library torch is using)."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libnccl" in line:
                paths.add(line.split()[-1])
    return sorted(paths)


def run_ranks(argv, world, timeout, extra_env=None):
    """Starts `argv` once per rank (RANK, WORLD_SIZE and a tcp:// rendezvous in XCCL_CHECK_INIT)
    and waits for all of them until the deadline; returns the exit codes, "timeout" for a rank
    still running then (it is killed)."""
    env = dict(os.environ, WORLD_SIZE=str(world),
               XCCL_CHECK_INIT=f"tcp://127.0.0.1:{free_port()}", NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1", PYTHONUNBUFFERED="1", **(extra_env or {}))
    procs = [subprocess.Popen(argv, env=dict(env, RANK=str(r))) for r in range(world)]
    deadline = time.time() + timeout
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(1.0, deadline - time.time())))
        except subprocess.TimeoutExpired:
            codes.append("timeout")
    for p in procs:
        if p.poll() is None:
            p.kill()
    return codes
