"""The dedicated kernel of the float tensor-core recipes (f16, bf16, tf32, fp8; dense and sparse).

It computes the recipe of :func:`warpsim.numerics.fused.tc_dot`
in float64 where float64 is provably exact (see the notes in ``warpsim.numerics.fused``) -- but reads the register
words in place and decodes without per-element shifts:

* every operand is viewed as an array of its elements (uint8 for fp8, uint16 for f16 / bf16,
  uint32 for tf32 / f32; element j of a lane at index ``lane * elements + j`` on a little-endian
  host) and gathered, in runs of elements that stay together (f16 pairs, fp8 quadruples), straight
  into the order the dot core reads (A by row in block order, B row-major, C / D row-major);
* elements decode in one vector pass (LLVM IR, 8 a step): the magnitude bits placed in an f32 word,
  widened and scaled by a power of two; NaN / inf elements become the float64 NaN / inf of their
  sign; the alignment exponents ``max(floor(log2 |v|), emin)`` (a far-negative value for zeros and
  specials) as float32;
* the dot core runs four rows side by side, each with split partial maxima and sums (the truncated
  terms are integers below 2^53: any order gives the same sum), and sums in int64 when no element is
  NaN or inf; sparse A reads B through one row index per term (no gathered copy of B);
* results round in vector form (f32 with ties to even: the host's double -> float conversion).

NaN / inf elements are decided per output element.  Warps with tf32 sparse metadata that splices B
halves, or on a host FPU not in its default state (checked per chunk), are flagged; the engine
recomputes the flagged warps with the generic exact kernel.
"""

from __future__ import annotations

import sys
from functools import lru_cache

import numba
import numpy as np
from numba import njit, prange

from ..numerics import fused as ar
from ..numerics.fused import (CMODE_FUSED, P_ACC, P_C, P_CMODE, P_D, P_FRAC, P_GROUP, P_NBLK, P_OP, P_RND, RND_RNE,
                     _bits_f32, _bits_f64, _f64_bits, _fround, tc_fast_ok)
from .hostisa import packed_int64_conversions
from .jitcache import named_copy
from .hostfpu import PROBE32 as _PROBE32, PROBE64 as _PROBE64, fp_env_ok as _fp_env_ok

from llvmlite import ir as _ir  # noqa: E402
from numba import types as _nbt  # noqa: E402
from numba.core import cgutils as _cgutils  # noqa: E402
from numba.extending import intrinsic as _intrinsic  # noqa: E402

#: alignment exponent of a zero element (float32; far below any real one, see fused._ZEXP)
_ZEXP = np.float32(-4096.0)


# --- tables ----------------------------------------------------------------------------------

def _exact_conversion(fmt: tuple, op: tuple) -> bool:
    """Whether every finite value of format fmt is a value of format op (fp8 -> f16: yes)."""
    width, eb, mb, ign, hinf = fmt
    _, oeb, omb, _, _ = op
    bias, obias = (1 << (eb - 1)) - 1, (1 << (oeb - 1)) - 1
    top = (1 << eb) - 1 - bias - (1 if hinf == 1 else 0)  # largest finite exponent (e4m3: S.1111.110)
    lsb = 1 - bias - mb                                  # the smallest subnormal's exponent
    return omb >= mb and top <= (1 << oeb) - 2 - obias and lsb >= 1 - obias - omb


def _decode_params(fmt):
    """(ignored bits, magnitude mask, sign position, mantissa shift into f32, smallest special
    magnitude, the infinity's magnitude or -1) and 2^(127 - bias) of a format, for _decode.
    hinf: 1 IEEE (inf and NaN), 0 e4m3-like (NaN only), 2 finite-only (e2m1 / e2m3 / e3m2)."""
    width, eb, mb, ign, hinf = fmt
    mm = (1 << (width - ign - 1)) - 1
    # the smallest magnitude that is inf / NaN: IEEE formats (1) the all-ones exponent, e4m3 (0) the
    # all-ones pattern; the finite-only e2m1 / e2m3 / e3m2 (2) have none (past every magnitude)
    lim = ((1 << eb) - 1) << mb if hinf == 1 else (mm if hinf == 0 else mm + 1)
    return [ign, mm, width - 1, 23 - mb, lim, lim if hinf == 1 else -1], 2.0 ** (127 - ((1 << (eb - 1)) - 1))


def _fmt(p, f):
    return tuple(int(x) for x in p[f:f + 5])


def _emin(fmt) -> float:
    return float(2 - (1 << (fmt[1] - 1)))


_DTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def truncated_acc(p) -> bool:
    """Whether a fused recipe's result format is D's format with low mantissa bits always zero (the
    f32e8m13 of Ada's and wgmma's fp8 -> f32: an f32 word whose 10 low bits are cleared).  Rounding
    into it is rounding to fewer mantissa bits; its words, inf and canonical NaN are D's words."""
    acc, d = _fmt(p, P_ACC), _fmt(p, P_D)
    return (int(p[P_CMODE]) == CMODE_FUSED and acc[3] > 0 and d[3] == 0 and acc[0] == d[0] and acc[1] == d[1]
            and acc[4] == d[4] == 1 and acc[2] + acc[3] == d[2])


def _power_of_two_scales(p) -> bool:
    """Whether a block-scaled recipe is one this kernel computes: each product times its two ue8m0
    scales (powers of two: an exact shift of the element's value and exponent), one fused pass."""
    return (int(p[ar.P_SCALE]) == ar.SCALE_PRODUCT and int(p[ar.P_SF + 2]) == 0 and int(p[P_NBLK]) == 1
            and int(p[P_CMODE]) == CMODE_FUSED)


def _as_checked(p):
    """The parameter vector tc_fast_ok is to judge: a truncated result format (truncated_acc) is
    judged as D's own, which the rounding with ignored bits (round_params) then narrows; ue8m0 block
    scales (_power_of_two_scales) as no scales, the kernel applying them to the decoded elements."""
    if not truncated_acc(p) and not _power_of_two_scales(p):
        return p
    q = p.copy()
    if truncated_acc(p):
        q[P_ACC:P_ACC + 5] = p[P_D:P_D + 5]
    if _power_of_two_scales(p):
        q[ar.P_SCALE] = ar.SCALE_NONE
    return q


