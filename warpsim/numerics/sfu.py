"""The special-function unit (MUFU), operation by operation, as the GH100 computes it.

Each MUFU operation reduces its operand to a table index and an exponent, exactly as the exhaustive
captures show (``warpsim/hw/device/sfu_sweep.py``; the findings are in ``docs/sfu.md``):

* ``RCP``, ``RSQ``, ``SQRT`` (f32) and ``RCP64H``, ``RSQ64H`` (the upper word of an f64): the
  result's significand depends only on the operand's significand (and, for the square roots, on
  the exponent's parity); the exponent follows exactly.  Every normal binade repeats the pattern of
  the canonical binade [1, 2) (and [2, 4) for the other parity).
* ``EX2``: the operand is converted to sign-magnitude fixed point with 23 fraction bits, truncated;
  2^(integer part) is exact, the fraction indexes one table for positive and one for negative
  operands.
* The 16-bit ``EX2`` / ``TANH`` (f16, bf16): a function of 2^16 words.

The result significands are not a published formula: warpsim keeps, per operation, the difference
between the hardware's word and a deterministic reference (IEEE +, *, /, sqrt in float64 only, so the
same on every host) in a compressed table under ``warpsim/numerics/sfu_data/`` -- the "compact table
of hardware outputs" fallback; a fitted interpolator (segments, coefficients) would replace it.
``LG2``, ``SIN``, ``COS`` and ``TANH`` (f32) have no table yet: :func:`available` says which units
are exact.
"""

from __future__ import annotations

import lzma
import os
from dataclasses import dataclass

import numpy as np

DATA_DIR = os.path.join(os.path.dirname(__file__), "sfu_data")
_F32_NAN = np.uint32(0x7FFFFFFF)
_F64H_NAN = np.uint32(0x7FFFFFFF)


# ----------------------------------------------------------------------------------------------
# deterministic references (IEEE +, -, *, /, sqrt in float64; identical on every IEEE host)

def _exp2_frac(f):
    """2**f for f in [-1, 1], float64, by a fixed Taylor series of exp(f ln 2) (deterministic)."""
    t = np.asarray(f, np.float64) * 0.6931471805599453
    s = np.ones_like(t)
    term = np.ones_like(t)
    for k in range(1, 24):
        term = term * t / k
        s = s + term
    return s


@dataclass(frozen=True)
class Table:
    """One table: the canonical operands whose hardware words it records, and their reference."""
    name: str
    width: int                      # operand words: 32 (f32 / upper f64 word) or 16
    canonical: object               # () -> uint32 canonical operand words, in table order
    reference: object               # uint32 operand words -> uint32 reference result words


def _binade(lead, mbits):
    return lambda: (np.arange(1 << mbits, dtype=np.uint32) | np.uint32(lead))


