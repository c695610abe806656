"""xccl's reduction ops (xcclRedOp_t, numbered as ncclRedOp_t) and the names a caller may use."""

import enum


class RedOp(enum.IntEnum):
    sum = 0
    prod = 1
    max = 2
    min = 3
    avg = 4


_ALIASES = {"sum": RedOp.sum, "prod": RedOp.prod, "product": RedOp.prod, "max": RedOp.max,
            "min": RedOp.min, "avg": RedOp.avg, "mean": RedOp.avg}


def resolve(op):
    """A RedOp from a RedOp, its number, or a name (case-insensitive; torch's ReduceOp names
    such as "SUM" and "AVG" too)."""
    if isinstance(op, RedOp):
        return op
    if isinstance(op, int) and not isinstance(op, bool):
        if 0 <= op < len(RedOp):
            return RedOp(op)
        raise ValueError(f"xccl: op {op} is not a reduction op (0..{len(RedOp) - 1})")
    name = getattr(op, "name", op)  # an enum member of another library
    if isinstance(name, str) and name.lower() in _ALIASES:
        return _ALIASES[name.lower()]
    raise ValueError(f"xccl: unknown reduction op {op!r}; one of {', '.join(RedOp.__members__)}")
