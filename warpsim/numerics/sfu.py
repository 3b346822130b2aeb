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
* ``SIN`` / ``COS``: the operand (in turns) is read as the fraction of its magnitude to 25 bits;
  one table of the half turn (2^24 entries) serves both, by the exact symmetries the sweep shows.
* ``LG2``: e + log2(significand) in 23-bit fixed point, converted towards zero (negative sums as
  one's complements); the binades [0.5, 1) and [1, 2) are tables of their own.
* ``TANH`` (f32): odd; the identity below 2^-8, +-1 from 8, a table per binade between over the
  significand bits the unit reads.
* The 16-bit ``EX2`` / ``TANH`` (f16, bf16): a function of 2^16 words.

The result significands are not a published formula: warpsim keeps, per operation, the difference
between the hardware's word and a deterministic reference (IEEE +, *, /, sqrt in float64 only, so the
same on every host) in a compressed table under ``warpsim/numerics/sfu_data/`` -- the "compact table
of hardware outputs" fallback; a fitted interpolator (segments, coefficients) would replace it.
:func:`available` names the tables present.  Which forms the exhaustive sweep proved, and which only
on samples and whole binades so far, is in ``docs/sfu.md`` and ``warpsim.explain``.
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


def _sin_small(t):
    """sin(t) for |t| <= pi/4 (float64 Taylor, deterministic)."""
    t2 = t * t
    s, term = t.copy(), t.copy()
    for k in range(1, 14):
        term = -term * t2 / ((2 * k) * (2 * k + 1))
        s = s + term
    return s


def _cos_small(t):
    t2 = t * t
    s, term = np.ones_like(t), np.ones_like(t)
    for k in range(1, 14):
        term = -term * t2 / ((2 * k - 1) * (2 * k))
        s = s + term
    return s


def sincos_turns(k, bits):
    """(sin, cos) of 2 pi k / 2**bits for integer k in [0, 2**bits), float64, deterministic: the
    octant symmetry is exact integer arithmetic, the remainder within pi/4 a Taylor series."""
    k = np.asarray(k, np.int64)
    octant = k >> (bits - 3)
    r = k & ((1 << (bits - 3)) - 1)                      # position inside the octant
    eighth = 1 << (bits - 3)
    odd = (octant & 1) == 1
    rr = np.where(odd, eighth - r, r).astype(np.float64)   # distance to the nearest multiple of 90 degrees
    t = rr * (2.0 * 3.141592653589793 / float(1 << bits))
    s0, c0 = _sin_small(t), _cos_small(t)
    swap = ((octant + 1) >> 1) & 1                         # octants 1, 2, 5, 6: sin and cos exchange
    sa, ca = np.where(swap == 1, c0, s0), np.where(swap == 1, s0, c0)
    quadrant = octant >> 1
    sin = np.where(quadrant >= 2, -sa, sa)
    cos = np.where((quadrant == 1) | (quadrant == 2), -ca, ca)
    return sin, cos


def log2_det(x):
    """log2 of positive normal float64 values (deterministic: exponent, then 2 atanh series)."""
    x = np.asarray(x, np.float64)
    bits = x.view(np.uint64)
    e = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    m = ((bits & np.uint64((1 << 52) - 1)) | np.uint64(1023 << 52)).view(np.float64)   # [1, 2)
    big = m > 1.4142135623730951
    m = np.where(big, m * 0.5, m)
    e = e + big
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    acc, term = s.copy(), s.copy()
    for k in range(1, 30):
        term = term * s2
        acc = acc + term / (2 * k + 1)
    return e + acc * (2.0 / 0.6931471805599453)


def tanh_det(x):
    """tanh of positive float64 values (deterministic: exp(-2x) as 2**n * 2**f, then a quotient)."""
    t = np.asarray(x, np.float64) * (-2.0 / 0.6931471805599453)
    n = np.floor(t)
    e = np.ldexp(_exp2_frac(t - n), n.astype(np.int64))
    return (1.0 - e) / (1.0 + e)


# MUFU.TANH reads its operand's significand to 23 - k bits in binade e (k from the sweep); below
# 2**-8 it returns the operand, from 8 on +-1
TANH_DROPPED = {119: 6, 120: 6, 121: 6, 122: 5, 123: 5, 124: 4, 125: 4, 126: 4, 127: 3, 128: 2, 129: 3}


def _tanh_grid(e):
    k = TANH_DROPPED[e]
    return lambda: np.arange(0, 1 << 23, 1 << k, dtype=np.uint32) | np.uint32(e << 23)


def _tanh_ref(u):
    return tanh_det(u.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)


def _lg2_ref(u):
    return log2_det(u.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)


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


SC_BITS = 25            # MUFU.SIN / COS read the fraction of their operand (in turns) to 2**-25


