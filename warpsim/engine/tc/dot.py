"""The dot-core intrinsics: decoding elements, the exact block sums of a few rows side by side,
and the warp-level recipes built from them (one fused block; two blocks, C fused or separate)."""

from __future__ import annotations

from llvmlite import ir as _ir
import numpy as np
from numba import njit
from numba import types as _nbt
from numba.core import cgutils as _cgutils
from numba.extending import intrinsic as _intrinsic

from .ir import (_F32, _F64, _I32, _I64, _V8D, _V8F, _V8I, _V8L, _any8, _branch, _c8, _data, _gen_accexp,
                 _gen_round8, _i64, _load_rp, _loopn, _packed_int64_conversions, _splat, _splatn, _sum_parts, _vload,
                 _vmax, _vstore, _when)
from .tables import _ZEXP

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

@njit(nogil=True, inline="always")
def _decode_abc(RA, RB, RC, q, scale, emin, AV, AE, BV, BE, CV, CE):
    """_decode of a warp's (or group's) A, B and C with their rows of q / scale / emin; True if any
    element is NaN or inf."""
    special = _decode(RA, q[0], scale[0], emin[0], AV, AE)
    special |= _decode(RB, q[1], scale[1], emin[1], BV, BE)
    special |= _decode(RC, q[2], scale[2], emin[2], CV, CE)
    return special


@_intrinsic
def _exp_floor(typingctx, E):
    """The smallest alignment exponent E[x] of a nonzero finite element (float64; +inf if none: E
    holds _ZEXP for zeros, NaN and inf).  len(E): a multiple of 8."""
    if not (isinstance(E, _nbt.Array) and E.dtype == _nbt.float32):
        return None
    sig = _nbt.float64(E)

    def codegen(context, builder, sig, args):
        Ea = context.make_array(sig.args[0])(context, builder, args[0])
        n = builder.extract_value(Ea.shape, 0)
        inf = _c8(float("inf"), _V8F)
        zexp = _c8(float(_ZEXP), _V8F)

        def body(x, accs):
            e = _vload(builder, Ea.data, x, _V8F, 4)
            e = builder.select(builder.fcmp_ordered("==", e, zexp), inf, e)
            return [builder.select(builder.fcmp_ordered("<", e, accs[0]), e, accs[0])]

        m = _when(builder, builder.icmp_signed("<", _ir.Constant(_I64, 0), n), [inf],
                  lambda a: _loopn(builder, _ir.Constant(_I64, 0), n, 8, a, body))[0]
        lo = builder.extract_element(m, _ir.Constant(_I32, 0))
        for k in range(1, 8):
            x = builder.extract_element(m, _ir.Constant(_I32, k))
            lo = builder.select(builder.fcmp_ordered("<", x, lo), x, lo)
        return builder.fpext(lo, _F64)

    return sig, codegen


@njit(nogil=True, inline="always")
def _lsb_floor(AE, BE, q, scale):
    """A lower bound on the exponent of the last bit of every nonzero finite product a*b, what
    _gen_rows8's lsbmin takes: per operand, its smallest alignment exponent, or its format's emin
    (log2(scale) - 126) where that is larger (the quantum of subnormals), less its mantissa bits
    (23 - q[k, 3]).  Valid because the alignment exponents are clamped at or below the format's emin
    (tc_tables sees to it)."""
    la = max(_exp_floor(AE), np.log2(scale[0]) - 126.0) - (23 - q[0, 3])
    return la + max(_exp_floor(BE), np.log2(scale[1]) - 126.0) - (23 - q[1, 3])


#: rows a warp's row loop computes together (independent chains side by side; B rows loaded once)
_ROWS = 4


def _terms(builder, lo, hi, nrows, inits, step_fn):
    """Fold step_fn(t, r, acc) over t = lo..hi-1 for each of nrows rows r into _sum_parts() partial
    accumulators a row (inits[r * P + k]), term t + k of each step of P going to partial k; the
    remainder to partial 0.  (The sum of truncated terms is exact and the maximum order-free, so
    splitting them only shortens the dependency chains.)"""
    P = _sum_parts()
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


def _fold(add, parts):
    """The partials' sum, pairwise (add: the IR builder's add of their type)."""
    while len(parts) > 1:
        parts = [add(parts[k], parts[k + 1]) if k + 1 < len(parts) else parts[k] for k in range(0, len(parts), 2)]
    return parts[0]