def _f32_ref(fn):
    def ref(u):
        with np.errstate(all="ignore"):
            return fn(u.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    return ref


def _f64h_ref(fn):
    def ref(u):
        x = (u.astype(np.uint64) << np.uint64(32)).view(np.float64)
        with np.errstate(all="ignore"):
            return (fn(x).view(np.uint64) >> np.uint64(32)).astype(np.uint32)    # truncated to the upper word
    return ref


def _ex2_ref(sign):
    def ref(u):
        f = (u & np.uint32(0x7FFFFF)).astype(np.float64) / float(1 << 23)
        v = 2.0 * _exp2_frac(f) if sign == 0 else 0.5 * _exp2_frac(-f)         # operand +-(1 + f)
        return v.astype(np.float32).view(np.uint32)
    return ref


def _half_ref(u):
    return np.zeros_like(u)


_RCP = lambda x: 1.0 / x            # noqa: E731
_RSQ = lambda x: 1.0 / np.sqrt(x)   # noqa: E731

TABLES = {t.name: t for t in (
    Table("rcp", 32, _binade(0x3F800000, 23), _f32_ref(_RCP)),
    Table("rsq_odd", 32, _binade(0x3F800000, 23), _f32_ref(_RSQ)),       # exponent field odd: [1, 2)
    Table("rsq_even", 32, _binade(0x40000000, 23), _f32_ref(_RSQ)),      # even: [2, 4)
    Table("sqrt_odd", 32, _binade(0x3F800000, 23), _f32_ref(np.sqrt)),
    Table("sqrt_even", 32, _binade(0x40000000, 23), _f32_ref(np.sqrt)),
    Table("ex2_pos", 32, _binade(0x3F800000, 23), _ex2_ref(0)),          # +(1 + f)
    Table("ex2_neg", 32, _binade(0xBF800000, 23), _ex2_ref(1)),          # -(1 + f)
    Table("rcp64h", 32, _binade(0x3FF00000, 20), _f64h_ref(_RCP)),
    Table("rsq64h_odd", 32, _binade(0x3FF00000, 20), _f64h_ref(_RSQ)),   # exponent field odd: [1, 2)
    Table("rsq64h_even", 32, _binade(0x40000000, 20), _f64h_ref(_RSQ)),
    Table("ex2_f16", 16, _binade(0, 16), _half_ref),
    Table("ex2_bf16", 16, _binade(0, 16), _half_ref),
    Table("tanh_f16", 16, _binade(0, 16), _half_ref),
    Table("tanh_bf16", 16, _binade(0, 16), _half_ref),
)}

_LOADED: dict = {}


def encode(name, hardware_words):
    """The committed form of a table: the hardware's words minus the reference, lzma-compressed."""
    t = TABLES[name]
    d = hardware_words.astype(np.int64) - t.reference(t.canonical()).astype(np.int64)
    lo, hi = int(d.min()), int(d.max())
    dt = np.int8 if -128 <= lo and hi < 128 else (np.int16 if -32768 <= lo and hi < 32768 else np.int32)
    return {f"{name}": np.frombuffer(lzma.compress(d.astype(dt).tobytes(), preset=9), np.uint8),
            f"{name}.dtype": np.array(np.dtype(dt).str)}


def deltas(name, store):
    """The stored differences hardware word - reference word of one table (int8/16/32)."""
    return np.frombuffer(lzma.decompress(store[name].tobytes()), np.dtype(str(store[name + ".dtype"])))


def decode(name, store):
    t = TABLES[name]
    return (t.reference(t.canonical()).astype(np.int64) + deltas(name, store)).astype(np.uint32)


def load(path=None):
    """Load every table of the committed data (or ``path``); returns the names loaded."""
    path = path or os.path.join(DATA_DIR, "tables.npz")
    _LOADED.clear()
    if os.path.exists(path):
        with np.load(path) as z:
            for name in TABLES:
                if name in z.files:
                    _LOADED[name] = decode(name, z)
    _LOADED["__loaded__"] = True
    return sorted(k for k in _LOADED if not k.startswith("__"))


def table(name):
    if "__loaded__" not in _LOADED:
        load()
    if name not in _LOADED:
        raise NotImplementedError(f"the MUFU table {name!r} is not available (see warpsim.numerics.sfu.available())")
    return _LOADED[name]


def available():
    """Names of the MUFU tables present (each makes its operation exact)."""
    if "__loaded__" not in _LOADED:
        load()
    return sorted(k for k in _LOADED if not k.startswith("__"))


# ----------------------------------------------------------------------------------------------
# the operations, on raw words (uint32 arrays; the f64 units on the upper word)

def _split32(u):
    u = np.asarray(u, np.uint32)
    return u, u >> np.uint32(31), (u >> np.uint32(23)) & np.uint32(0xFF), u & np.uint32(0x7FFFFF)


def _shift_exp(words, k):
    """Add k to the exponent field of (normal) words, as int64 arithmetic on the bits."""
    return (words.astype(np.int64) + (np.asarray(k, np.int64) << 23)).astype(np.uint32)


def rcp(u):
    """MUFU.RCP: subnormal operands count as zero, results below 2**-126 flush to zero."""
    u, s, e, m = _split32(u)
    t = table("rcp")[m]
    out = _shift_exp(t, 127 - e.astype(np.int64)) | (s << np.uint32(31))
    with np.errstate(all="ignore"):
        rn = (1.0 / u.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    rn = np.where((rn & np.uint32(0x7F800000)) == 0, rn & np.uint32(0x80000000), rn)     # subnormal results flush
    out = np.where(e >= 253, rn, out)
    out = np.where(e == 0, (s << np.uint32(31)) | np.uint32(0x7F800000), out)
    out = np.where(e == 255, s << np.uint32(31), out)
    return np.where((e == 255) & (m != 0), _F32_NAN, out).astype(np.uint32)


def _root(u, kind):
    u, s, e, m = _split32(u)
    ei = e.astype(np.int64)
    odd = (ei & 1) == 1
    t = np.where(odd, table(kind + "_odd")[m], table(kind + "_even")[m])
    k = np.where(odd, 127 - ei, 128 - ei) // 2
    if kind == "sqrt":
        k = -k
    out = _shift_exp(t, k)
    zero_res = np.uint32(0x7F800000) if kind == "rsq" else np.uint32(0)
    inf_res = np.uint32(0) if kind == "rsq" else np.uint32(0x7F800000)
    out = np.where(e == 0, (s << np.uint32(31)) | zero_res, out)
    out = np.where((s == 1) & (e != 0), _F32_NAN, out)
    out = np.where((s == 0) & (e == 255), inf_res, out)
    return np.where((e == 255) & (m != 0), _F32_NAN, out).astype(np.uint32)


def rsq(u):
    """MUFU.RSQ: +-0 and subnormals give +-inf, negative operands NaN, +inf gives +0."""
    return _root(u, "rsq")


def sqrt(u):
    """MUFU.SQRT: +-0 and subnormals give +-0, negative operands NaN."""
    return _root(u, "sqrt")


def ex2(u):
    """MUFU.EX2: |x| in sign-magnitude fixed point with 23 fraction bits, truncated; 2**int exact."""
    u, s, e, m = _split32(u)
    ei = e.astype(np.int64)
    sig = (m.astype(np.int64) | (1 << 23))
    sh = ei - 127                                     # value = sig * 2**(sh - 23)
    fixed = np.where(sh >= 0, sig << np.clip(sh, 0, 30), sig >> np.clip(-sh, 0, 63))   # 23 fraction bits
    fixed = np.where(e == 0, 0, fixed)
    ip = fixed >> 23
    fr = (fixed & 0x7FFFFF).astype(np.intp)
    pos = _shift_exp(table("ex2_pos")[fr], np.clip(ip, 0, 200) - 1)
    neg_ip = np.clip(ip, 0, 200)
    neg = _shift_exp(table("ex2_neg")[fr], 1 - neg_ip)
    # the negative side: results below 2**-126 flush to +0
    neg_exp = ((table("ex2_neg")[fr] >> np.uint32(23)).astype(np.int64) & 0xFF) + 1 - neg_ip
    neg = np.where(neg_exp >= 1, neg, np.uint32(0))
    out = np.where(s == 0, np.where(ip >= 128, np.uint32(0x7F800000), pos), neg)
    big = (e == 255) & (m == 0)
    out = np.where(big, np.where(s == 0, np.uint32(0x7F800000), np.uint32(0)), out)
    return np.where((e == 255) & (m != 0), _F32_NAN, out).astype(np.uint32)


def _split64h(h):
    h = np.asarray(h, np.uint32)
    return h, h >> np.uint32(31), (h >> np.uint32(20)) & np.uint32(0x7FF), h & np.uint32(0xFFFFF)


def _shift_exp64h(words, k):
    return (words.astype(np.int64) + (np.asarray(k, np.int64) << 20)).astype(np.uint32)


def rcp64h(h):
    """MUFU.RCP64H on the upper word of an f64 (the lower word of the result is 0)."""
    h, s, e, m = _split64h(h)
    out = _shift_exp64h(table("rcp64h")[m], 1023 - e.astype(np.int64)) | (s << np.uint32(31))
    out = np.where(e >= 2045, np.where(h & np.uint32(0x7FFFFFFF) == np.uint32(0x7FD00000),
                                       (s << np.uint32(31)) | np.uint32(0x00100000), s << np.uint32(31)), out)
    out = np.where(e == 0, (s << np.uint32(31)) | np.uint32(0x7FF00000), out)
    return np.where((e == 2047) & (m != 0), _F64H_NAN, out).astype(np.uint32)


def rsq64h(h):
    """MUFU.RSQ64H on the upper word of an f64."""
    h, s, e, m = _split64h(h)
    ei = e.astype(np.int64)
    odd = (ei & 1) == 1
    t = np.where(odd, table("rsq64h_odd")[m], table("rsq64h_even")[m])
    out = _shift_exp64h(t, np.where(odd, 1023 - ei, 1024 - ei) // 2)
    out = np.where(e == 0, (s << np.uint32(31)) | np.uint32(0x7FF00000), out)
    out = np.where((s == 1) & (e != 0), _F64H_NAN, out)
    out = np.where((s == 0) & (e == 2047), np.uint32(0), out)
    return np.where((e == 2047) & (m != 0), _F64H_NAN, out).astype(np.uint32)


def half(name, h):
    """MUFU.EX2 / TANH on f16 or bf16 words (``name``: ex2_f16, ex2_bf16, tanh_f16, tanh_bf16)."""
    return table(name)[np.asarray(h, np.uint16).astype(np.intp)].astype(np.uint16)


UNITS = {"rcp": rcp, "rsq": rsq, "sqrt": sqrt, "ex2": ex2, "rcp64h": rcp64h, "rsq64h": rsq64h}
