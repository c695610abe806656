"""The stream handle a call goes on: the caller's, else the current stream of the framework
whose tensors it passed (torch, cupy), else none (the host platform; the legacy default stream
on a GPU)."""

import sys


def handle(stream):
    """The cudaStream_t / hipStream_t of a stream object: torch.cuda.Stream, cupy's, an int."""
    if stream is None:
        return None
    for attribute in ("cuda_stream", "ptr", "value"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value or None
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream or None
    raise TypeError(f"xccl: stream {stream!r} is neither a torch or cupy stream nor a handle (int)")


def resolve(stream, platform, tensors, device_id):
    if stream is not None:
        return handle(stream)
    if platform == "host":
        return None
    frameworks = {t.framework for t in tensors}
    # No tensors (a barrier): the current stream of a framework in use.
    if (not tensors or "torch" in frameworks) and "torch" in sys.modules:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # an int, no Stream object
        if raw is not None:
            return raw(device_id) or None
        return torch.cuda.current_stream(device_id).cuda_stream or None
    if "cupy" in frameworks and "cupy" in sys.modules:
        import cupy
        return cupy.cuda.get_current_stream().ptr or None
    return None