def _gen_rows8(builder, pAV, pAE, pRI, lo, hi, pBV, pBE, frac, rows, finite=None, lsbmin=None):
    """IR of one block of each of a few rows: for each row (oa, oi, prv, pre, ro) of rows, the exact
    sum, <8 x double>, of the terms t = lo..hi-1 (i64 values), a = AV[oa + t] (exponent AE[oa + t])
    times B[RI[oi + t], j] (B row-major: BV / BE at 8 * RI[oi + t] + j; pRI None: B row t), and the
    accumulator prv[ro + j] (exponent pre[ro + j]), each truncated to frac bits below the output's
    emax (the largest exponent; -900 when every term is zero, as fused._block8).

    The rows' loops run side by side, each row's maxima and sums in _sum_parts() independent partials:
    the truncated terms are integers below 2^53, so their float64 sum is exact in any order (-0.0
    is the identity; NaN / inf results do not depend on the order either).  Requires lo < hi.

    finite (an i1, or None): where it holds, every term and accumulator is finite, and the terms are
    truncated by the conversion to int64 and summed as integers (the same exact sum, one instruction
    less a term); else, and where None, in float64 as above.

    lsbmin (a double, or None): a lower bound on the exponent of every nonzero finite term's last
    bit (see _lsb_floor).  Where it is at or above each row's cut (emax - frac), no term has a bit
    to truncate: the terms are summed unscaled, a*b added to the sum in one step, and the sum
    scaled once (the same exact sum, without the per-term scaling and truncation that AVX2 does
    in float64; NaN / inf terms make the same NaN / inf)."""
    ftrunc = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_V8D, [_V8D]), "llvm.trunc.v8f64")
    R, P = len(rows), _sum_parts()

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

    def term(integer):
        def body(t, r, s):
            x = builder.load(builder.gep(pAV, [builder.add(rows[r][0], t)]))
            g = _vload(builder, pBV, brow(t, r), _V8D, 8)
            prod = builder.fmul(builder.fmul(_splat(builder, x, _V8D), g), cs[r])
            if integer:       # truncated by the conversion
                return builder.add(s, builder.fptosi(prod, _V8L))
            return builder.fadd(s, builder.call(ftrunc, [prod]))
        return body

    def sums(integer):
        """Each row's exact sum of its truncated terms and accumulator: in int64 or in float64."""
        add = builder.add if integer else builder.fadd
        ss = _terms(builder, lo, hi, R, [_c8(0) if integer else _c8(-0.0, _V8D)] * (R * P), term(integer))
        out = []
        for r, (oa, oi, prv, pre, ro) in enumerate(rows):
            total = _fold(add, ss[r * P:(r + 1) * P])
            acc = builder.fmul(_vload(builder, prv, ro, _V8D, 8), cs[r])
            if integer:
                out.append(builder.sitofp(builder.add(builder.fptosi(acc, _V8L), total), _V8D))
            else:
                out.append(builder.fadd(builder.call(ftrunc, [acc]), total))
        return out

    def uncut():
        """Each row's sum without truncated terms (lsbmin holds): trunc(acc) + (sum of a*b) * cs."""
        fmuladd = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_V8D, [_V8D] * 3),
                                                  "llvm.fmuladd.v8f64")

        def body(t, r, s):
            x = builder.load(builder.gep(pAV, [builder.add(rows[r][0], t)]))
            return builder.call(fmuladd, [_splat(builder, x, _V8D), _vload(builder, pBV, brow(t, r), _V8D, 8), s])

        ss = _terms(builder, lo, hi, R, [_c8(-0.0, _V8D)] * (R * P), body)
        out = []
        for r, (oa, oi, prv, pre, ro) in enumerate(rows):
            acc = builder.call(ftrunc, [builder.fmul(_vload(builder, prv, ro, _V8D, 8), cs[r])])
            out.append(builder.fadd(acc, builder.fmul(_fold(builder.fadd, ss[r * P:(r + 1) * P]), cs[r])))
        return out

    def cut():
        if finite is None or not _packed_int64_conversions():
            return sums(False)
        return _branch(builder, finite, lambda: sums(True), lambda: sums(False))

    if lsbmin is None:
        totals = cut()
    else:
        ok = _ir.Constant(_ir.IntType(1), 1)
        lsb = _splat(builder, lsbmin, _V8D)
        for ed in eds:
            above = builder.fcmp_ordered("<=", builder.fsub(ed, fr), lsb)
            ok = builder.and_(ok, builder.icmp_unsigned("==", builder.bitcast(above, _ir.IntType(8)),
                                                        _ir.Constant(_ir.IntType(8), 255)))
        totals = _branch(builder, ok, uncut, cut)
    return [builder.fmul(sm, pow2(builder.fsub(eds[r], fr))) for r, sm in enumerate(totals)]


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


def _gen_two_blocks(builder, rows, Ka_, pAV, pAE, pRI, sp, pBV, pBE, frac, first, pRV, pRE, rp1, em, fin, lsbmin):
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
    v1s = _gen_rows8(builder, pAV, pAE, pRI, zero, half, pBV, pBE, frac, spec1, fin, lsbmin)
    fin2, rares = fin, []
    for v1, (_, _, _, _, ra) in zip(v1s, spec2):
        _, a1, r1 = _gen_round8(builder, v1, rp1)
        _vstore(builder, a1, pRV, ra, 8)
        _vstore(builder, _gen_accexp(builder, a1, em), pRE, ra, 4)
        rares.append(r1)
        ok = builder.fcmp_ordered("==", builder.fsub(a1, a1), _c8(0.0, _V8D))     # a1 finite
        ok = builder.icmp_unsigned("==", builder.bitcast(ok, _ir.IntType(8)), _ir.Constant(_ir.IntType(8), 255))
        fin2 = builder.and_(fin2, ok)
    return _gen_rows8(builder, pAV, pAE, pRI, half, Ka_, pBV, pBE, frac, spec2, fin2, lsbmin), rares


