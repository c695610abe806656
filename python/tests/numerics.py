"""bfloat16 and float8 e4m3 by their bits in numpy (numpy has neither type), and the fp64
references of the ag_gemm formats."""

import numpy as np


def bf16_bits(values):
    """float32 -> bfloat16 bits (uint16), rounded to nearest even."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_values(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(
        np.float64)


def _e4m3_table():
    """The value of every e4m3 (fn) byte: bias 7, no infinities, 0x7f and 0xff NaN."""
    table = np.empty(256, np.float64)
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exponent, mantissa = (byte >> 3) & 0xF, byte & 0x7
        if exponent == 0xF and mantissa == 0x7:
            table[byte] = np.nan
        elif exponent == 0:
            table[byte] = sign * mantissa / 8.0 * 2.0**-6
        else:
            table[byte] = sign * (1.0 + mantissa / 8.0) * 2.0**(exponent - 7)
    return table


E4M3 = _e4m3_table()
_finite = np.where(np.isfinite(E4M3))[0]
_order = _finite[np.argsort(E4M3[_finite], kind="stable")]
_sorted = E4M3[_order]


def e4m3_bits(values):
    """float -> the nearest e4m3 byte (values beyond +-448 clamp)."""
    v = np.clip(np.asarray(values, np.float64), -448.0, 448.0)
    hi = np.clip(np.searchsorted(_sorted, v), 1, len(_sorted) - 1)
    lo = hi - 1
    pick = np.where(np.abs(_sorted[hi] - v) < np.abs(v - _sorted[lo]), hi, lo)
    return _order[pick].astype(np.uint8)


def e4m3_values(bits):
    return E4M3[np.asarray(bits, np.uint8)]


def rel_l2(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def reference_c(sources, b, padded_m, scale=None, a_scales=None, b_scale=None):
    """C = concat(A_s padded to padded_m rows) @ B^T in fp64. scale None: values; "ptpc":
    a_scales[s] [m], b_scale [n]; "block128": a_scales[s] [KB][m], b_scale [ceil(n/128)][KB]."""
    n, k = b.shape
    c = np.zeros((len(sources) * padded_m, n))
    for s, a in enumerate(sources):
        m = a.shape[0]
        if scale is None:
            part = a @ b.T
        elif scale == "ptpc":
            part = (a @ b.T) * a_scales[s][:, None] * b_scale[None, :]
        else:
            part = np.zeros((m, n))
            for kb in range(-(-k // 128)):
                block = a[:, kb * 128:(kb + 1) * 128] @ b[:, kb * 128:(kb + 1) * 128].T
                column_scales = np.repeat(b_scale[:, kb], 128)[:n]
                part += block * a_scales[s][kb][:, None] * column_scales[None, :]
        c[s * padded_m:s * padded_m + m] = part
    return c


def round_to_format(values, mantissa_bits, min_exponent, largest):
    """float64 values rounded once, to nearest even, to a binary format with `mantissa_bits`
    stored bits, normals from 2**min_exponent (subnormals below) and `largest` finite;
    beyond it +-largest where the format saturates (fp8), else left to the caller."""
    v = np.asarray(values, np.float64)
    exponent = np.floor(np.log2(np.where(v == 0, 1.0, np.abs(v))))
    quantum = np.exp2(np.maximum(exponent, min_exponent) - mantissa_bits)
    rounded = np.round(v / quantum) * quantum  # numpy rounds halves to even
    return np.clip(rounded, -largest, largest)


def e5m2_bits(values):
    """float -> e5m2 byte, rounded to nearest even, saturating at +-57344 (fp16's top byte)."""
    exact = round_to_format(values, 2, -14, 57344.0)
    return (exact.astype(np.float16).view(np.uint16) >> 8).astype(np.uint8)


def e5m2_values(bits):
    return (np.asarray(bits, np.uint8).astype(np.uint16) << 8).view(np.float16).astype(np.float64)


def e4m3_bits_exact(values):
    """e4m3 bytes of values that e4m3 holds exactly (round_to_format's), the sign of zero kept."""
    v = np.asarray(values, np.float64)
    magnitude = np.searchsorted(E4M3[:0x7F], np.abs(v)).astype(np.uint8)
    return magnitude | np.where(np.signbit(v), 0x80, 0).astype(np.uint8)