def tc_tables(ins, params, tables, sp):
    """Everything the kernel needs for one plan, or None if the plan is not one it handles."""
    if sys.byteorder != "little" or ins.products != 1:
        return None
    m, n, k = ins.mnk
    ka = k // 2 if ins.is_sparse else k
    p = np.asarray(params, dtype=np.int64)
    if p[ar.P_SCALE] == ar.SCALE_GROUP:
        return group_tables(ins, p, tables, sp)
    if n != 8 or not tc_fast_ok(_as_checked(p), n, ka):
        return None
    nblk, group = int(p[P_NBLK]), int(p[P_GROUP])
    nb = ka // nblk
    bits = [t[3] for t in tables]
    if any(b not in (8, 16, 32) for b in bits) or bits[2] != bits[3]:
        return None
    pos = []
    for role, (flat, word, shift, b) in zip("abcd", tables):
        j = np.arange(flat.shape[1])
        per = 32 // b
        if not ((word == j // per).all() and (shift == (j % per) * b).all()):
            return None
        flat = np.asarray(flat, dtype=np.int64)
        if role == "a":          # row-major (M, Ka) -> the term's place in block order
            i, t = np.divmod(flat, ka)
            c = t // group
            tt = (c % nblk) * nb + (c // nblk) * group + (t - c * group)
            flat = i * ka + tt
        elif role == "b":        # B^T (column-major B) -> row-major B (K, 8); dense: rows in block order
            col, row = np.divmod(flat, k)
            if not ins.is_sparse:
                c = row // group
                row = (c % nblk) * nb + (c // nblk) * group + (row - c * group)
            flat = row * n + col
        pos.append(np.ascontiguousarray(flat.ravel(), dtype=np.int64))
    # B row of each term (dense: the identity, B's rows being in block order too; sparse builds
    # it per warp from the metadata)
    ri0 = np.arange(ka, dtype=np.int64)
    if ins.is_sparse:
        spr = np.asarray(sp, dtype=np.int64).reshape(-1, 5)
        spt = np.stack([pos[0], spr[:, 0], spr[:, 1], spr[:, 2] + spr[:, 4], spr[:, 3]], axis=1)
    else:
        spt = np.zeros((1, 5), np.int64)
    op = _fmt(p, P_OP) if p[P_OP] != 0 else ()
    fa, fb, fc = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C)
    if op and not (_exact_conversion(fa, op) and _exact_conversion(fb, op)):
        return None
    dp = [_decode_params(f) for f in (fa, fb, fc)]
    emin = [_emin(op or fa), _emin(op or fb), _emin(fc)]
    # block scales: the scale index of each A term (block order is k order: one pass) and of each
    # B row (sparse: logical rows, twice as many per scale as kept terms); the exponent of zero terms
    if ins.block_scaled:
        st = int(p[ar.P_STERMS])
        sta = np.arange(ka, dtype=np.int64) // st
        srb = np.arange(k, dtype=np.int64) // (st * (2 if ins.is_sparse else 1))
        zexp = float(p[ar.P_ZEXP]) if p[ar.P_ZEXP_ON] else float(_ZEXP)
    else:
        sta = srb = np.zeros(1, np.int64)
        zexp = float(_ZEXP)
    # A, B, C (and D, the other way) are gathered in runs: where aligned runs of r register elements
    # land on r consecutive matrix places (f16 pairs of a row, fp8 quadruples), whole r-element
    # words move at once
    gpos, wide = [], []
    for x, (flat, word, shift, b) in zip(pos, tables):
        r = _run(x, b, flat.shape[1] * b // 8)
        gpos.append(np.ascontiguousarray(x[::r] // r, dtype=np.uint32))
        wide.append(np.dtype(_DTYPE[b * r]))
    return dict(bits=bits, pos=tuple(pos), gpos=tuple(gpos), wide=tuple(wide), ri0=ri0, spt=np.ascontiguousarray(spt), ka=ka,
                q=np.array([x[0] for x in dp], np.int64), scale=np.array([x[1] for x in dp], np.float64),
                emin=np.array(emin, np.float32), rpb=round_params(_fmt(p, P_ACC), p[P_RND] == RND_RNE),
                rpa=round_params(_fmt(p, P_ACC), True), sta=sta, srb=srb, zexp=np.float32(zexp))


def _run(pos, bits: int, lane_bytes: int) -> int:
    """The longest run r (1, 2, 4 or 8 elements, at most 64 bits, dividing a lane's bytes) such that
    every aligned run of r consecutive register elements goes to r consecutive matrix places, the
    first at a multiple of r."""
    best = 1
    for r in (2, 4, 8):
        if bits * r > 64 or (lane_bytes * 8) % (bits * r) or pos.size % r:
            break
        g = pos.reshape(-1, r)
        if not ((g == g[:, :1] + np.arange(r)).all() and (g[:, 0] % r == 0).all()):
            break
        best = r
    return best


# --- the kernel ------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _packed_int64_conversions() -> bool:
    """Whether the code being generated has packed float64 <-> int64 conversions (AVX-512DQ).
    Without them (AVX2 hosts, or NUMBA_CPU_NAME / NUMBA_CPU_FEATURES naming one) LLVM converts
    <8 x double> to <8 x i64> one lane at a time, so the dot core sums its truncated terms in float64
    (the same exact sums) instead of int64; see engine/hostisa.py."""
    return packed_int64_conversions()


def _i64(context, builder, ty, v):
    return context.cast(builder, v, ty, _nbt.int64)


_I32, _I64, _F32, _F64 = _ir.IntType(32), _ir.IntType(64), _ir.FloatType(), _ir.DoubleType()
_V8I, _V8L, _V8F, _V8D = (_ir.VectorType(t, 8) for t in (_I32, _I64, _F32, _F64))


def _vload(builder, ptr, idx, vt, align):
    ld = builder.load(builder.bitcast(builder.gep(ptr, [idx]), vt.as_pointer()))
    ld.align = align
    return ld


def _vstore(builder, val, ptr, idx, align):
    st = builder.store(val, builder.bitcast(builder.gep(ptr, [idx]), val.type.as_pointer()))
    st.align = align


def _splat(builder, x, vt):
    v = builder.insert_element(_ir.Constant(vt, _ir.Undefined), x, _ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, _ir.Constant(vt, _ir.Undefined), _ir.Constant(_V8I, [0] * 8))


def _vmax(builder, a, b):
    return builder.select(builder.fcmp_ordered(">", b, a), b, a)


def _loop(builder, lo, hi, step, init, body):
    """do { acc = body(t, acc); t += step } while (t < hi), from t = lo; returns the final acc."""
    pre = builder.block
    blk = builder.append_basic_block("tc.loop")
    out = builder.append_basic_block("tc.done")
    builder.branch(blk)
    builder.position_at_end(blk)
    t = builder.phi(_I64)
    acc = builder.phi(init.type)
    t.add_incoming(lo, pre)
    acc.add_incoming(init, pre)
    nxt = body(t, acc)
    t1 = builder.add(t, _ir.Constant(_I64, step))
    t.add_incoming(t1, builder.block)
    acc.add_incoming(nxt, builder.block)
    builder.cbranch(builder.icmp_signed("<", t1, hi), blk, out)
    builder.position_at_end(out)
    return nxt


@_intrinsic
def _decode(typingctx, R, q, scale, emin, V, E):
    """Raw elements R (matrix order; length a positive multiple of 8) -> float64 values V and
    float32 alignment exponents E; returns True if any element is NaN or inf.

    A finite element's value is exact, its exponent max(floor(log2 |v|), emin) (_ZEXP for zeros).
    A NaN or inf element becomes the float64 NaN or inf of its sign with exponent _ZEXP: it never
    sets a block's emax, and the float64 sum of the scaled products then is NaN or +-inf exactly
    when the recipe's special rules make it so (any NaN, inf * 0, +inf with -inf; see
    _gen_round8).  tf32 decides NaN from the kept bits only (the ignored ones are shifted out).

    q: (ignored bits, magnitude mask, sign position, shift of the mantissa into f32's, smallest
    special magnitude, inf magnitude or -1); scale = 2^(127 - bias): the element's magnitude bits
    placed in an f32 word have the format's exponent field in f32's, so the f32 value times scale
    is the element (normal or subnormal).  LLVM vector IR, 8 elements a step in 32-bit lanes."""
    if not (isinstance(R, _nbt.Array) and isinstance(R.dtype, _nbt.Integer) and R.dtype.bitwidth <= 32
            and V.dtype == _nbt.float64 and E.dtype == _nbt.float32 and q.dtype == _nbt.int64):
        return None
    sig = _nbt.boolean(R, q, scale, emin, V, E)

    def codegen(context, builder, sig, args):
        ty = sig.args
        Ra = context.make_array(ty[0])(context, builder, args[0])
        pR = Ra.data
        n = builder.extract_value(Ra.shape, 0)
        pq = context.make_array(ty[1])(context, builder, args[1]).data
        pV = context.make_array(ty[4])(context, builder, args[4]).data
        pE = context.make_array(ty[5])(context, builder, args[5]).data
        sc = _splat(builder, context.cast(builder, args[2], ty[2], _nbt.float64), _V8D)
        qs = [builder.trunc(builder.load(builder.gep(pq, [_ir.Constant(_I64, k)])), _I32) for k in range(6)]
        emf = context.cast(builder, args[3], ty[3], _nbt.float32)

        def step(L):
            """The pass body for L (8 or 16) elements a step: the integer work in one <L x i32>, the
            float64 values in <8 x double> halves."""
            VI, VF = _ir.VectorType(_I32, L), _ir.VectorType(_F32, L)
            ign, mm, shs, shm, lim, infm = (_splatn(builder, x, VI, L) for x in qs)
            rt = _ir.VectorType(_ir.IntType(ty[0].dtype.bitwidth), L)
            em = _splatn(builder, emf, VF, L)
            zexp = _splatn(builder, _ir.Constant(_F32, float(_ZEXP)), VF, L)

            def c32(k):
                return _ir.Constant(VI, [k] * L)

            limm1 = builder.sub(lim, c32(1))

            def body(x, accs):
                bad = accs[0]
                raw = _vload(builder, pR, x, rt, 1)
                if ty[0].dtype.bitwidth < 32:
                    raw = builder.zext(raw, VI)
                mag = builder.and_(builder.lshr(raw, ign), mm)
                sgn = builder.shl(builder.lshr(raw, shs), c32(31))
                special = builder.icmp_unsigned(">=", mag, lim)
                # a NaN / inf element: the f32 NaN / inf of its sign (times scale: the same), no second pass
                sw = builder.or_(builder.select(builder.icmp_unsigned("==", mag, infm), c32(0x7F800000),
                                                c32(0x7FC00000)), sgn)
                fb = builder.bitcast(builder.select(special, sw, builder.or_(builder.shl(mag, shm), sgn)), VF)
                his = []
                for h in range(L // 8):
                    half = fb if L == 8 else builder.shuffle_vector(
                        fb, _ir.Constant(VF, _ir.Undefined), _ir.Constant(_V8I, list(range(8 * h, 8 * h + 8))))
                    # widened first: an f32 multiply with a subnormal operand is slow on x86
                    v = builder.fmul(builder.fpext(half, _V8D), sc)
                    _vstore(builder, v, pV, builder.add(x, _ir.Constant(_I64, 8 * h)), 8)
                    his.append(builder.bitcast(v, _ir.VectorType(_I32, 16)))
                # the high words of the float64 values: sign, exponent, top of the mantissa
                odd = list(range(1, 16, 2))
                if L == 8:
                    hi = builder.shuffle_vector(his[0], _ir.Constant(his[0].type, _ir.Undefined), _ir.Constant(_V8I, odd))
                else:
                    hi = builder.shuffle_vector(his[0], his[1], _ir.Constant(_ir.VectorType(_I32, 16),
                                                                             odd + [16 + k for k in odd]))
                eb = builder.sub(builder.and_(builder.lshr(hi, c32(20)), c32(0x7FF)), c32(1023))
                ex = _vmax(builder, builder.sitofp(eb, VF), em)
                # zero (mag - 1 wraps) and NaN / inf (mag >= lim) elements: exponent _ZEXP
                ex = builder.select(builder.icmp_unsigned(">=", builder.sub(mag, c32(1)), limm1), zexp, ex)
                _vstore(builder, ex, pE, x, 4)
                return [builder.or_(bad, builder.zext(special, VI))]

            return body, c32(0)

        zero = _ir.Constant(_I64, 0)
        n16 = builder.and_(n, _ir.Constant(_I64, -16))
        body16, z16 = step(16)
        bad16 = _when(builder, builder.icmp_signed("<", zero, n16), [z16],
                      lambda a: _loopn(builder, zero, n16, 16, a, body16))[0]
        body8, z8 = step(8)
        bad8 = _when(builder, builder.icmp_signed("<", n16, n), [z8],
                     lambda a: _loopn(builder, n16, n, 8, a, body8))[0]
        any16 = builder.icmp_unsigned("!=", builder.bitcast(builder.icmp_unsigned("!=", bad16, z16), _ir.IntType(16)),
                                      _ir.Constant(_ir.IntType(16), 0))
        any8 = builder.icmp_unsigned("!=", builder.bitcast(builder.icmp_unsigned("!=", bad8, z8), _ir.IntType(8)),
                                     _ir.Constant(_ir.IntType(8), 0))
        return builder.or_(any16, any8)

    return sig, codegen


def _splatn(builder, x, vt, L):
    v = builder.insert_element(_ir.Constant(vt, _ir.Undefined), x, _ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, _ir.Constant(vt, _ir.Undefined), _ir.Constant(_ir.VectorType(_I32, L), [0] * L))


def _c8(x, t=None):
    return _ir.Constant(t or _V8L, [x] * 8)


def _loopn(builder, lo, hi, step, inits, body):
    """do { accs = body(t, accs); t += step } while (t < hi), from t = lo, carrying a list of values."""
    pre = builder.block
    blk = builder.append_basic_block("tc.loop")
    out = builder.append_basic_block("tc.done")
    builder.branch(blk)
    builder.position_at_end(blk)
    t = builder.phi(_I64)
    accs = [builder.phi(x.type) for x in inits]
    t.add_incoming(lo, pre)
    for a, x in zip(accs, inits):
        a.add_incoming(x, pre)
    nxt = body(t, accs)
    t1 = builder.add(t, _ir.Constant(_I64, step))
    t.add_incoming(t1, builder.block)
    for a, x in zip(accs, nxt):
        a.add_incoming(x, builder.block)
    builder.cbranch(builder.icmp_signed("<", t1, hi), blk, out)
    builder.position_at_end(out)
    return nxt


def _when(builder, cond, inits, fn):
    """fn(inits) where cond holds, else inits (a list of values merged by phis)."""
    pre = builder.block
    then = builder.append_basic_block("tc.then")
    out = builder.append_basic_block("tc.merge")
    builder.cbranch(cond, then, out)
    builder.position_at_end(then)
    res = fn(inits)
    end = builder.block
    builder.branch(out)
    builder.position_at_end(out)
    merged = []
    for x, y in zip(inits, res):
        ph = builder.phi(x.type)
        ph.add_incoming(x, pre)
        ph.add_incoming(y, end)
        merged.append(ph)
    return merged


#: independent partial maxima / sums a block's term loop keeps per row (the sum of truncated terms is
#: exact and the maximum order-free, so splitting them only shortens the dependency chains)
_PARTS = 2
#: rows a warp's row loop computes together (independent chains side by side; B rows loaded once)
_ROWS = 4


def _terms(builder, lo, hi, nrows, inits, step_fn):
    """Fold step_fn(t, r, acc) over t = lo..hi-1 for each of nrows rows r into _PARTS partial
    accumulators a row (inits[r * _PARTS + k]), term t + k of each step of _PARTS going to partial k;
    the remainder to partial 0."""
    P = _PARTS
    n = builder.sub(hi, lo)
    mid = builder.add(lo, builder.and_(n, _ir.Constant(_I64, -P)))

    def main(accs):
        def body(t, a):
            return [step_fn(builder.add(t, _ir.Constant(_I64, x % P)), x // P, a[x]) for x in range(nrows * P)]
        return _loopn(builder, lo, mid, P, accs, body)

    accs = _when(builder, builder.icmp_signed("<", lo, mid), list(inits), main)

    def tail(accs):
        def body(t, a):
            return [step_fn(t, x // P, a[x]) if x % P == 0 else a[x] for x in range(nrows * P)]
        return _loopn(builder, mid, hi, 1, accs, body)

    return _when(builder, builder.icmp_signed("<", mid, hi), accs, tail)


def _gen_rows8(builder, pAV, pAE, pRI, lo, hi, pBV, pBE, frac, rows, finite=None):
    """IR of one block of each of a few rows: for each row (oa, oi, prv, pre, ro) of rows, the exact
    sum, <8 x double>, of the terms t = lo..hi-1 (i64 values), a = AV[oa + t] (exponent AE[oa + t])
    times B[RI[oi + t], j] (B row-major: BV / BE at 8 * RI[oi + t] + j; pRI None: B row t), and the
    accumulator prv[ro + j] (exponent pre[ro + j]), each truncated to frac bits below the output's
    emax (the largest exponent; -900 when every term is zero, as fused._block8).

    The rows' loops run side by side, and each row's maxima and sums in _PARTS independent partials:
    the truncated terms are integers below 2^53, so their float64 sum is exact in any order (-0.0
    is the identity; NaN / inf results do not depend on the order either).  Requires lo < hi.

    finite (an i1, or None): where it holds, every term and accumulator is finite, and the terms are
    truncated by the conversion to int64 and summed as integers (the same exact sum, one instruction
    less a term); else, and where None, in float64 as above."""
    ftrunc = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_V8D, [_V8D]), "llvm.trunc.v8f64")
    R, P = len(rows), _PARTS

    def brow(t, r):
        oi = rows[r][1]
        x = t if pRI is None else builder.load(builder.gep(pRI, [builder.add(oi, t)]))
        return builder.shl(x, _ir.Constant(_I64, 3))

    def ebody(t, r, e):
        x = builder.load(builder.gep(pAE, [builder.add(rows[r][0], t)]))
        g = _vload(builder, pBE, brow(t, r), _V8F, 4)
        return _vmax(builder, e, builder.fadd(_splat(builder, x, _V8F), g))

    zexp = _splat(builder, _ir.Constant(_F32, float(_ZEXP)), _V8F)
    es = _terms(builder, lo, hi, R, [zexp] * (R * P), ebody)
    fr = _splat(builder, frac, _V8D)

    def pow2(k):      # 2.0 ** k for an <8 x double> of small integers
        ki = builder.sext(builder.fptosi(k, _V8I), _V8L)
        return builder.bitcast(builder.shl(builder.add(ki, _c8(1023)), _c8(52)), _V8D)

    eds, cs = [], []
    for r, (oa, oi, prv, pre, ro) in enumerate(rows):
        e = _vload(builder, pre, ro, _V8F, 4)
        for x in es[r * P:(r + 1) * P]:
            e = _vmax(builder, e, x)
        ed = _vmax(builder, builder.fpext(e, _V8D), _c8(-900.0, _V8D))
        eds.append(ed)
        cs.append(pow2(builder.fsub(fr, ed)))

    def sbody(t, r, s):
        x = builder.load(builder.gep(pAV, [builder.add(rows[r][0], t)]))
        g = _vload(builder, pBV, brow(t, r), _V8D, 8)
        return builder.fadd(s, builder.call(ftrunc, [builder.fmul(builder.fmul(_splat(builder, x, _V8D), g), cs[r])]))

    def fsums(_):
        ss = _terms(builder, lo, hi, R, [_c8(-0.0, _V8D)] * (R * P), sbody)
        out = []
        for r, (oa, oi, prv, pre, ro) in enumerate(rows):
            parts = ss[r * P:(r + 1) * P]
            while len(parts) > 1:
                parts = [builder.fadd(parts[k], parts[k + 1]) if k + 1 < len(parts) else parts[k]
                         for k in range(0, len(parts), 2)]
            s0 = builder.call(ftrunc, [builder.fmul(_vload(builder, prv, ro, _V8D, 8), cs[r])])
            out.append(builder.fadd(s0, parts[0]))
        return out

    def ibody(t, r, s):
        x = builder.load(builder.gep(pAV, [builder.add(rows[r][0], t)]))
        g = _vload(builder, pBV, brow(t, r), _V8D, 8)
        return builder.add(s, builder.fptosi(builder.fmul(builder.fmul(_splat(builder, x, _V8D), g), cs[r]), _V8L))

    def isums(_):
        ss = _terms(builder, lo, hi, R, [_c8(0)] * (R * P), ibody)
        out = []
        for r, (oa, oi, prv, pre, ro) in enumerate(rows):
            parts = ss[r * P:(r + 1) * P]
            while len(parts) > 1:
                parts = [builder.add(parts[k], parts[k + 1]) if k + 1 < len(parts) else parts[k]
                         for k in range(0, len(parts), 2)]
            s0 = builder.fptosi(builder.fmul(_vload(builder, prv, ro, _V8D, 8), cs[r]), _V8L)
            out.append(builder.sitofp(builder.add(s0, parts[0]), _V8D))
        return out

    if finite is None or not _packed_int64_conversions():
        sums = fsums(None)
    else:
        with builder.if_else(finite, likely=True) as (then, otherwise):
            with then:
                si = isums(None)
                bi = builder.block
            with otherwise:
                sf = fsums(None)
                bf = builder.block
        sums = []
        for x, y in zip(si, sf):
            ph = builder.phi(_V8D)
            ph.add_incoming(x, bi)
            ph.add_incoming(y, bf)
            sums.append(ph)
    return [builder.fmul(sm, pow2(builder.fsub(eds[r], fr))) for r, sm in enumerate(sums)]


def _gen_row8(builder, pAV, pAE, oa, pRI, oi, lo, hi, pBV, pBE, prv, pre, ro, frac):
    """_gen_rows8 of the one row (oa, oi, prv, pre, ro)."""
    return _gen_rows8(builder, pAV, pAE, pRI, lo, hi, pBV, pBE, frac, [(oa, oi, prv, pre, ro)])[0]


def _row_groups(builder, M_, init, body):
    """Run body(rows, acc) -> acc over the rows 0..M-1 of a warp, _ROWS rows a call (rows: their i64
    indices), the last M % _ROWS rows one a call."""
    zero = _ir.Constant(_I64, 0)
    mid = builder.and_(M_, _ir.Constant(_I64, -_ROWS))

    def grouped(accs):
        return _loopn(builder, zero, mid, _ROWS, accs,
                      lambda i, a: [body([builder.add(i, _ir.Constant(_I64, r)) for r in range(_ROWS)], a[0])])

    acc = _when(builder, builder.icmp_signed("<", zero, mid), [init], grouped)
    return _when(builder, builder.icmp_signed("<", mid, M_), acc,
                 lambda a: _loopn(builder, mid, M_, 1, a, lambda i, x: [body([i], x[0])]))[0]


def _gen_round8(builder, v, rp):
    """IR of fused._fround for the <8 x double> v, every case in vector form: (the register word's
    bits <8 x i64>, ignored low bits zero; the rounded values <8 x double>).  v is the exact result (a normal float64, zero,
    or the IEEE special the block's float64 sum gave): NaN -> the canonical NaN, +-inf and results
    whose rounded bits reach inf's (OVF_INF) -> +-inf, zero and results rounding to zero -> +0
    (an HMMA never writes -0), subnormal results rounded on the format's fixed quantum.
    rp: the 8 <8 x i64> splats of round_params."""
    hw = builder.icmp_signed("!=", builder.extract_element(rp[7], _ir.Constant(_I32, 0)), _ir.Constant(_I64, 0))
    with builder.if_else(hw, likely=True) as (then, otherwise):
        with then:
            bits_h, val_h = _gen_round8_f32(builder, v)
            blk_h = builder.block
        with otherwise:
            bits_g, val_g = _gen_round8_any(builder, v, rp)
            blk_g = builder.block
    bits = builder.phi(_V8L)
    bits.add_incoming(bits_h, blk_h)
    bits.add_incoming(bits_g, blk_g)
    val = builder.phi(_V8D)
    val.add_incoming(val_h, blk_h)
    val.add_incoming(val_g, blk_g)
    return bits, val, _ir.Constant(_ir.VectorType(_ir.IntType(1), 8), [0] * 8)


def _gen_round8_f32(builder, v):
    """_gen_round8 into f32 with ties to even (rp[7] set, see round_params): the host's IEEE
    double -> float conversion is that rounding (subnormal results on the fixed quantum, overflow
    to +-inf; every kernel has checked that the host FPU is in round-to-nearest without FTZ / DAZ),
    then the canonical NaN and +0 for zero results."""
    isnan = builder.fcmp_unordered("uno", v, v)
    b = builder.zext(builder.bitcast(builder.fptrunc(v, _V8F), _V8I), _V8L)
    zero = builder.icmp_signed("==", builder.and_(b, _c8(0x7FFFFFFF)), _c8(0))
    b = builder.select(zero, _c8(0), b)
    bits = builder.select(isnan, _c8(0x7FFFFFFF), b)
    val = builder.select(isnan, v, builder.fpext(builder.bitcast(builder.trunc(b, _V8I), _V8F), _V8D))
    return bits, val


def _gen_round8_any(builder, v, rp):
    """The general case of _gen_round8 (any format, ties to even or truncation)."""
    mb, emin, infb, sbit, rne, nanb, ign = rp[:7]
    fround = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_V8D, [_V8D]), "llvm.rint.v8f64")
    ftrunc = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_V8D, [_V8D]), "llvm.trunc.v8f64")
    u = builder.bitcast(v, _V8L)
    a = builder.and_(u, _c8(0x7FFFFFFFFFFFFFFF))
    special = builder.icmp_signed(">=", a, _c8(0x7FF0000000000000))
    isnan = builder.icmp_signed(">", a, _c8(0x7FF0000000000000))
    e = builder.sub(builder.lshr(a, _c8(52)), _c8(1023))
    e = builder.select(builder.icmp_signed(">", e, emin), e, emin)
    ue = builder.sub(e, mb)                                         # exponent of the last kept bit
    pw = builder.bitcast(builder.shl(builder.sub(_c8(1023), ue), _c8(52)), _V8D)     # 2^-ue
    y = builder.fmul(builder.bitcast(a, _V8D), pw)
    y = builder.select(special, _c8(0.0, _V8D), y)
    isrne = builder.icmp_signed("!=", rne, _c8(0))
    qf = builder.select(isrne, builder.call(fround, [y]), builder.call(ftrunc, [y]))
    # qf is a non-negative integer below 2^52: its bits in 2^52 + qf are q (no packed double -> int64
    # conversion needed, which AVX2 lacks)
    q = builder.sub(builder.bitcast(builder.fadd(qf, _c8(2.0 ** 52, _V8D)), _V8L), _c8(0x4330000000000000))
    bits = builder.add(builder.shl(builder.add(builder.sub(ue, emin), mb), mb), q)
    ovf = builder.or_(builder.icmp_signed(">=", bits, infb), builder.and_(special, builder.not_(isnan)))
    bits = builder.select(ovf, infb, bits)
    sign = builder.and_(u, _c8(-0x8000000000000000))
    zero = builder.and_(builder.icmp_signed("==", q, _c8(0)), builder.not_(special))
    sbits = builder.select(zero, _c8(0), builder.shl(builder.lshr(u, _c8(63)), sbit))
    bits = builder.select(isnan, nanb, builder.shl(builder.or_(bits, sbits), ign))
    # the rounded value: q * 2^ue with v's sign; +-inf on overflow; NaN stays; +0 for zero
    val = builder.fmul(qf, builder.bitcast(builder.shl(builder.add(ue, _c8(1023)), _c8(52)), _V8D))
    val = builder.select(ovf, _c8(float("inf"), _V8D), val)
    val = builder.bitcast(builder.or_(builder.bitcast(val, _V8L), builder.select(zero, _c8(0), sign)), _V8D)
    val = builder.select(isnan, v, val)
    return bits, val


def _gen_accexp(builder, v, em):
    """<8 x float> alignment exponents of rounded accumulators v (<8 x double>): max(floor(log2 |v|),
    em) (em: <8 x float> splat of the format's smallest normal exponent); _ZEXP for zeros, NaN, inf."""
    a = builder.and_(builder.bitcast(v, _V8L), _c8(0x7FFFFFFFFFFFFFFF))
    eb = builder.trunc(builder.sub(builder.lshr(a, _c8(52)), _c8(1023)), _V8I)
    ex = _vmax(builder, builder.sitofp(eb, _V8F), em)
    ok = builder.and_(builder.icmp_signed("!=", a, _c8(0)), builder.icmp_signed("<", a, _c8(0x7FF0000000000000)))
    return builder.select(ok, ex, _splat(builder, _ir.Constant(_F32, float(_ZEXP)), _V8F))


@_intrinsic
def _accexp8(typingctx, V, em, E):
    """E[0:8] = _gen_accexp of V[0:8]."""
    if not (V.dtype == _nbt.float64 and E.dtype == _nbt.float32):
        return None
    sig = _nbt.void(V, em, E)

    def codegen(context, builder, sig, args):
        pV, pE = _data(context, builder, sig, args, 0), _data(context, builder, sig, args, 2)
        z = _ir.Constant(_I64, 0)
        emv = _splat(builder, context.cast(builder, args[1], sig.args[1], _nbt.float32), _V8F)
        _vstore(builder, _gen_accexp(builder, _vload(builder, pV, z, _V8D, 8), emv), pE, z, 4)
        return context.get_dummy_value()

    return sig, codegen


def _any8(builder, m):
    return builder.icmp_unsigned("!=", builder.bitcast(m, _ir.IntType(8)), _ir.Constant(_ir.IntType(8), 0))


def _data(context, builder, sig, args, k):
    return context.make_array(sig.args[k])(context, builder, args[k]).data


def _load_rp(builder, prp):
    return [_splat(builder, builder.load(builder.gep(prp, [_ir.Constant(_I64, k)])), _V8L) for k in range(8)]


@_intrinsic
def _row8(typingctx, AV, AE, oa, RI, oi, lo, hi, BV, BE, rv, re, ro, fracf, VV):
    """VV[0:8] = the exact sum of one block of one row (see _gen_row8); requires lo < hi."""
    if not (isinstance(AV, _nbt.Array) and AV.dtype == _nbt.float64 and AE.dtype == _nbt.float32
            and BV.dtype == _nbt.float64 and BE.dtype == _nbt.float32 and rv.dtype == _nbt.float64
            and re.dtype == _nbt.float32 and VV.dtype == _nbt.float64 and RI.dtype == _nbt.int64):
        return None
    sig = _nbt.void(AV, AE, oa, RI, oi, lo, hi, BV, BE, rv, re, ro, fracf, VV)

    def codegen(context, builder, sig, args):
        ty = sig.args
        p = {k: _data(context, builder, sig, args, k) for k in (0, 1, 3, 7, 8, 9, 10, 13)}
        iv = {k: _i64(context, builder, ty[k], args[k]) for k in (2, 4, 5, 6, 11)}
        frac = context.cast(builder, args[12], ty[12], _nbt.float64)
        v = _gen_row8(builder, p[0], p[1], iv[2], p[3], iv[4], iv[5], iv[6], p[7], p[8], p[9], p[10], iv[11], frac)
        _vstore(builder, v, p[13], _ir.Constant(_I64, 0), 8)
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def _rows_fused(typingctx, M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rp, VV, DB, finite):
    """A whole fused single-block warp: for every row i < M, VV[8i:8i+8] = the exact sum of its Ka
    terms and C (see _gen_row8) and DB[8i:8i+8] its bits rounded once (rp: round_params).  Returns
    True if any output needs fused._fround (then DB is to be redone from VV).  finite: no element of
    A, B or C is NaN or inf (the sums then run in int64, see _gen_rows8)."""
    if not (AV.dtype == _nbt.float64 and DB.dtype == _nbt.uint64 and (RI is _nbt.none or RI.dtype == _nbt.int64)):
        return None
    sig = _nbt.boolean(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rp, VV, DB, finite)

    def codegen(context, builder, sig, args):
        ty = sig.args
        M_ = _i64(context, builder, ty[0], args[0])
        Ka_ = _i64(context, builder, ty[1], args[1])
        sp = context.cast(builder, args[5], ty[5], _nbt.boolean)
        pAV, pAE, pBV, pBE, pCV, pCE, prp, pVV, pDB = (
            _data(context, builder, sig, args, k) for k in (2, 3, 6, 7, 8, 9, 11, 12, 13))
        pRI = None if ty[4] is _nbt.none else _data(context, builder, sig, args, 4)
        frac = context.cast(builder, args[10], ty[10], _nbt.float64)
        rp = _load_rp(builder, prp)
        zero = _ir.Constant(_I64, 0)
        fin = context.cast(builder, args[14], ty[14], _nbt.boolean)

        def rbody(rows, rare):
            spec = []
            for i in rows:
                oa = builder.mul(i, Ka_)
                spec.append((oa, builder.select(sp, oa, zero), pCV, pCE, builder.shl(i, _ir.Constant(_I64, 3))))
            vs = _gen_rows8(builder, pAV, pAE, pRI, zero, Ka_, pBV, pBE, frac, spec, fin)
            for v, (_, _, _, _, ro) in zip(vs, spec):
                bits, _, r = _gen_round8(builder, v, rp)
                _vstore(builder, v, pVV, ro, 8)
                _vstore(builder, bits, pDB, ro, 8)
                rare = builder.or_(rare, r)
            return rare

        rare = _row_groups(builder, M_, _ir.Constant(_ir.VectorType(_ir.IntType(1), 8), [0] * 8), rbody)
        return _any8(builder, rare)

    return sig, codegen


def _gen_two_blocks(builder, rows, Ka_, pAV, pAE, pRI, sp, pBV, pBE, frac, first, pRV, pRE, rp1, em, fin):
    """Block 1 of each row (terms 0..Ka/2-1, its accumulator given by first(i, ro) as (pV, pE, offset)),
    rounded (rp1) into row i's accumulator slot 8 (i + 1) of RV / RE, then block 2's exact sums with that
    accumulator (not yet rounded).  The two-block recipes share this (_rows_sep, _rows_chain2); returns
    (block-2 sums, block-1 rare flags)."""
    zero = _ir.Constant(_I64, 0)
    half = builder.ashr(Ka_, _ir.Constant(_I64, 1))
    spec1, spec2 = [], []
    for i in rows:
        oa = builder.mul(i, Ka_)
        oi = builder.select(sp, oa, zero)
        ro = builder.shl(i, _ir.Constant(_I64, 3))
        spec1.append((oa, oi) + first(i, ro))
        spec2.append((oa, oi, pRV, pRE, builder.add(ro, _ir.Constant(_I64, 8))))   # this row's acc slot
    v1s = _gen_rows8(builder, pAV, pAE, pRI, zero, half, pBV, pBE, frac, spec1, fin)
    fin2, rares = fin, []
    for v1, (_, _, _, _, ra) in zip(v1s, spec2):
        _, a1, r1 = _gen_round8(builder, v1, rp1)
        _vstore(builder, a1, pRV, ra, 8)
        _vstore(builder, _gen_accexp(builder, a1, em), pRE, ra, 4)
        rares.append(r1)
        ok = builder.fcmp_ordered("==", builder.fsub(a1, a1), _c8(0.0, _V8D))     # a1 finite
        ok = builder.icmp_unsigned("==", builder.bitcast(ok, _ir.IntType(8)), _ir.Constant(_ir.IntType(8), 255))
        fin2 = builder.and_(fin2, ok)
    return _gen_rows8(builder, pAV, pAE, pRI, half, Ka_, pBV, pBE, frac, spec2, fin2), rares


@_intrinsic
def _rows_sep(typingctx, M, Ka, AV, AE, RI, sparse, BV, BE, CV, fracf, rpb, rpa, emino, RV, RE, DB, finite):
    """A whole warp of the two-block recipe with C added separately (sm_90 fp8): for every row,
    block 1 from +0 (terms 0..Ka/2-1 in block order), rounded (rpb) into the accumulator format;
    block 2 with that accumulator, rounded again; then D = RNE(acc + C) (rpa), or acc's own bits
    when C is +-0.  RV / RE (float64 / float32, length 8 * (M + 1)): scratch; the first 8 of each
    must hold +0 / _ZEXP.  Returns True if a block result or the sum is zero, subnormal or
    overflowing in some output (DB is then to be redone by the general per-row code).  finite: no
    element of A, B or C is NaN or inf (block sums then run in int64 while the accumulators stay
    finite, see _gen_rows8)."""
    if not (AV.dtype == _nbt.float64 and DB.dtype == _nbt.uint64 and RV.dtype == _nbt.float64
            and RE.dtype == _nbt.float32 and (RI is _nbt.none or RI.dtype == _nbt.int64)):
        return None
    sig = _nbt.boolean(M, Ka, AV, AE, RI, sparse, BV, BE, CV, fracf, rpb, rpa, emino, RV, RE, DB, finite)

    def codegen(context, builder, sig, args):
        ty = sig.args
        M_ = _i64(context, builder, ty[0], args[0])
        Ka_ = _i64(context, builder, ty[1], args[1])
        sp = context.cast(builder, args[5], ty[5], _nbt.boolean)
        pAV, pAE, pBV, pBE, pCV, prb, pra, pRV, pRE, pDB = (
            _data(context, builder, sig, args, k) for k in (2, 3, 6, 7, 8, 10, 11, 13, 14, 15))
        pRI = None if ty[4] is _nbt.none else _data(context, builder, sig, args, 4)
        frac = context.cast(builder, args[9], ty[9], _nbt.float64)
        em = _splat(builder, context.cast(builder, args[12], ty[12], _nbt.float32), _V8F)
        rpb_ = _load_rp(builder, prb)
        rpa_ = _load_rp(builder, pra)
        zero = _ir.Constant(_I64, 0)
        fin = context.cast(builder, args[16], ty[16], _nbt.boolean)

        def rbody(rows, rare):
            v2s, r1s = _gen_two_blocks(builder, rows, Ka_, pAV, pAE, pRI, sp, pBV, pBE, frac,
                                       lambda i, ro: (pRV, pRE, zero), pRV, pRE, rpb_, em, fin)
            for r1 in r1s:
                rare = builder.or_(rare, r1)
            for v2, i in zip(v2s, rows):
                ro = builder.shl(i, _ir.Constant(_I64, 3))
                b2, a2, r2 = _gen_round8(builder, v2, rpb_)
                cv = _vload(builder, pCV, ro, _V8D, 8)
                b3, _, r3 = _gen_round8(builder, builder.fadd(a2, cv), rpa_)
                czero = builder.fcmp_ordered("==", cv, _c8(0.0, _V8D))
                _vstore(builder, builder.select(czero, b2, b3), pDB, ro, 8)
                rare = builder.or_(rare, builder.or_(r2, r3))
            return rare

        rare = _row_groups(builder, M_, _ir.Constant(_ir.VectorType(_ir.IntType(1), 8), [0] * 8), rbody)
        return _any8(builder, rare)

    return sig, codegen


@_intrinsic
def _rows_chain2(typingctx, M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rp, emino, RV, RE, DB, finite):
    """A whole warp of the fused two-block recipe (Ada fp8): for every row, block 1 (terms
    0..Ka/2-1 in block order) with C, rounded (rp) into the accumulator format; block 2 with that
    accumulator, rounded again into DB -- the general per-row chain, rows side by side.  RV / RE
    (float64 / float32, length 8 * (M + 1)): scratch, row i's accumulator at 8 (i + 1).  finite: no
    element of A, B or C is NaN or inf (block 2 also needs a finite block-1 result for the int64
    sums, see _gen_rows8)."""
    if not (AV.dtype == _nbt.float64 and DB.dtype == _nbt.uint64 and RV.dtype == _nbt.float64
            and RE.dtype == _nbt.float32 and (RI is _nbt.none or RI.dtype == _nbt.int64)):
        return None
    sig = _nbt.void(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rp, emino, RV, RE, DB, finite)

    def codegen(context, builder, sig, args):
        ty = sig.args
        M_ = _i64(context, builder, ty[0], args[0])
        Ka_ = _i64(context, builder, ty[1], args[1])
        sp = context.cast(builder, args[5], ty[5], _nbt.boolean)
        pAV, pAE, pBV, pBE, pCV, pCE, prp, pRV, pRE, pDB = (
            _data(context, builder, sig, args, k) for k in (2, 3, 6, 7, 8, 9, 11, 13, 14, 15))
        pRI = None if ty[4] is _nbt.none else _data(context, builder, sig, args, 4)
        frac = context.cast(builder, args[10], ty[10], _nbt.float64)
        em = _splat(builder, context.cast(builder, args[12], ty[12], _nbt.float32), _V8F)
        rp_ = _load_rp(builder, prp)
        fin = context.cast(builder, args[16], ty[16], _nbt.boolean)

        def rbody(rows, rare):
            v2s, _ = _gen_two_blocks(builder, rows, Ka_, pAV, pAE, pRI, sp, pBV, pBE, frac,
                                     lambda i, ro: (pCV, pCE, ro), pRV, pRE, rp_, em, fin)
            for v2, i in zip(v2s, rows):
                b2, _, _ = _gen_round8(builder, v2, rp_)
                _vstore(builder, b2, pDB, builder.shl(i, _ir.Constant(_I64, 3)), 8)
            return rare

        _row_groups(builder, M_, _ir.Constant(_ir.VectorType(_ir.IntType(1), 8), [0] * 8), rbody)
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def _round8_common(typingctx, V, OUT, OV, rp):
    """Round the 8 exact float64 values V once into the result format, as fused._round_row's
    common case: OUT gets the bits (without ignored bits), OV the rounded values; returns True if
    any value needs fused._fround (zero, subnormal or overflowing result).  rp: round_params."""
    if not (V.dtype == _nbt.float64 and OUT.dtype == _nbt.uint64 and OV.dtype == _nbt.float64
            and rp.dtype == _nbt.int64):
        return None
    sig = _nbt.boolean(V, OUT, OV, rp)

    def codegen(context, builder, sig, args):
        pV, pO, pOV, prp = (_data(context, builder, sig, args, k) for k in range(4))  # noqa
        z = _ir.Constant(_I64, 0)
        bits, ov, rare = _gen_round8(builder, _vload(builder, pV, z, _V8D, 8), _load_rp(builder, prp))
        _vstore(builder, bits, pO, z, 8)
        _vstore(builder, ov, pOV, z, 8)
        return _any8(builder, rare)

    return sig, codegen


def round_params(fmt, rne):
    """The rp vector of _gen_round8 for a result format: mantissa bits, smallest normal exponent,
    +inf bits and sign bit position (both without ignored bits), 1 for ties-to-even (0: truncation),
    canonical NaN word (every bit of the register word but the sign), ignored low bits (the rounded
    bits are shifted up by them: f32e8m13 gives an f32 word whose 10 low bits are zero), and 1 where
    that rounding is the host's double -> float conversion (f32, ties to even: _gen_round8_f32)."""
    width, eb, mb, ign, hinf = fmt
    assert hinf != 0
    bias = (1 << (eb - 1)) - 1
    infb = ((1 << eb) - 1) << mb
    hw = 1 if (tuple(int(x) for x in fmt) == (32, 8, 23, 0, 1) and rne) else 0
    return np.array([mb, 1 - bias, infb, width - ign - 1, 1 if rne else 0, (1 << (width - 1)) - 1, ign, hw],
                    np.int64)


@njit(cache=True, nogil=True)
def _tc_chunk(p, a, b, c, d, e, w0, w1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
              q, scale, emin, rpb, rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed):
    """Warps w0..w1-1.  need[w]: 0 computed here, ordinary elements; 1 computed here, some element
    (or block scale) NaN or inf (their outputs decided per element, see _decode); 2 not computed
    (d left unset): tf32 sparse metadata that splices B halves, or a block-scaled warp whose C holds
    a nonzero value below the zero-term exponent, for the exact kernel.

    Block scales (scaled; ue8m0 only, see _power_of_two_scales): every decoded A / B element is
    multiplied by 2^(its scale's exponent) and its alignment exponent raised by it -- exact, as the
    model's term a*b*SA*SB with exponent ea+eb+esa+esb; a NaN scale makes its elements NaN.  A zero
    C takes the zero-term exponent zexp; the zero products' zexp then never exceeds an output's
    largest exponent, unless a tiny nonzero C (then the warp goes to the exact kernel)."""
    N = 8
    nblk, frac = p[P_NBLK], p[P_FRAC]
    nb = Ka // nblk
    fused = p[P_CMODE] == CMODE_FUSED
    ebo = p[P_ACC + 1]
    emino = np.float32(2 - (1 << (ebo - 1)))
    igd = np.uint64(p[P_D + 3])
    fracf = np.float64(frac)
    # scratch: one allocation per element type, cut into the working arrays (slices are views)
    nf = M * Ka + K * N + 2 * M * N + 3 * N + (M + 1) * N
    F = np.zeros(nf, np.float64)
    o = 0
    AV = F[o:o + M * Ka]
    o += M * Ka
    BV = F[o:o + K * N]
    o += K * N
    CV = F[o:o + M * N]
    o += M * N
    VM = F[o:o + M * N]
    o += M * N
    RV = F[o:o + N]
    VV = F[o + N:o + 2 * N]
    OV = F[o + 2 * N:o + 3 * N]
    o += 3 * N
    RS = F[o:o + (M + 1) * N]      # _rows_sep's accumulators; the first 8: +0
    G = np.empty(M * Ka + K * N + M * N + N + (M + 1) * N, np.float32)
    o = 0
    AE = G[o:o + M * Ka]
    o += M * Ka
    BE = G[o:o + K * N]
    o += K * N
    CE = G[o:o + M * N]
    o += M * N
    RE = G[o:o + N]
    o += N
    RSE = G[o:o + (M + 1) * N]
    RSE[:] = _ZEXP
    U = np.empty(N + M * N, np.uint64)
    OB = U[:N]
    DB = U[N:]
    DBw = np.empty_like(d[0])            # D's words in matrix order, as runs (d: register words as runs)
    DBe = DBw.view(ed.dtype)
    RI = np.empty(M * Ka, np.int64)
    # raw elements in matrix order (every element is in a register once), gathered in runs of
    # elements (a, b, c: the register words viewed as runs; pa, pb, pc: the runs' places)
    RAw = np.empty_like(a[0])
    RBw = np.empty_like(b[0])
    RCw = np.empty_like(c[0])
    RA = RAw.view(ea.dtype)
    RB = RBw.view(eb.dtype)
    RC = RCw.view(ec.dtype)
    for w in range(w0, w1):
        for t in range(pa.shape[0]):
            RAw[pa[t]] = a[w, t]
        for t in range(pb.shape[0]):
            RBw[pb[t]] = b[w, t]
        for t in range(pc.shape[0]):
            RCw[pc[t]] = c[w, t]
        special = _decode(RA, q[0], scale[0], emin[0], AV, AE)
        special |= _decode(RB, q[1], scale[1], emin[1], BV, BE)
        special |= _decode(RC, q[2], scale[2], emin[2], CV, CE)
        if scaled:
            tiny = False
            for x in range(M * N):
                if CE[x] == _ZEXP and CV[x] == 0.0:
                    CE[x] = zexp
                elif CE[x] < zexp and CV[x] - CV[x] == 0.0:
                    tiny = True
            if tiny:
                need[w] = 2
                continue
            for i in range(M):
                for t in range(Ka):
                    x = SFA[w, i, sta[t]]
                    if x == 255:
                        AV[i * Ka + t] = np.nan
                        special = True
                    else:
                        AV[i * Ka + t] *= _pow2f(np.int64(x) - 127)
                        AE[i * Ka + t] += np.float32(np.int64(x) - 127)
            for r in range(K):
                for j in range(N):
                    x = SFB[w, j, srb[r]]
                    if x == 255:
                        BV[r * N + j] = np.nan
                        special = True
                    else:
                        BV[r * N + j] *= _pow2f(np.int64(x) - 127)
                        BE[r * N + j] += np.float32(np.int64(x) - 127)
        splice = False
        if sparse:
            ew = e[w]
            for x in range(spt.shape[0]):
                word = np.int64(ew[spt[x, 1]]) >> spt[x, 2]
                if tf32meta:
                    # valid tf32 nibbles 0b0100 / 0b1110 pick element 0 / 1; others splice B halves
                    nib = word & 15
                    splice |= nib != 0b0100 and nib != 0b1110
                    idx = nib >> 3
                else:
                    idx = word & 3
                RI[spt[x, 0]] = spt[x, 3] + spt[x, 4] * idx
        if splice:
            need[w] = 2
            continue
        need[w] = 1 if special else 0
        if fused and nblk == 1:
            if sparse:
                _rows_fused(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, VM, DB, not special)
            else:   # B row t for term t: no row index
                _rows_fused(M, Ka, AV, AE, None, sparse, BV, BE, CV, CE, fracf, rpb, VM, DB, not special)
        elif fused and nblk == 2:
            if sparse:
                _rows_chain2(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, emino, RS, RSE, DB, not special)
            else:
                _rows_chain2(M, Ka, AV, AE, None, sparse, BV, BE, CV, CE, fracf, rpb, emino, RS, RSE, DB, not special)
        elif not fused and nblk == 2:
            if sparse:
                _rows_sep(M, Ka, AV, AE, RI, sparse, BV, BE, CV, fracf, rpb, rpa, emino, RS, RSE, DB, not special)
            else:
                _rows_sep(M, Ka, AV, AE, None, sparse, BV, BE, CV, fracf, rpb, rpa, emino, RS, RSE, DB, not special)
        else:
            # any other chain of blocks: one row at a time, the accumulator rounded after each block
            ri = RI if sparse else ri0
            for i in range(M):
                o = i * Ka if sparse else 0
                if fused:
                    rv, re, ro = CV, CE, i * N
                else:
                    rv, re, ro = RV, RE, 0
                    rv[:] = 0.0
                    re[:] = _ZEXP
                for blk in range(nblk):
                    lo = blk * nb
                    _row8(AV, AE, i * Ka, ri, o, lo, lo + nb, BV, BE, rv, re, ro, fracf, VV)
                    _round8_common(VV, OB, OV, rpb)
                    if fused and blk == nblk - 1:
                        for j in range(N):
                            DB[i * N + j] = OB[j]
                    else:
                        if fused:   # the next block's accumulator (C's slot is this row's own)
                            for j in range(N):
                                rv[ro + j] = OV[j]
                            _accexp8(OV, emino, re[ro:ro + N])
                        else:
                            rv[:] = OV
                            _accexp8(OV, emino, re)
                if not fused:
                    # D = RNE(acc + C), an IEEE addition of two values of D's format (the float64
                    # sum is exact for f16 and a harmless double rounding for f32; acc is never -0)
                    for j in range(N):
                        VV[j] = rv[j] + CV[i * N + j]
                    _round8_common(VV, OB, OV, rpa)
                    for j in range(N):
                        DB[i * N + j] = OB[j]
        for x in range(M * N):
            DBe[x] = DB[x] << igd
        for t in range(pd.shape[0]):
            d[w, t] = DBw[pd[t]]


def _tc_kernel(a3, b3, c3, d3, e, need, p, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
               q, scale, emin, rpb, rpa, chunk, q64, q32, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed):
    """Every warp (need: see _tc_chunk); returns the number of warps left to the exact kernel.
    a3 .. d3: (W, 32, runs) views of the register words as runs of elements (C-contiguous);
    ea .. ed: empty arrays of A's, B's, C's and D's element types."""
    W = a3.shape[0]
    a = a3.reshape(W, a3.shape[1] * a3.shape[2])
    b = b3.reshape(W, b3.shape[1] * b3.shape[2])
    c = c3.reshape(W, c3.shape[1] * c3.shape[2])
    d = d3.reshape(W, d3.shape[1] * d3.shape[2])
    nchunks = (W + chunk - 1) // chunk
    nslow = 0
    for ch in prange(nchunks):
        w0 = ch * chunk
        w1 = min(W, w0 + chunk)
        if not _fp_env_ok(q64, q32):      # rounding mode / FTZ / DAZ are per thread
            for w in range(w0, w1):
                need[w] = 2
            nslow += w1 - w0
            continue
        _tc_chunk(p, a, b, c, d, e, w0, w1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
                  q, scale, emin, rpb, rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed)
        n = 0
        for w in range(w0, w1):
            n += need[w] == 2
        nslow += n
    return nslow


def _build():
    return (njit(cache=True, nogil=True)(named_copy(_tc_kernel, "_tc_kernel_serial")),
            njit(cache=True, nogil=True, parallel=True)(named_copy(_tc_kernel, "_tc_kernel_parallel")))


_KERNELS = None
_NO_SCALES = np.zeros((1, 1, 1), np.uint64)


@njit(cache=True, nogil=True, inline="always")
def _pow2f(k):
    """2.0 ** k for -1022 <= k <= 1023, exactly (a ue8m0 scale's value)."""
    return _bits_f64(np.uint64(k + 1023) << np.uint64(52))


#: set to a dict to count, per call, the warps by how the kernel took them: "ordinary" (every element
#: finite), "special" (some element NaN or inf, outputs decided per element) and "exact" (left to the
#: exact kernel).  A debugging aid for tests; None (the default) costs nothing.
STATS = None
_STAT_NAMES = ("ordinary", "special", "exact")


def tc_runner(ins, params, ft, chunk: int, threshold: int):
    """A function (a, b, c, e, d) -> the indices of the warps left to the exact kernel (None: none),
    computing D for all the others.  a, b, c, d: C-contiguous uint32 (W, 32, words); e: (W, 32)
    metadata words or a dummy.  Everything that does not depend on the call is bound once."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _build()
    ser, par = _KERNELS
    m, n, k = ins.mnk
    ta, tb, tc, td = ft["wide"]
    consts = (params, m, k, ft["ka"], *ft["gpos"], ft["ri0"], ft["spt"], ins.is_sparse, ins.atype == "tf32",
              ft["q"], ft["scale"], ft["emin"], ft["rpb"], ft["rpa"])
    tail = (ins.block_scaled, ft["sta"], ft["srb"], ft["zexp"],
            *(np.empty(0, _DTYPE[x]) for x in ft["bits"]))

    def go(a, b, c, e, d, scales=None):
        W = a.shape[0]
        need = np.empty(W, np.int8)
        fn = par if W >= threshold else ser
        sfa, sfb = scales if scales is not None else (_NO_SCALES, _NO_SCALES)
        # a few chunks a thread at least (each allocates its scratch once): no fixed cost per 64 warps
        ch = chunk if W <= 4 * chunk else max(chunk, W // (4 * numba.get_num_threads()))
        nslow = fn(a.view(ta), b.view(tb), c.view(tc), d.view(td), e, need, *consts, ch, _PROBE64, _PROBE32,
                   sfa, sfb, *tail)
        if STATS is not None:
            for name, x in zip(_STAT_NAMES, np.bincount(need, minlength=3)):
                STATS[name] = STATS.get(name, 0) + int(x)
        return np.flatnonzero(need == 2) if nslow else None

    return go


# --- the plain fused chain, several panels of one row at once (whole GEMMs, wgmma) -----------------
#
# The chain of one row and PG panels (8 columns each) is PG independent dependency chains: one code
# loop over the k terms advances all of them, so the CPU overlaps their latencies (the two passes of
# _row8 are each one serial max / add chain per panel).  The exponent pass does not read the
# accumulator until its end, so the next instruction's pass can start before this one's rounding
# ends.  Every truncated term is an integer multiple of 2^(emax - frac) below 2^53 in sum (see
# the notes above), so the float64 sum is exact in any order: the accumulator's term is added last.

def _loopn(builder, lo, hi, step, inits, body):
    """_loop with several loop-carried values (a list); returns the final list."""
    pre = builder.block
    blk = builder.append_basic_block("gc.loop")
    out = builder.append_basic_block("gc.done")
    builder.branch(blk)
    builder.position_at_end(blk)
    t = builder.phi(_I64)
    accs = [builder.phi(x.type) for x in inits]
    t.add_incoming(lo, pre)
    for a, x in zip(accs, inits):
        a.add_incoming(x, pre)
    nxt = body(t, accs)
    t1 = builder.add(t, _ir.Constant(_I64, step))
    t.add_incoming(t1, builder.block)
    for a, x in zip(accs, nxt):
        a.add_incoming(x, builder.block)
    builder.cbranch(builder.icmp_signed("<", t1, hi), blk, out)
    builder.position_at_end(out)
    return nxt


def make_chain(PG, sep=False):
    """The intrinsic _chain(AV, AE, oa, BV, BE, bo, bs, s0, s1, ka, ACCV, ACCE, OB, fracf, rp, emino, rpa):
    instructions s0..s1-1 of a chain of one row and PG panels.  A terms at AV / AE[oa + t]; panel p's B
    row t at BV / BE[bo + p * bs + 8 t]; the accumulators (values, alignment exponents) of the 8 PG
    outputs are read from and written back to ACCV / ACCE, and OB gets the bits of the last rounding
    (exponents as _set_acc with emino).  Plain (sep False): one fused block per instruction, C its
    first term, rounded with rp.  sep: the two-block recipe with C added separately (sm_90 fp8, as
    gemm._chain8): the first half of the terms from +0, rounded (rp), the second half with that
    result, rounded (rp), then D = RNE(that + C) (rpa).  Requires s0 < s1 and ka (sep: ka / 2) even."""
    V8D, V8F, V8L, V8I, I64 = _V8D, _V8F, _V8L, _V8I, _I64
    c8 = _c8

    @_intrinsic
    def _chain(typingctx, AV, AE, oa, BV, BE, bo, bs, s0, s1, ka, ACCV, ACCE, OB, fracf, rp, emino, rpa):
        if not (AV.dtype == _nbt.float64 and AE.dtype == _nbt.float32 and BV.dtype == _nbt.float64
                and BE.dtype == _nbt.float32 and ACCV.dtype == _nbt.float64 and ACCE.dtype == _nbt.float32
                and OB.dtype == _nbt.uint64 and rp.dtype == _nbt.int64 and rpa.dtype == _nbt.int64):
            return None
        sig = _nbt.void(AV, AE, oa, BV, BE, bo, bs, s0, s1, ka, ACCV, ACCE, OB, fracf, rp, emino, rpa)

        def codegen(context, builder, sig, args):
            ty = sig.args
            pAV, pAE, pBV, pBE, pAV_, pAE_, pOB, prp, prpa = (_data(context, builder, sig, args, k)
                                                              for k in (0, 1, 3, 4, 10, 11, 12, 14, 16))
            oa_, bo_, bs_, s0_, s1_, ka_ = (_i64(context, builder, ty[k], args[k]) for k in (2, 5, 6, 7, 8, 9))
            frac = _splat(builder, context.cast(builder, args[13], ty[13], _nbt.float64), V8D)
            emo = _splat(builder, context.cast(builder, args[15], ty[15], _nbt.float32), V8F)
            rp_ = _load_rp(builder, prp)
            rpa_ = _load_rp(builder, prpa) if sep else None
            zexp = _splat(builder, _ir.Constant(_F32, float(_ZEXP)), V8F)
            boff = [builder.add(bo_, builder.mul(bs_, _ir.Constant(I64, p))) for p in range(PG)]
            init = ([_vload(builder, pAV_, _ir.Constant(I64, 8 * p), V8D, 8) for p in range(PG)]
                    + [_vload(builder, pAE_, _ir.Constant(I64, 8 * p), V8F, 4) for p in range(PG)])
            one = _ir.Constant(I64, 1)
            three = _ir.Constant(I64, 3)
            ftrunc = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(V8D, [V8D]), "llvm.trunc.v8f64")

            def pow2(k):
                ki = builder.sext(builder.fptosi(k, V8I), V8L)
                return builder.bitcast(builder.shl(builder.add(ki, c8(1023)), c8(52)), V8D)

            def accexp(val):         # _set_acc: max(floor(log2 |v|), emino); zero -> _ZEXP
                a = builder.and_(builder.bitcast(val, V8L), c8(0x7FFFFFFFFFFFFFFF))
                eb = builder.trunc(builder.sub(builder.lshr(a, c8(52)), c8(1023)), V8I)
                ex = _vmax(builder, builder.sitofp(eb, V8F), emo)
                return builder.select(builder.fcmp_ordered("!=", val, c8(0.0, V8D)), ex, zexp)

            def block(lo, hi, rv, re):
                """The exact sums (<8 x double> per panel) of terms lo..hi-1 and the accumulators rv / re
                (None: from +0)."""
                def ebody(t, e):         # two terms a trip, two chains per panel
                    t2 = builder.add(t, one)
                    x0 = _splat(builder, builder.load(builder.gep(pAE, [builder.add(oa_, t)])), V8F)
                    x1 = _splat(builder, builder.load(builder.gep(pAE, [builder.add(oa_, t2)])), V8F)
                    o0 = builder.shl(t, three)
                    o1 = builder.shl(t2, three)
                    out = []
                    for p in range(PG):
                        g0 = _vload(builder, pBE, builder.add(boff[p], o0), V8F, 4)
                        out.append(_vmax(builder, e[p], builder.fadd(x0, g0)))
                    for p in range(PG):
                        g1 = _vload(builder, pBE, builder.add(boff[p], o1), V8F, 4)
                        out.append(_vmax(builder, e[PG + p], builder.fadd(x1, g1)))
                    return out

                e = _loopn(builder, lo, hi, 2, [zexp] * (2 * PG), ebody)
                cs, back = [], []
                for p in range(PG):
                    ep = _vmax(builder, e[p], e[PG + p])
                    if re is not None:
                        ep = _vmax(builder, ep, re[p])
                    ed = _vmax(builder, builder.fpext(ep, V8D), c8(-900.0, V8D))
                    cs.append(pow2(builder.fsub(frac, ed)))
                    back.append(pow2(builder.fsub(ed, frac)))

                def sbody(t, sm):
                    x = _splat(builder, builder.load(builder.gep(pAV, [builder.add(oa_, t)])), V8D)
                    o = builder.shl(t, three)
                    out = []
                    for p in range(PG):
                        g = _vload(builder, pBV, builder.add(boff[p], o), V8D, 8)
                        tr = builder.call(ftrunc, [builder.fmul(builder.fmul(x, g), cs[p])])
                        out.append(builder.fadd(sm[p], tr))
                    return out

                sm = _loopn(builder, lo, hi, 1, [c8(0.0, V8D)] * PG, sbody)
                out = []
                for p in range(PG):
                    v = sm[p]
                    if rv is not None:
                        v = builder.fadd(v, builder.call(ftrunc, [builder.fmul(rv[p], cs[p])]))
                    out.append(builder.fmul(v, back[p]))
                return out

            def step(s, acc):
                rv, re = acc[:PG], acc[PG:]
                lo = builder.mul(s, ka_)
                hi = builder.add(lo, ka_)
                nv, ne = [], []
                if not sep:
                    vs = block(lo, hi, rv, re)
                    for p in range(PG):
                        bits, val, _ = _gen_round8(builder, vs[p], rp_)
                        _vstore(builder, bits, pOB, _ir.Constant(I64, 8 * p), 8)
                        nv.append(val)
                        ne.append(accexp(val))
                    return nv + ne
                h = builder.add(lo, builder.ashr(ka_, one))
                v1 = [_gen_round8(builder, v, rp_)[1] for v in block(lo, h, None, None)]
                v2 = block(h, hi, v1, [accexp(v) for v in v1])
                for p in range(PG):
                    a2 = _gen_round8(builder, v2[p], rp_)[1]
                    bits, val, _ = _gen_round8(builder, builder.fadd(a2, rv[p]), rpa_)
                    _vstore(builder, bits, pOB, _ir.Constant(I64, 8 * p), 8)
                    nv.append(val)
                    ne.append(accexp(val))
                return nv + ne

            fin = _loopn(builder, s0_, s1_, 1, init, step)
            for p in range(PG):
                _vstore(builder, fin[p], pAV_, _ir.Constant(I64, 8 * p), 8)
                _vstore(builder, fin[PG + p], pAE_, _ir.Constant(I64, 8 * p), 4)
            return context.get_dummy_value()

        return sig, codegen

    return _chain


# --- wgmma: the same kernel on decoded matrices ------------------------------------------------

def _wg_kernel(A, B, C, out, p, q, scale, emin, rp, need, q64, q32):
    """Every group of a dense single-pass fused wgmma: out[g, i, j] = D bits of row i, column j.

    A (G, M, K), B^T (G, N, K), C (G, M, N): raw element bits (uint64) as the validated call decodes
    them; N a multiple of 8.  Each group is decoded once (A by row, B as N/8 row-major (K, 8) panels,
    C as N/8 (M, 8) panels) and every panel is one _rows_fused call, as an m16n8 warp is.  NaN / inf
    elements are decided per element (_decode).  need[g] = 1: the group was left to the exact kernel
    (a host FPU not in its default state); 0: computed here."""
    G, M, K = A.shape
    N = B.shape[1]
    NC = N // 8
    fracf = np.float64(p[P_FRAC])
    igd = np.uint64(p[P_D + 3])
    for g in prange(G):
        if not _fp_env_ok(q64, q32):
            need[g] = 1
            continue
        need[g] = 0
        RA = np.empty(M * K, np.uint32)
        RB = np.empty(N * K, np.uint32)
        RC = np.empty(M * N, np.uint32)
        for i in range(M):
            for t in range(K):
                RA[i * K + t] = np.uint32(A[g, i, t])
        for j in range(N):
            o = (j >> 3) * K * 8 + (j & 7)
            for t in range(K):
                RB[o + t * 8] = np.uint32(B[g, j, t])
        for i in range(M):
            for j in range(N):
                RC[(j >> 3) * M * 8 + i * 8 + (j & 7)] = np.uint32(C[g, i, j])
        AV = np.empty(M * K, np.float64)
        AE = np.empty(M * K, np.float32)
        BV = np.empty(N * K, np.float64)
        BE = np.empty(N * K, np.float32)
        CV = np.empty(M * N, np.float64)
        CE = np.empty(M * N, np.float32)
        VM = np.empty(M * 8, np.float64)
        DB = np.empty(M * 8, np.uint64)
        special = _decode(RA, q[0], scale[0], emin[0], AV, AE)
        special |= _decode(RB, q[1], scale[1], emin[1], BV, BE)
        special |= _decode(RC, q[2], scale[2], emin[2], CV, CE)
        for jc in range(NC):
            bo = jc * K * 8
            co = jc * M * 8
            _rows_fused(M, K, AV, AE, None, False, BV[bo:bo + K * 8], BE[bo:bo + K * 8], CV[co:co + M * 8],
                        CE[co:co + M * 8], fracf, rp, VM, DB, not special)
            for i in range(M):
                for j in range(8):
                    out[g, i, jc * 8 + j] = DB[i * 8 + j] << igd


_WG_KERNEL = None


def wgmma_runner(ins, params):
    """A function (A, B, C, out) -> indices of the groups left to the exact kernel (None: none), for a
    dense wgmma whose recipe is one fused pass this kernel computes exactly; None when it is not one."""
    global _WG_KERNEL
    p = np.asarray(params, dtype=np.int64)
    m, n, k = ins.mnk
    if (sys.byteorder != "little" or ins.is_sparse or n % 8 or p[P_NBLK] != 1 or p[P_CMODE] != CMODE_FUSED
            or p[P_OP] != 0 or not tc_fast_ok(_as_checked(p), 8, k)):
        return None
    fa, fb, fc = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C)
    if any(f[0] > 32 for f in (fa, fb, fc)):
        return None
    dp = [_decode_params(f) for f in (fa, fb, fc)]
    q = np.array([x[0] for x in dp], np.int64)
    scale = np.array([x[1] for x in dp], np.float64)
    emin = np.array([_emin(fa), _emin(fb), _emin(fc)], np.float32)
    rp = round_params(_fmt(p, P_ACC), p[P_RND] == RND_RNE)
    if _WG_KERNEL is None:
        _WG_KERNEL = njit(cache=True, nogil=True, parallel=True)(named_copy(_wg_kernel, "_wg_kernel_parallel"))
    fn = _WG_KERNEL

    def go(A, B, C, out):
        need = np.empty(A.shape[0], np.int8)
        fn(A, B, C, out, p, q, scale, emin, rp, need, _PROBE64, _PROBE32)
        if STATS is not None:
            STATS["ordinary"] = STATS.get("ordinary", 0) + int((need == 0).sum())
            STATS["exact"] = STATS.get("exact", 0) + int(need.sum())
        return np.flatnonzero(need) if need.any() else None

    return go


def _wg_words_kernel(A, B, CW, sd, flat, cword, cshift, bits, OW, p, q, scale, emin, rp, need, q64, q32, nchunks):
    """_wg_kernel reading C from D's register words and writing D's words itself (8, 16 or 32-bit
    elements): CW / OW (G, 128, words) uint32, flat (128, elements) each element's place in panel order
    ((col // 8) * M * 8 + row * 8 + col % 8), cword / cshift its word and bit offset in the thread's
    words; sd[g]: scale-d (0: C is zero).  Each 8-column panel is one warp-level fused block
    (_rows_fused: rows side by side, int64 sums where no element is NaN / inf).  The groups run in
    nchunks chunks, each allocating its scratch once (a group's C / D arrays are large enough for
    malloc to map and unmap them every time).  need[g] as _wg_kernel's."""
    G, M, K = A.shape
    N = B.shape[1]
    NC = N // 8
    T, E = flat.shape
    nw = OW.shape[2]
    fracf = np.float64(p[P_FRAC])
    igd = np.uint64(p[P_D + 3])
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    K8 = K * 8
    M8 = M * 8
    for ch in prange(nchunks):
        g0 = ch * G // nchunks
        g1 = (ch + 1) * G // nchunks
        RA = np.empty(M * K, np.uint32)
        RB = np.empty(N * K, np.uint32)
        RC = np.empty(M * N, np.uint32)
        AV = np.empty(M * K, np.float64)
        AE = np.empty(M * K, np.float32)
        BV = np.empty(N * K, np.float64)
        BE = np.empty(N * K, np.float32)
        CV = np.empty(M * N, np.float64)
        CE = np.empty(M * N, np.float32)
        DB = np.empty(M * N, np.uint64)
        VM = np.empty(M * N, np.float64)
        for g in range(g0, g1):
            if not _fp_env_ok(q64, q32):
                need[g] = 1
                continue
            need[g] = 0
            for i in range(M):
                for t in range(K):
                    RA[i * K + t] = np.uint32(A[g, i, t])
            for j in range(N):
                o = (j >> 3) * K8 + (j & 7)
                for t in range(K):
                    RB[o + t * 8] = np.uint32(B[g, j, t])
            if sd[g] == 0:
                RC[:] = 0
            elif bits == 32:
                for th in range(T):
                    for j in range(E):
                        RC[flat[th, j]] = CW[g, th, j]
            else:
                for th in range(T):
                    for j in range(E):
                        RC[flat[th, j]] = (CW[g, th, cword[j]] >> cshift[j]) & mask
            special = _decode(RA, q[0], scale[0], emin[0], AV, AE)
            special |= _decode(RB, q[1], scale[1], emin[1], BV, BE)
            special |= _decode(RC, q[2], scale[2], emin[2], CV, CE)
            # each 8-column panel is one (M, 8) fused block: C, D and the sums in panel order
            for jc in range(NC):
                o = jc * M8
                bo = jc * K8
                _rows_fused(M, K, AV, AE, None, False, BV[bo:bo + K8], BE[bo:bo + K8], CV[o:o + M8], CE[o:o + M8],
                            fracf, rp, VM[o:o + M8], DB[o:o + M8], not special)
            if bits == 32:
                for th in range(T):
                    for j in range(E):
                        OW[g, th, j] = np.uint32(DB[flat[th, j]] << igd)
            else:
                for th in range(T):
                    for w in range(nw):
                        OW[g, th, w] = 0
                    for j in range(E):
                        OW[g, th, cword[j]] |= (np.uint32(DB[flat[th, j]] << igd) & mask) << cshift[j]


_WG_WORDS_KERNEL = None


def wgmma_words_runner(ins, params, flat, bits):
    """Like wgmma_runner, on D's register words: a function (A, B, CW, sd, OW) -> indices of the groups
    left to the exact kernel (None: none); None where it does not apply."""
    global _WG_WORDS_KERNEL
    if wgmma_runner(ins, params) is None or bits not in (8, 16, 32) or ins.k % 2:
        return None
    p = np.asarray(params, dtype=np.int64)
    fa, fb, fc = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C)
    dp = [_decode_params(f) for f in (fa, fb, fc)]
    q = np.array([x[0] for x in dp], np.int64)
    scale = np.array([x[1] for x in dp], np.float64)
    emin = np.array([_emin(fa), _emin(fb), _emin(fc)], np.float32)
    rp = round_params(_fmt(p, P_ACC), p[P_RND] == RND_RNE)
    per = 32 // bits
    j = np.arange(flat.shape[1])
    cword = np.ascontiguousarray(j // per, dtype=np.int64)
    cshift = np.ascontiguousarray((j % per) * bits, dtype=np.uint32)
    row, col = np.divmod(np.asarray(flat, dtype=np.int64), ins.n)
    flat = np.ascontiguousarray((col >> 3) * (ins.m * 8) + row * 8 + (col & 7), dtype=np.int64)
    if _WG_WORDS_KERNEL is None:
        _WG_WORDS_KERNEL = njit(cache=True, nogil=True, parallel=True)(
            named_copy(_wg_words_kernel, "_wg_words_kernel_parallel"))
    fn = _WG_WORDS_KERNEL

    def go(A, B, CW, sd, OW):
        need = np.empty(A.shape[0], np.int8)
        G = A.shape[0]
        nch = max(1, min(G, 4 * numba.get_num_threads()))
        fn(A, B, CW, sd, flat, cword, cshift, bits, OW, p, q, scale, emin, rp, need, _PROBE64, _PROBE32, nch)
        if STATS is not None:
            STATS["ordinary"] = STATS.get("ordinary", 0) + int((need == 0).sum())
            STATS["exact"] = STATS.get("exact", 0) + int(need.sum())
        return np.flatnonzero(need) if need.any() else None

    return go


# --- block-scaled groups (kind::mxf4 / mxf4nvf4: GST-FDPA) ----------------------------------------
#
# The model (fused.block_scaled_dot, SCALE_GROUP): G consecutive products are summed exactly; the
# group's sum times the values of its two scales is one term, whose alignment exponent is the two
# scales' exponents alone (zexp for a group with no nonzero product or a zero scale); C is a term
# (zexp when zero); every term is truncated to frac bits below the largest exponent and the sum
# rounded once.  In float64 every step is exact for these formats (checked in group_tables):
# a group sum of G products of e2m1 values lies on a 2^-2 grid below 2^10; times two scale values
# of at most 4 significant bits; scaled by 2^(frac - emax) each term is below 2^(frac + 12) and the
# sum of all terms and C below 2^53.

def group_tables(ins, params, tables, sp):
    """What the block-scaled group kernel needs for one plan, or None where it is not exact."""
    p = np.asarray(params, dtype=np.int64)
    m, n, k = ins.mnk
    ka = k // 2 if ins.is_sparse else k
    G = int(p[ar.P_SGROUP])
    fa, fb, fc, fd = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C), _fmt(p, P_D)
    if (sys.byteorder != "little" or ins.products != 1 or n != 8 or p[ar.P_SCALE] != ar.SCALE_GROUP
            or ka % G or G > 32 or int(p[P_FRAC]) > 40 or p[ar.P_OVF] != ar.OVF_INF
            or p[ar.P_ZERO] != ar.ZERO_POSITIVE or fc != (32, 8, 23, 0, 1) or fd != (32, 8, 23, 0, 1)
            or any(f[0] > 8 or f[2] > 3 or f[1] > 3 for f in (fa, fb))):
        return None
    if [t[3] for t in tables][2:] != [32, 32] or int(p[ar.P_SF + 2]) > 3:
        return None
    # element values by code (every code of these formats is finite: NaN / inf codes refuse)
    luts = []
    for f in (fa, fb):
        vals = np.zeros(1 << f[0], np.float64)
        for x in range(1 << f[0]):
            cls, s, e, sig = ar.decode(np.uint64(x), *f)
            if cls in (ar.CLS_NAN, ar.CLS_INF):
                return None
            vals[x] = 0.0 if cls == ar.CLS_ZERO else (-1.0) ** s * float(sig) * 2.0 ** (int(e) - f[2])
        luts.append(vals)
    # scale factors by byte: NaN flag, exponent (as the model decodes it), value (0 for a zero scale)
    fs = int(p[ar.P_SF + 2])
    snan = np.zeros(256, np.bool_)
    sexp = np.zeros(256, np.int64)
    sval = np.zeros(256, np.float64)
    for x in range(256):
        isnan, e, sig = ar._scale(np.uint64(x), p)
        snan[x], sexp[x] = isnan, e
        sval[x] = float(sig) * 2.0 ** (int(e) - fs)
    zon = bool(p[ar.P_ZEXP_ON])
    return dict(group=True, G=G, ka=ka, st=int(p[ar.P_STERMS]), frac=int(p[P_FRAC]), rne=int(p[P_RND]) == RND_RNE,
                lut_a=luts[0], lut_b=luts[1], snan=snan, sexp=sexp, sval=sval, zon=zon,
                zexp=float(p[ar.P_ZEXP]) if zon else -1e300)


def _group_kernel(a, b, c, e, d, SFA, SFB, need, M, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, fd, wd, sp,
                  sparse, G, st, fracf, rp, lut_a, lut_b, snan, sexp, sval, zon, zexp, chunk, q64, q32, pa2, pb2):
    """Every warp of a block-scaled group recipe; need[w] = 2 for warps left to the exact kernel (a NaN
    scale, a NaN / inf C, a host FPU not in its default state), else 0."""
    W = a.shape[0]
    N = 8
    NG = Ka // G
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        w0 = ch * chunk
        w1 = min(W, w0 + chunk)
        if not _fp_env_ok(q64, q32):
            for w in range(w0, w1):
                need[w] = 2
            continue
        AV = np.empty(M * Ka, np.float64)
        BR = np.empty(K * N, np.float64)          # B row-major (K, 8)
        CV = np.empty(M * N, np.float64)
        LC = np.empty(M * Ka, np.int64)
        DV = np.empty(M * N, np.uint32)
        GS = np.empty(N, np.float64)
        T = np.empty((NG, N), np.float64)
        GG = np.empty((NG, N), np.float64)
        TE = np.empty((NG, N), np.float64)
        SBV = np.empty((NG, N), np.float64)
        SBE = np.empty((NG, N), np.float64)
        EM = np.empty(N, np.float64)
        VV8 = np.empty(N, np.float64)
        OV8 = np.empty(N, np.float64)
        OB8 = np.empty(N, np.uint64)
        am = (1 << ba) - 1
        bm = (1 << bb) - 1
        for w in range(w0, w1):
            bad = False
            if ba == 4 and bb == 4 and pa2.shape[0] > 1:
                # two elements a byte: one table look-up each for the low and the high nibble
                a8 = a[w].reshape(a.shape[1] * a.shape[2]).view(np.uint8)
                b8 = b[w].reshape(b.shape[1] * b.shape[2]).view(np.uint8)
                for x in range(a8.shape[0]):
                    v = a8[x]
                    AV[pa2[x, 0]] = lut_a[v & 15]
                    AV[pa2[x, 1]] = lut_a[v >> 4]
                for x in range(b8.shape[0]):
                    v = b8[x]
                    BR[pb2[x, 0]] = lut_b[v & 15]
                    BR[pb2[x, 1]] = lut_b[v >> 4]
            else:
                for lane in range(32):
                    for j in range(fa.shape[1]):
                        AV[fa[lane, j]] = lut_a[(a[w, lane, wa[lane, j]] >> sa[lane, j]) & am]
                    for j in range(fb.shape[1]):
                        f = fb[lane, j]                # B^T flat: column * K + row
                        BR[(f % K) * N + f // K] = lut_b[(b[w, lane, wb[lane, j]] >> sb[lane, j]) & bm]
            for lane in range(32):
                for j in range(fc.shape[1]):
                    v = np.float64(_bits_f32(c[w, lane, wc[lane, j]]))
                    bad |= v - v != 0.0
                    CV[fc[lane, j]] = v
            for i in range(M):
                for s in range(SFA.shape[2]):
                    bad |= snan[SFA[w, i, s]]
            for j in range(N):
                for s in range(SFB.shape[2]):
                    bad |= snan[SFB[w, j, s]]
            if bad:
                need[w] = 2
                continue
            need[w] = 0
            for g in range(NG):          # B's scale values and exponents, per group and column
                for j in range(N):
                    xb = SFB[w, j, (g * G) // st]
                    SBV[g, j] = sval[xb]
                    SBE[g, j] = np.float64(sexp[xb])
            if sparse:
                for lane in range(32):
                    for j in range(fa.shape[1]):
                        idx = (np.int64(e[w, sp[lane, j, 0]]) >> sp[lane, j, 1]) & 3
                        LC[fa[lane, j]] = sp[lane, j, 2] + sp[lane, j, 3] * idx + sp[lane, j, 4]
            for i in range(M):
                # every group's exact sum (any order: exact), the groups' chains interleaved
                for g in range(NG):
                    for j in range(N):
                        GG[g, j] = 0.0
                if sparse:
                    for g in range(NG):
                        for t in range(g * G, g * G + G):
                            x = AV[i * Ka + t]
                            r = LC[i * Ka + t]
                            for j in range(N):
                                GG[g, j] += x * BR[r * N + j]
                else:
                    # eight chains a set in locals (registers), even and odd terms in two sets
                    for g in range(NG):
                        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
                        u0 = u1 = u2 = u3 = u4 = u5 = u6 = u7 = 0.0
                        t0 = g * G
                        for h in range(G // 2):
                            t = t0 + 2 * h
                            x = AV[i * Ka + t]
                            y = AV[i * Ka + t + 1]
                            bx = BR[t * N:t * N + 16]
                            s0 += x * bx[0]
                            s1 += x * bx[1]
                            s2 += x * bx[2]
                            s3 += x * bx[3]
                            s4 += x * bx[4]
                            s5 += x * bx[5]
                            s6 += x * bx[6]
                            s7 += x * bx[7]
                            u0 += y * bx[8]
                            u1 += y * bx[9]
                            u2 += y * bx[10]
                            u3 += y * bx[11]
                            u4 += y * bx[12]
                            u5 += y * bx[13]
                            u6 += y * bx[14]
                            u7 += y * bx[15]
                        if G % 2:
                            t = t0 + G - 1
                            x = AV[i * Ka + t]
                            s0 += x * BR[t * N]
                            s1 += x * BR[t * N + 1]
                            s2 += x * BR[t * N + 2]
                            s3 += x * BR[t * N + 3]
                            s4 += x * BR[t * N + 4]
                            s5 += x * BR[t * N + 5]
                            s6 += x * BR[t * N + 6]
                            s7 += x * BR[t * N + 7]
                        GG[g, 0] = s0 + u0
                        GG[g, 1] = s1 + u1
                        GG[g, 2] = s2 + u2
                        GG[g, 3] = s3 + u3
                        GG[g, 4] = s4 + u4
                        GG[g, 5] = s5 + u5
                        GG[g, 6] = s6 + u6
                        GG[g, 7] = s7 + u7
                for g in range(NG):
                    xa = SFA[w, i, (g * G) // st]
                    sav = sval[xa]
                    sae = np.float64(sexp[xa])
                    nz = 0
                    for j in range(N):       # branch-free: a zero term's exponent is settled below
                        tv = GG[g, j] * sav * SBV[g, j]
                        T[g, j] = tv
                        TE[g, j] = sae + SBE[g, j] if tv != 0.0 else zexp
                        nz += tv == 0.0
                    if nz:
                        for j in range(N):
                            if T[g, j] != 0.0 or sav == 0.0 or SBV[g, j] == 0.0:
                                continue
                            # a zero sum of nonzero products still has its scales' exponent
                            for t in range(g * G, g * G + G):
                                r = LC[i * Ka + t] if sparse else t
                                if AV[i * Ka + t] != 0.0 and BR[r * N + j] != 0.0:
                                    TE[g, j] = sae + SBE[g, j]
                                    break
                # largest exponent, then the truncated terms: loops over the 8 columns (vector code);
                # the float64 sum of the truncated terms is exact in any order
                for j in range(N):
                    cv = CV[i * N + j]
                    EM[j] = np.float64(max(_exp2of_f(cv), -126)) if cv != 0.0 else zexp
                for g in range(NG):
                    for j in range(N):
                        EM[j] = max(EM[j], TE[g, j])
                for j in range(N):
                    EM[j] = max(EM[j], -900.0)
                    GS[j] = _pow2f(np.int64(fracf - EM[j]))
                    VV8[j] = np.trunc(CV[i * N + j] * GS[j])
                for g in range(NG):
                    for j in range(N):
                        VV8[j] += np.trunc(T[g, j] * GS[j])
                for j in range(N):
                    VV8[j] *= _pow2f(np.int64(EM[j] - fracf))
                _round8_common(VV8, OB8, OV8, rp)
                for j in range(N):
                    DV[i * N + j] = np.uint32(OB8[j])
            for lane in range(32):
                for j in range(fd.shape[1]):
                    d[w, lane, wd[lane, j]] = DV[fd[lane, j]]


@njit(cache=True, nogil=True, inline="always")
def _exp2of_f(v):
    """floor(log2 |v|) of a normal nonzero float64."""
    return np.int64((_f64_bits(v) >> np.uint64(52)) & np.uint64(0x7FF)) - 1023


_GROUP_KERNELS = None


def _nibble_positions(fa, wa, sa, ba, fb, wb, sb, bb, k):
    """For 4-bit A and B: per byte of a warp's words (lane-major, little-endian), where its low and high
    nibble go: A's flat position (row * Ka + term), B's row-major (K, 8) position.  (1, 2) dummies else."""
    if ba != 4 or bb != 4:
        return np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int64)
    out = []
    for flat, word, shift, nw in ((fa, wa, sa, None), (fb, wb, sb, None)):
        nwords = int(word.max()) + 1
        pos = np.full((32 * nwords * 4, 2), -1, np.int64)
        lane = np.repeat(np.arange(32), flat.shape[1])
        byte = lane * nwords * 4 + word.ravel() * 4 + shift.ravel() // 8
        half = (shift.ravel() % 8) // 4
        pos[byte, half] = flat.ravel()
        out.append(pos)
    pa2, pb2 = out
    pb2 = np.where(pb2 >= 0, (pb2 % k) * 8 + pb2 // k, -1)
    if (pa2 < 0).any() or (pb2 < 0).any():
        return np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int64)
    return np.ascontiguousarray(pa2), np.ascontiguousarray(pb2)


def group_runner(ins, ft, tables, sp, chunk: int, threshold: int):
    """A function (a, b, c, e, d, (SFA, SFB)) -> indices of the warps left to the exact kernel (None:
    none), for a block-scaled group recipe (group_tables)."""
    global _GROUP_KERNELS
    if _GROUP_KERNELS is None:
        _GROUP_KERNELS = (njit(cache=True, nogil=True)(named_copy(_group_kernel, "_group_kernel_serial")),
                          njit(cache=True, nogil=True, parallel=True)(named_copy(_group_kernel, "_group_kernel_par")))
    ser, par = _GROUP_KERNELS
    m, n, k = ins.mnk
    (fa, wa, sa, ba), (fb, wb, sb, bb), (fc, wc, _, _), (fd, wd, _, _) = tables
    consts = (m, k, ft["ka"], fa, wa, sa.astype(np.uint32), ba, fb, wb, sb.astype(np.uint32), bb, fc, wc, fd, wd,
              np.ascontiguousarray(sp), ins.is_sparse, ft["G"], ft["st"], float(ft["frac"]),
              round_params((32, 8, 23, 0, 1), ft["rne"]),
              ft["lut_a"], ft["lut_b"], ft["snan"], ft["sexp"], ft["sval"], ft["zon"], ft["zexp"], chunk,
              _PROBE64, _PROBE32, *_nibble_positions(fa, wa, sa, ba, fb, wb, sb, bb, k))

    def go(a, b, c, e, d, scales):
        W = a.shape[0]
        need = np.empty(W, np.int8)
        fn = par if W >= threshold else ser
        fn(a, b, c, e, d, scales[0], scales[1], need, *consts)
        if STATS is not None:
            for name, x in zip(_STAT_NAMES, np.bincount(need, minlength=3)):
                STATS[name] = STATS.get(name, 0) + int(x)
        return np.flatnonzero(need == 2) if (need == 2).any() else None

    return go
