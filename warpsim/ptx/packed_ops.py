"""f16 / bf16 scalar and f16x2 / bf16x2 packed arithmetic: add, sub, mul, fma (.relu, .sat, .ftz),
min/max (.NaN, .xorsign.abs), neg, abs.  Correctly rounded through the soft-float core; NaN results
are the canonical 0x7fff of both formats.  A packed register holds element 0 in bits 0-15."""

from __future__ import annotations

import numpy as np

from .alu_rows import row
from .float_ops import arith, fma, flush, is_nan, minmax

_H = r"(?P<t>f16|f16x2|bf16|bf16x2)"


def lanes(fn, t, *xs):
    """Apply fn(base format, *halves) to each 16-bit half of packed words, or once for scalars."""
    base = t.replace("x2", "")
    if not t.endswith("x2"):
        return fn(base, *[np.asarray(x).astype(np.uint16) for x in xs])
    lo = fn(base, *[(np.asarray(x) & np.uint32(0xFFFF)).astype(np.uint16) for x in xs])
    hi = fn(base, *[(np.asarray(x) >> np.uint32(16)).astype(np.uint16) for x in xs])
    return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))


def _relu(r, base):
    neg = (r >> np.uint16(15)) == 1
    return np.where(is_nan(r, base), r, np.where(neg, np.uint16(0), r)).astype(np.uint16)


@row(r"(?P<op>add|sub|mul)(?:\.rn)?(?P<ftz>\.ftz)?(?P<sat>\.sat)?\." + _H, "{t}", ["{t}", "{t}"])
def _half_arith(m, a, b):
    return lanes(lambda f, x, y: arith(m["op"], x, y, f, "rn", ftz=bool(m["ftz"]), sat=bool(m["sat"])),
                 m["t"], a, b)


@row(r"fma\.rn(?P<ftz>\.ftz)?(?P<sat>\.sat)?(?P<relu>\.relu)?\." + _H, "{t}", ["{t}", "{t}", "{t}"],
     note=".relu: negative results +0, NaN stays the canonical NaN")
def _half_fma(m, a, b, c):
    def one(f, x, y, z):
        r = fma(x, y, z, f, "rn", ftz=bool(m["ftz"]), sat=bool(m["sat"]))
        return _relu(r, f) if m["relu"] else r
    return lanes(one, m["t"], a, b, c)


@row(r"(?P<op>min|max)(?P<ftz>\.ftz)?(?P<nan>\.NaN)?(?P<xs>\.xorsign\.abs)?\." + _H, "{t}", ["{t}", "{t}"])
def _half_minmax(m, a, b):
    return lanes(lambda f, x, y: minmax(m["op"], x, y, f, nan=bool(m["nan"]), xorsign=bool(m["xs"]),
                                        ftz=bool(m["ftz"])), m["t"], a, b)


@row(r"(?P<op>neg|abs)(?P<ftz>\.ftz)?\." + _H, "{t}", ["{t}"],
     note="sign bit flipped / cleared, NaN included (capture pending)")
def _half_absneg(m, a):
    def one(f, x):
        if m["ftz"]:
            x = flush(x, f)
        return (x ^ np.uint16(0x8000)) if m["op"] == "neg" else (x & np.uint16(0x7FFF))
    return lanes(one, m["t"], a)