def _sc_ref(which, sign):
    def ref(k):
        v = sincos_turns(k, SC_BITS)[0 if which == "sin" else 1]
        if sign and which == "sin":
            v = -v
        return v.astype(np.float32).view(np.uint32)
    return ref


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
    Table("sin_half", 32, _binade(0, SC_BITS - 1), _sc_ref("sin", 0)),   # sin of k / 2**25 turns, k < 2**24
    Table("lg2_e127", 32, _binade(0x3F800000, 23), _lg2_ref),          # [1, 2): log2 of the significand
    Table("lg2_e126", 32, _binade(0x3F000000, 23), _lg2_ref),          # [0.5, 1): its own words
) + tuple(Table(f"tanh_e{e}", 32, _tanh_grid(e), _tanh_ref) for e in TANH_DROPPED)}

_LOADED: dict = {}


def _key(words):
    """Float words (sign-magnitude, as int64) on one integer line, -0 just below +0: differences
    count last places across zero as well, and the sign of a zero survives."""
    w = np.asarray(words).astype(np.int64)
    return np.where(w >= 1 << 31, -(w & 0x7FFFFFFF) - 1, w)


def _unkey(key):
    key = np.asarray(key, np.int64)
    return np.where(key < 0, (-key - 1) | (1 << 31), key).astype(np.uint32)


def encode(name, hardware_words):
    """The committed form of a table: the hardware's words minus the reference (in last places),
    lzma-compressed."""
    t = TABLES[name]
    d = _key(hardware_words) - _key(t.reference(t.canonical()))
    lo, hi = int(d.min()), int(d.max())
    dt = np.int8 if -128 <= lo and hi < 128 else (np.int16 if -32768 <= lo and hi < 32768 else np.int32)
    return {f"{name}": np.frombuffer(lzma.compress(d.astype(dt).tobytes(), preset=9), np.uint8),
            f"{name}.dtype": np.array(np.dtype(dt).str)}


def deltas(name, store):
    """The stored differences hardware - reference of one table, in last places (:func:`_key`; for positive
    words the plain difference of the words), int8/16/32."""
    return np.frombuffer(lzma.decompress(store[name].tobytes()), np.dtype(str(store[name + ".dtype"])))


def decode(name, store):
    t = TABLES[name]
    return _unkey(_key(t.reference(t.canonical())) + deltas(name, store))


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
    """One MUFU table; until :func:`load` ran, decoded alone from the committed data on first use (decoding
    all of them takes seconds, ``sin_half`` most: a kernel using tanh need not pay for sin)."""
    if name not in _LOADED and "__loaded__" not in _LOADED:
        path = os.path.join(DATA_DIR, "tables.npz")
        if name in TABLES and os.path.exists(path):
            with np.load(path) as z:
                if name in z.files:
                    _LOADED[name] = decode(name, z)
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

@dataclass(frozen=True)
class WordFormat:
    """Where sign, exponent and significand sit in the 32-bit word a MUFU reads: an f32, or the
    upper word of an f64."""
    ebits: int
    mbits: int

    @property
    def bias(self):
        return (1 << (self.ebits - 1)) - 1

    @property
    def inf(self):
        return np.uint32(((1 << self.ebits) - 1) << self.mbits)


F32, F64_HI = WordFormat(8, 23), WordFormat(11, 20)


def _split(u, fmt=F32):
    u = np.asarray(u, np.uint32)
    return (u, u >> np.uint32(31), (u >> np.uint32(fmt.mbits)) & np.uint32((1 << fmt.ebits) - 1),
            u & np.uint32((1 << fmt.mbits) - 1))


def _split32(u):
    return _split(u, F32)


def _shift_exp(words, k, fmt=F32):
    """Add k to the exponent field of (normal) words, as int64 arithmetic on the bits."""
    return (words.astype(np.int64) + (np.asarray(k, np.int64) << fmt.mbits)).astype(np.uint32)


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


def _root(u, kind, fmt=F32, name=None):
    """RSQ / SQRT (and RSQ64H): the significand from the table of the exponent's parity."""
    name = name or kind
    u, s, e, m = _split(u, fmt)
    ei = e.astype(np.int64)
    odd = (ei & 1) == 1
    t = np.where(odd, table(name + "_odd")[m], table(name + "_even")[m])
    k = np.where(odd, fmt.bias - ei, fmt.bias + 1 - ei) // 2
    out = _shift_exp(t, -k if kind == "sqrt" else k, fmt)
    zero_res, inf_res = (fmt.inf, np.uint32(0)) if kind == "rsq" else (np.uint32(0), fmt.inf)
    top = (1 << fmt.ebits) - 1
    out = np.where(e == 0, (s << np.uint32(31)) | zero_res, out)
    out = np.where((s == 1) & (e != 0), _F32_NAN, out)
    out = np.where((s == 0) & (e == top), inf_res, out)
    return np.where((e == top) & (m != 0), _F32_NAN, out).astype(np.uint32)


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


def rcp64h(h):
    """MUFU.RCP64H on the upper word of an f64 (the lower word of the result is 0)."""
    h, s, e, m = _split(h, F64_HI)
    out = _shift_exp(table("rcp64h")[m], 1023 - e.astype(np.int64), F64_HI) | (s << np.uint32(31))
    out = np.where(e >= 2045, np.where(h & np.uint32(0x7FFFFFFF) == np.uint32(0x7FD00000),
                                       (s << np.uint32(31)) | np.uint32(0x00100000), s << np.uint32(31)), out)
    out = np.where(e == 0, (s << np.uint32(31)) | np.uint32(0x7FF00000), out)
    return np.where((e == 2047) & (m != 0), _F64H_NAN, out).astype(np.uint32)