def _two_block_rows(sep: bool):
    """The intrinsic of a whole warp of a two-block recipe, rows side by side (_gen_two_blocks):
    _rows(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RV, RE, DB, finite, lsbmin).

    sep False (Ada fp8, the fused chain): block 1 (terms 0..Ka/2-1 in block order) with C, rounded
    (rpb) into the accumulator format; block 2 with that accumulator, rounded again into DB (rpa
    unused; returns False).  sep True (sm_90 fp8, C added separately): block 1 from +0, rounded
    (rpb); block 2 with that accumulator, rounded again; then D = RNE(acc + C) (rpa), or acc's own
    bits when C is +-0 (CE unused); returns True if a block result or the sum is zero, subnormal
    or overflowing in some output (DB is then to be redone by the general per-row code).
    RV / RE (float64 / float32, length 8 * (M + 1)): scratch, row i's accumulator at 8 (i + 1);
    sep: the first 8 of each must hold +0 / _ZEXP.  finite: no element of A, B or C is NaN or inf
    (block sums then run in int64 while the accumulators stay finite, see _gen_rows8); lsbmin: the
    bound on the terms' last bits of _gen_rows8 (_lsb_floor)."""

    def _rows(typingctx, M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RV, RE, DB, finite,
              lsbmin):
        if not (AV.dtype == _nbt.float64 and DB.dtype == _nbt.uint64 and RV.dtype == _nbt.float64
                and RE.dtype == _nbt.float32 and (RI is _nbt.none or RI.dtype == _nbt.int64)):
            return None
        sig = _nbt.boolean(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RV, RE, DB, finite,
                           lsbmin)

        def codegen(context, builder, sig, args):
            ty = sig.args
            M_ = _i64(context, builder, ty[0], args[0])
            Ka_ = _i64(context, builder, ty[1], args[1])
            sp = context.cast(builder, args[5], ty[5], _nbt.boolean)
            pAV, pAE, pBV, pBE, pCV, pCE, prb, pra, pRV, pRE, pDB = (
                _data(context, builder, sig, args, k) for k in (2, 3, 6, 7, 8, 9, 11, 12, 14, 15, 16))
            pRI = None if ty[4] is _nbt.none else _data(context, builder, sig, args, 4)
            frac = context.cast(builder, args[10], ty[10], _nbt.float64)
            em = _splat(builder, context.cast(builder, args[13], ty[13], _nbt.float32), _V8F)
            rpb_ = _load_rp(builder, prb)
            rpa_ = _load_rp(builder, pra) if sep else None
            zero = _ir.Constant(_I64, 0)
            fin = context.cast(builder, args[17], ty[17], _nbt.boolean)
            lsb = context.cast(builder, args[18], ty[18], _nbt.float64)
            first = (lambda i, ro: (pRV, pRE, zero)) if sep else (lambda i, ro: (pCV, pCE, ro))

            def rbody(rows, rare):
                v2s, r1s = _gen_two_blocks(builder, rows, Ka_, pAV, pAE, pRI, sp, pBV, pBE, frac, first, pRV, pRE,
                                           rpb_, em, fin, lsb)
                for v2, i in zip(v2s, rows):
                    ro = builder.shl(i, _ir.Constant(_I64, 3))
                    b2, a2, r2 = _gen_round8(builder, v2, rpb_)
                    if not sep:
                        _vstore(builder, b2, pDB, ro, 8)
                        continue
                    cv = _vload(builder, pCV, ro, _V8D, 8)
                    b3, _, r3 = _gen_round8(builder, builder.fadd(a2, cv), rpa_)
                    czero = builder.fcmp_ordered("==", cv, _c8(0.0, _V8D))
                    _vstore(builder, builder.select(czero, b2, b3), pDB, ro, 8)
                    rare = builder.or_(rare, builder.or_(r2, r3))
                for r1 in r1s if sep else ():
                    rare = builder.or_(rare, r1)
                return rare

            rare = _row_groups(builder, M_, _ir.Constant(_ir.VectorType(_ir.IntType(1), 8), [0] * 8), rbody)
            return _any8(builder, rare)

        return sig, codegen

    _rows.__name__ = _rows.__qualname__ = "_rows_sep" if sep else "_rows_chain2"
    return _intrinsic(_rows)


#: the two-block recipe with C added separately (sm_90 fp8) and the fused two-block chain (Ada fp8)
_rows_sep = _two_block_rows(True)
_rows_chain2 = _two_block_rows(False)


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
