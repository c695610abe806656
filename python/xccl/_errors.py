"""XcclError: a failed C call, with its result code and the library's message."""

import enum

from ._library import lib


class Result(enum.IntEnum):
    """xcclResult_t (xccl.h), numbered as ncclResult_t."""
    SUCCESS = 0
    UNHANDLED_DEVICE_ERROR = 1
    SYSTEM_ERROR = 2
    INTERNAL_ERROR = 3
    INVALID_ARGUMENT = 4
    INVALID_USAGE = 5
    REMOTE_ERROR = 6
    IN_PROGRESS = 7
    TIMEOUT = 8


class XcclError(RuntimeError):
    """A C call returned something other than xcclSuccess.

    `result` is the code (a Result where it is a known one), `message` the text of
    xcclGetLastError for the communicator (or the calling thread).
    """

    def __init__(self, call, result, message):
        try:
            result = Result(result)
        except ValueError:
            pass
        self.call = call
        self.result = result
        self.message = message
        name = result.name if isinstance(result, Result) else str(result)
        super().__init__(f"{call} failed: {name} ({int(result)}): {message}")


def check(call, result, comm_handle=None):
    """Raises XcclError for a failed call; the message is the communicator's last error."""
    if result != 0:
        text = lib.xcclGetLastError(comm_handle)
        raise XcclError(call, result, text.decode(errors="replace") if text else "")