def rsq64h(h):
    """MUFU.RSQ64H on the upper word of an f64 (the rules of RSQ in the f64 word)."""
    return _root(h, "rsq", F64_HI, "rsq64h")


def _negate(w):
    """Flip the sign of a MUFU.SIN / COS result (a plain sign flip: sin of half a turn is -0)."""
    return (np.asarray(w, np.uint32) ^ np.uint32(1 << 31)).astype(np.uint32)


def _turn_index(y):
    """The operand's fraction of a turn as the MUFU reads it: floor(frac(|y|) * 2**25)."""
    with np.errstate(all="ignore"):
        a = np.abs(np.asarray(y, np.uint32).view(np.float32).astype(np.float64))
        f = a - np.floor(a)
        k = np.floor(np.where(np.isfinite(a), f, 0.0) * float(1 << SC_BITS)).astype(np.int64)
    return k


def _sin_turns(k):
    half = 1 << (SC_BITS - 1)
    v = table("sin_half")[k % half]
    return np.where(k >= half, _negate(v), v).astype(np.uint32)


def sin(y):
    """MUFU.SIN of y in turns: one table of the half turn (2**24 entries, the H200's words); the
    other half turn is its negation and a negative operand negates, both as plain sign flips."""
    y = np.asarray(y, np.uint32)
    out = _sin_turns(_turn_index(y))
    out = np.where(y >> np.uint32(31) == 1, _negate(out), out)
    return np.where((y & np.uint32(0x7F800000)) == np.uint32(0x7F800000), _F32_NAN, out).astype(np.uint32)


def cos(y):
    """MUFU.COS: the sine table a quarter turn on (cos k = sin(k + 2**23)); even in y."""
    y = np.asarray(y, np.uint32)
    out = _sin_turns((_turn_index(y) + (1 << (SC_BITS - 2))) % (1 << SC_BITS))
    return np.where((y & np.uint32(0x7F800000)) == np.uint32(0x7F800000), _F32_NAN, out).astype(np.uint32)


def tanh(u):
    """MUFU.TANH (f32): odd; the operand below 2**-8 (subnormals too), +-1 from 8 on, between them
    a table per binade over the significand bits the unit reads."""
    u, s, e, m = _split32(u)
    out = u & np.uint32(0x7FFFFFFF)
    for b, k in TANH_DROPPED.items():
        sel = e == b
        if sel.any():
            out = np.where(sel, table(f"tanh_e{b}")[(m >> np.uint32(k)).astype(np.intp) * sel], out)
    out = np.where(e >= 130, np.uint32(0x3F800000), out) | (s << np.uint32(31))
    return np.where((e == 255) & (m != 0), _F32_NAN, out).astype(np.uint32)


def _rz32(v):
    """float64 -> f32 bits rounded towards zero (results here are normal)."""
    bits = np.abs(v).view(np.uint64) & ~np.uint64((1 << 29) - 1)
    mag = bits.view(np.float64).astype(np.float32).view(np.uint32)
    return np.where(v < 0, mag | np.uint32(1 << 31), mag).astype(np.uint32)


def lg2(u):
    """MUFU.LG2: e + log2(significand) in fixed point with 23 fraction bits, converted towards zero;
    a negative sum is the one's complement of the positive one (so log2(0.5) is -1 + 2**-23). The
    binades [0.5, 1) and [1, 2), whose results have more bits than that, are tables of their own."""
    u, s, e, m = _split32(u)
    ei = e.astype(np.int64) - 127
    l0 = table("lg2_e127")[m].view(np.float32).astype(np.float64)
    fixed = ei * float(1 << 23) + np.floor(l0 * float(1 << 23))
    v = np.where(ei >= 1, ei + l0, -(-fixed - 1.0) / float(1 << 23))
    out = _rz32(v)
    out = np.where(ei == 0, table("lg2_e127")[m], out)
    out = np.where(ei == -1, table("lg2_e126")[m], out)
    out = np.where(e == 0, np.uint32(0xFF800000), out)                  # +-0 and subnormals: -inf
    out = np.where((s == 1) & (e != 0), _F32_NAN, out)
    out = np.where((s == 0) & (e == 255), np.uint32(0x7F800000), out)
    return np.where((e == 255) & (m != 0), _F32_NAN, out).astype(np.uint32)


def half(name, h):
    """MUFU.EX2 / TANH on f16 or bf16 words (``name``: ex2_f16, ex2_bf16, tanh_f16, tanh_bf16)."""
    return table(name)[np.asarray(h, np.uint16).astype(np.intp)].astype(np.uint16)


UNITS = {"rcp": rcp, "rsq": rsq, "sqrt": sqrt, "ex2": ex2, "rcp64h": rcp64h, "rsq64h": rsq64h, "sin": sin, "cos": cos, "tanh": tanh, "lg2": lg2}
