"""The host FPU as an exact IEEE machine, and the check that it is in the state we rely on.

The fast paths compute IEEE operations (nearest even, gradual underflow) on the host's
own floats.  That is exact only while the FPU rounds to nearest and keeps subnormals
(no flush-to-zero / denormals-are-zero); :func:`fp_env_ok` checks exactly that, on the
thread that is about to compute, against probe operands passed as data (so that LLVM
cannot fold them).  :func:`fma_native` is ``llvm.fma``: correctly rounded by definition.
Never fast-math: numba marks nothing ``contract`` here, so LLVM neither fuses nor
reorders anything else.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from llvmlite import ir
from numba import types as _nbt
from numba.core import cgutils
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def fma_native(typingctx, x, y, z):
    """Correctly rounded x * y + z on host floats (``llvm.fma``); all three of one float type."""
    if not (isinstance(x, _nbt.Float) and x == y and y == z and x in (_nbt.float32, _nbt.float64)):
        return None
    sig = x(x, y, z)

    def codegen(context, builder, signature, args):
        ty = args[0].type
        fnty = ir.FunctionType(ty, [ty, ty, ty])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma." + ("f64" if ty == ir.DoubleType() else "f32"))
        return builder.call(fn, args)

    return sig, codegen


def _row8(context, builder, arrty, arr, idx):
    """Pointer to the 8 float64 elements arr[idx:idx + 8] as an <8 x double> (no bounds check)."""
    vt = ir.VectorType(ir.DoubleType(), 8)
    a = context.make_array(arrty)(context, builder, arr)
    return builder.bitcast(builder.gep(a.data, [idx]), vt.as_pointer())


def _is_f64_array(t):
    return isinstance(t, _nbt.Array) and t.dtype == _nbt.float64 and t.ndim == 1


@_intrinsic
def madd_row8(typingctx, acc, o, apair, bp, q):
    """acc[o:o+8] += a0 * B[0, :] + a1 * B[1, :] in int32 lanes, one vector step (PMADDWD where the host has it).

    apair: int32 holding two int16 (a0 low, a1 high); bp[q:q+8]: eight int32, each an int16 pair (B[0, j] low,
    B[1, j] high).  Exact while the int32 sums do not overflow (the caller's bound); no bounds check."""
    if not (isinstance(acc, _nbt.Array) and acc.dtype == _nbt.int32 and isinstance(bp, _nbt.Array)
            and bp.dtype == _nbt.int32):
        return None
    sig = _nbt.void(acc, _nbt.intp, _nbt.int32, bp, _nbt.intp)

    def codegen(context, builder, signature, args):
        av, o, ap, bv, q = args
        i32x8 = ir.VectorType(ir.IntType(32), 8)
        i16x16 = ir.VectorType(ir.IntType(16), 16)
        i32x16 = ir.VectorType(ir.IntType(32), 16)
        aa = context.make_array(signature.args[0])(context, builder, av)
        ba = context.make_array(signature.args[3])(context, builder, bv)
        accp = builder.bitcast(builder.gep(aa.data, [o]), i32x8.as_pointer())
        bpp = builder.bitcast(builder.gep(ba.data, [q]), i32x8.as_pointer())
        x = builder.insert_element(ir.Constant(i32x8, ir.Undefined), ap, ir.Constant(ir.IntType(32), 0))
        x = builder.shuffle_vector(x, ir.Constant(i32x8, ir.Undefined), ir.Constant(i32x8, [0] * 8))
        x = builder.sext(builder.bitcast(x, i16x16), i32x16)
        y = builder.sext(builder.bitcast(builder.load(bpp, align=4), i16x16), i32x16)
        p = builder.mul(x, y)
        even = builder.shuffle_vector(p, ir.Constant(i32x16, ir.Undefined), ir.Constant(i32x8, list(range(0, 16, 2))))
        odd = builder.shuffle_vector(p, ir.Constant(i32x16, ir.Undefined), ir.Constant(i32x8, list(range(1, 16, 2))))
        r = builder.add(builder.load(accp, align=4), builder.add(even, odd))
        builder.store(r, accp, align=4)
        return context.get_dummy_value()

    return sig, codegen


#: rows whose chains :func:`fma_rows8` interleaves: independent fmas in flight while each chain waits on its last
_GROUP = 4


def _rows_loop(builder, r0, r1, s0, s1, k, desc, start, step, finish):
    """The loops of :func:`fma_rows8` / :func:`fma_rows8s`: rows r0..r1-1, steps s0..s1-1 (kk = s, or k - 1 - s
    when desc), _GROUP rows at a time with their steps interleaved (a chain's fma waits on the one before it),
    then the rows left one by one.  start(i) -> the row's accumulator vector, step(i, kk, acc) -> acc,
    finish(i, acc)."""
    i64 = ir.IntType(64)
    one = ir.Constant(i64, 1)

    def rows(lo, hi, g):
        with cgutils.for_range_slice(builder, lo, hi, ir.Constant(i64, g), inc=True) as (i, _):
            rs = [builder.add(i, ir.Constant(i64, x)) for x in range(g)]
            accs = [cgutils.alloca_once(builder, start(rs[0]).type) for _ in rs]
            for r, p in zip(rs, accs):
                builder.store(start(r), p)
            with cgutils.for_range_slice(builder, s0, s1, one, inc=True) as (s, _):
                kk = builder.select(desc, builder.sub(builder.sub(k, one), s), s)
                for r, p in zip(rs, accs):
                    builder.store(step(r, kk, builder.load(p)), p)
            for r, p in zip(rs, accs):
                finish(r, builder.load(p))

    mid = builder.add(r0, builder.mul(builder.sdiv(builder.sub(r1, r0), ir.Constant(i64, _GROUP)),
                                      ir.Constant(i64, _GROUP)))
    rows(r0, mid, _GROUP)
    rows(mid, r1, 1)


def _splat8(builder, x):
    vt = ir.VectorType(x.type, 8)
    xs = builder.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(xs, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8))


@_intrinsic
def fma_rows8(typingctx, d, c, a, b, r0, r1, k, s0, s1, desc):
    """Steps s0..s1-1 of the fma chains of rows r0..r1-1, eight lanes each, from c (c may be d): for each row i,
    d[8i:8i+8] = fma(a[i*k + kk], b[8kk:8kk+8], .) with kk = s (or k - 1 - s when desc), the row's accumulators
    held in a register vector (one ``llvm.fma`` per step and row, each lane correctly rounded).  A loop of its
    own, so that its code does not depend on the kernel around it; no bounds check."""
    if not (_is_f64_array(d) and _is_f64_array(c) and _is_f64_array(a) and _is_f64_array(b)):
        return None
    sig = _nbt.void(d, c, a, b, _nbt.intp, _nbt.intp, _nbt.intp, _nbt.intp, _nbt.intp, _nbt.boolean)

    def codegen(context, builder, signature, args):
        dv, cv, av, bv, r0, r1, k, s0, s1, desc = args
        i64 = ir.IntType(64)
        vt = ir.VectorType(ir.DoubleType(), 8)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        da, ca, aa, ba = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:4], (dv, cv, av, bv)))

        def row(arr, i):
            return builder.bitcast(builder.gep(arr.data, [builder.mul(i, ir.Constant(i64, 8))]), vt.as_pointer())

        def step(i, kk, acc):
            x = builder.load(builder.gep(aa.data, [builder.add(builder.mul(i, k), kk)]))
            return builder.call(fn, [_splat8(builder, x), builder.load(row(ba, kk), align=8), acc])

        _rows_loop(builder, r0, r1, s0, s1, k, desc, lambda i: builder.load(row(ca, i), align=8), step,
                   lambda i, acc: builder.store(acc, row(da, i), align=8))
        return context.get_dummy_value()

    return sig, codegen


def _replaced_step(builder, fn, xa, va, sa, ba, i, k, kk, acc):
    """Step kk of row i on the replaced pairs (fma_rows8s / fma_rows8m): fma(xs[i*k + kk] * sa[q:q+8],
    bv[q:q+8], acc) with q = vi[i*k + kk] + 8 kk (xa .. ba: the arrays' structs)."""
    i64 = ir.IntType(64)
    vp = ir.VectorType(ir.DoubleType(), 8).as_pointer()
    ik = builder.add(builder.mul(i, k), kk)
    x = builder.load(builder.gep(xa.data, [ik]))
    q = builder.add(builder.load(builder.gep(va.data, [ik])), builder.mul(kk, ir.Constant(i64, 8)))
    xv8 = builder.fmul(_splat8(builder, x), builder.load(builder.bitcast(builder.gep(sa.data, [q]), vp), align=8))
    return builder.call(fn, [xv8, builder.load(builder.bitcast(builder.gep(ba.data, [q]), vp), align=8), acc])


@_intrinsic
def fma_rows8s(typingctx, d, xs, vi, sa, bv, r0, r1, k, s0, s1, desc):
    """:func:`fma_rows8` with replaced operand pairs: step kk of row i is fma(xs[i*k + kk] * sa[q:q+8],
    bv[q:q+8], .) with q = vi[i*k + kk] + 8 kk (the product xs * sa rounded on its own, as written)."""
    if not (_is_f64_array(d) and _is_f64_array(xs) and _is_f64_array(sa) and _is_f64_array(bv)
            and isinstance(vi, _nbt.Array) and vi.dtype == _nbt.int64):
        return None
    sig = _nbt.void(d, xs, vi, sa, bv, _nbt.intp, _nbt.intp, _nbt.intp, _nbt.intp, _nbt.intp, _nbt.boolean)

    def codegen(context, builder, signature, args):
        dv, xv, vv, sv, bv_, r0, r1, k, s0, s1, desc = args
        i64 = ir.IntType(64)
        vt = ir.VectorType(ir.DoubleType(), 8)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        da, xa, va, sa_, ba = (context.make_array(t)(context, builder, v)
                               for t, v in zip(signature.args[:5], (dv, xv, vv, sv, bv_)))

        def at8(arr, q):
            return builder.bitcast(builder.gep(arr.data, [q]), vt.as_pointer())

        def step(i, kk, acc):
            return _replaced_step(builder, fn, xa, va, sa_, ba, i, k, kk, acc)

        _rows_loop(builder, r0, r1, s0, s1, k, desc,
                   lambda i: builder.load(at8(da, builder.mul(i, ir.Constant(i64, 8))), align=8), step,
                   lambda i, acc: builder.store(acc, at8(da, builder.mul(i, ir.Constant(i64, 8))), align=8))
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def fma_rows8m(typingctx, d, xs, vi, sa, bv, r0, r1, k, lo, hi, desc):
    """:func:`fma_rows8s` with a range of chain steps per row: row i takes steps lo[i] <= s < hi[i] only, a row
    at a time (rows that stop at different steps -- a NaN of A, careful steps first -- share no mask)."""
    if not (_is_f64_array(d) and _is_f64_array(xs) and _is_f64_array(sa) and _is_f64_array(bv)
            and all(isinstance(t, _nbt.Array) and t.dtype == _nbt.int64 for t in (vi, lo, hi))):
        return None
    sig = _nbt.void(d, xs, vi, sa, bv, _nbt.intp, _nbt.intp, _nbt.intp, lo, hi, _nbt.boolean)

    def codegen(context, builder, signature, args):
        dv, xv, vv, sv, bv_, r0, r1, k, lov, hiv, desc = args
        i64 = ir.IntType(64)
        one = ir.Constant(i64, 1)
        vt = ir.VectorType(ir.DoubleType(), 8)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        da, xa, va, sa_, ba, la, ha = (context.make_array(t)(context, builder, v)
                                       for t, v in zip(signature.args[:5] + signature.args[8:10],
                                                       (dv, xv, vv, sv, bv_, lov, hiv)))

        def at8(arr, q):
            return builder.bitcast(builder.gep(arr.data, [q]), vt.as_pointer())

        with cgutils.for_range_slice(builder, r0, r1, one, inc=True) as (i, _):
            dp = at8(da, builder.mul(i, ir.Constant(i64, 8)))
            accp = cgutils.alloca_once(builder, vt)
            builder.store(builder.load(dp, align=8), accp)
            s0 = builder.load(builder.gep(la.data, [i]))
            s1 = builder.load(builder.gep(ha.data, [i]))
            with cgutils.for_range_slice(builder, s0, s1, one, inc=True) as (s, _):
                kk = builder.select(desc, builder.sub(builder.sub(k, one), s), s)
                builder.store(_replaced_step(builder, fn, xa, va, sa_, ba, i, k, kk, builder.load(accp)), accp)
            builder.store(builder.load(accp), dp, align=8)
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def fma_row8c(typingctx, d, o, x, s, b, q, negl, coarse):
    """One step fma(x * s[q:q+8], b[q:q+8], d[o:o+8]) (as :func:`fma_rows8s`) for accumulators that may be
    subnormal, branch-free over the eight lanes; returns how
    many lanes of the result are subnormal.  A lane whose accumulator is subnormal keeps it when the product is
    zero or negligible (finite operands, exponent fields summing to at most negl), and is computed with the
    accumulator replaced by its sign times 2^-1022 when the product is coarse (fields summing to at least
    coarse) or an operand is inf / NaN; every other lane is the plain fma (the proofs: ``chain_fast``).  Integer
    work is 64-bit lane and / shift / add / compare only (AVX2 has all of them); no bounds check."""
    if not (_is_f64_array(d) and _is_f64_array(s) and _is_f64_array(b) and isinstance(x, _nbt.Float)):
        return None
    sig = _nbt.intp(d, _nbt.intp, _nbt.float64, s, b, _nbt.intp, _nbt.intp, _nbt.intp)

    def codegen(context, builder, signature, args):
        dv, o, x, sv, bv, q, negl, coarse = args
        vt = ir.VectorType(ir.DoubleType(), 8)
        it = ir.VectorType(ir.IntType(64), 8)

        def splat(v, t):
            e = builder.insert_element(ir.Constant(t, ir.Undefined), v, ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(e, ir.Constant(t, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8))

        def const(v):
            return ir.Constant(it, [v] * 8)

        dp = _row8(context, builder, signature.args[0], dv, o)
        sp = _row8(context, builder, signature.args[3], sv, q)
        bp = _row8(context, builder, signature.args[4], bv, q)
        xs = builder.fmul(splat(x, vt), builder.load(sp, align=8))
        yb = builder.load(bp, align=8)
        acc = builder.load(dp, align=8)
        xu, yu, au = (builder.bitcast(v, it) for v in (xs, yb, acc))
        fx = builder.and_(builder.lshr(xu, const(52)), const(0x7FF))
        fy = builder.and_(builder.lshr(yu, const(52)), const(0x7FF))
        nonfin = builder.or_(builder.icmp_unsigned("==", fx, const(2047)), builder.icmp_unsigned("==", fy, const(2047)))
        absm = const(0x7FFFFFFFFFFFFFFF)
        zero = builder.or_(builder.icmp_unsigned("==", builder.and_(xu, absm), const(0)),
                           builder.icmp_unsigned("==", builder.and_(yu, absm), const(0)))
        sm = builder.add(fx, fy)

        def is_sub(u):
            return builder.and_(builder.icmp_unsigned("==", builder.and_(u, const(0x7FF0000000000000)), const(0)),
                                builder.icmp_unsigned("!=", builder.and_(u, const(0x000FFFFFFFFFFFFF)), const(0)))

        sub = is_sub(au)
        small = builder.or_(zero, builder.icmp_signed("<=", sm, splat(negl, it)))
        keep = builder.and_(builder.and_(sub, builder.not_(nonfin)), small)
        swap = builder.and_(sub, builder.or_(builder.or_(keep, nonfin), builder.icmp_signed(">=", sm, splat(coarse, it))))
        rep = builder.or_(builder.and_(au, const(0x8000000000000000)), const(0x0010000000000000))
        accin = builder.bitcast(builder.select(swap, rep, au), vt)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), "llvm.fma.v8f64")
        r = builder.select(keep, acc, builder.call(fn, [xs, yb, accin]))
        builder.store(r, dp, align=8)
        n = builder.zext(is_sub(builder.bitcast(r, it)), it)
        red = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), [it]),
                                             "llvm.vector.reduce.add.v8i64")
        return builder.call(red, [n])

    return sig, codegen


def _is_u64_array(t):
    return isinstance(t, _nbt.Array) and t.dtype == _nbt.uint64 and t.ndim == 1


@_intrinsic
def first_nan_steps(typingctx, au, steps, rn, m, k):
    """rn[i] = the smallest steps[j] over the NaN words au[i*k + j] of row i (k if none), for rows 0..m-1, four
    words a vector (k a multiple of 4: a scalar loop of k = 16 iterations is too short for LLVM to vectorise,
    and its min is a chain).  Lane and / compare / select / signed min only; no bounds check."""
    if not (_is_u64_array(au) and all(isinstance(t, _nbt.Array) and t.dtype == _nbt.int64 for t in (steps, rn))):
        return None
    sig = _nbt.void(au, steps, rn, _nbt.intp, _nbt.intp)

    def codegen(context, builder, signature, args):
        auv, stv, rnv, m, k = args
        i64 = ir.IntType(64)
        it = ir.VectorType(i64, 4)
        one = ir.Constant(i64, 1)
        aa, sa_, ra = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:3], args[:3]))

        def at4(arr, q):
            return builder.bitcast(builder.gep(arr.data, [q]), it.as_pointer())

        smin = cgutils.get_or_insert_function(builder.module, ir.FunctionType(it, [it, it]), "llvm.smin.v4i64")
        red = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [it]), "llvm.vector.reduce.smin.v4i64")
        e = builder.insert_element(ir.Constant(it, ir.Undefined), k, ir.Constant(ir.IntType(32), 0))
        k4 = builder.shuffle_vector(e, ir.Constant(it, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), 4), [0] * 4))
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), m, one, inc=True) as (i, _):
            accp = cgutils.alloca_once(builder, it)
            builder.store(k4, accp)
            with cgutils.for_range_slice(builder, ir.Constant(i64, 0), k, ir.Constant(i64, 4), inc=True) as (j, _):
                u = builder.and_(builder.load(at4(aa, builder.add(builder.mul(i, k), j)), align=8),
                                 ir.Constant(it, [0x7FFFFFFFFFFFFFFF] * 4))
                isnan = builder.icmp_unsigned(">", u, ir.Constant(it, [0x7FF0000000000000] * 4))
                st = builder.select(isnan, builder.load(at4(sa_, j), align=8), k4)
                builder.store(builder.call(smin, [builder.load(accp), st]), accp)
            builder.store(builder.call(red, [builder.load(accp)]), builder.gep(ra.data, [i]))
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def nan_words8(typingctx, du, sn, cu, bu, rw, rn, m, k, desc, qbit, dnan):
    """DMMA's words for the NaN results of m rows of eight (uint64 words; the rule: ``chain_fast``), one vector
    per row: the last NaN of the B column in chain order (quieted with qbit), else the NaN of C (quieted), else
    rw[i] where rn[i] < k and the row's accumulators sn before step rn[i] are not NaN, else dnan.  Lane and / or /
    signed compare / select only; no bounds check."""
    if not (all(_is_u64_array(t) for t in (du, sn, cu, bu, rw)) and isinstance(rn, _nbt.Array)
            and rn.dtype == _nbt.int64):
        return None
    sig = _nbt.void(du, sn, cu, bu, rw, rn, _nbt.intp, _nbt.intp, _nbt.boolean, _nbt.uint64, _nbt.uint64)

    def codegen(context, builder, signature, args):
        duv, snv, cuv, buv, rwv, rnv, m, k, desc, qbit, dnan = args
        i64 = ir.IntType(64)
        it = ir.VectorType(i64, 8)
        one = ir.Constant(i64, 1)
        arrs = [context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:6], args[:6])]
        dua, sna, cua, bua, rwa, rna = arrs

        def row(arr, i):
            return builder.bitcast(builder.gep(arr.data, [builder.mul(i, ir.Constant(i64, 8))]), it.as_pointer())

        def isnan(u):
            return builder.icmp_signed(">", builder.and_(u, ir.Constant(it, [0x7FFFFFFFFFFFFFFF] * 8)),
                                       ir.Constant(it, [0x7FF0000000000000] * 8))

        q8, dn8 = _splat8(builder, qbit), _splat8(builder, dnan)
        cwp = cgutils.alloca_once(builder, it)
        builder.store(ir.Constant(it, [0] * 8), cwp)
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), k, one, inc=True) as (s, _):
            kk = builder.select(desc, builder.sub(builder.sub(k, one), s), s)
            x = builder.load(row(bua, kk), align=8)
            builder.store(builder.select(isnan(x), builder.or_(x, q8), builder.load(cwp)), cwp)
        cw = builder.load(cwp)
        hasb = builder.icmp_unsigned("!=", cw, ir.Constant(it, [0] * 8))
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), m, one, inc=True) as (i, _):
            rv = builder.select(builder.icmp_signed("<", builder.load(builder.gep(rna.data, [i])), k),
                                builder.load(builder.gep(rwa.data, [i])), dnan)
            cv = builder.load(row(cua, i), align=8)
            dp = row(dua, i)
            x = builder.load(dp, align=8)
            v = builder.select(isnan(builder.load(row(sna, i), align=8)), dn8, _splat8(builder, rv))
            v = builder.select(isnan(cv), builder.or_(cv, q8), v)
            v = builder.select(hasb, cw, v)
            builder.store(builder.select(isnan(x), v, x), dp, align=8)
        return context.get_dummy_value()

    return sig, codegen


#: probe operands for fp_env_ok (passed as data so that LLVM cannot fold them)
PROBE64 = np.array([2.0 ** -1022, 0.5, 0.0, 2.0 ** -1023, 2.0, 1.0, 2.0 ** -53, 3 * 2.0 ** -54],
                    dtype=np.float64)
PROBE32 = PROBE64.astype(np.float32)
PROBE32[:5] = np.array([2.0 ** -126, 0.5, 0.0, 2.0 ** -127, 2.0], dtype=np.float32)
PROBE32[6:] = np.array([2.0 ** -24, 3 * 2.0 ** -25], dtype=np.float32)


@njit(cache=True, nogil=True)
def fp_env_ok(q64, q32):
    """Whether the host rounds to nearest even and keeps subnormals (no FTZ / DAZ), f64 and f32."""
    return _probe_ok(q64) and _probe_ok(q32)


@njit(cache=True, nogil=True)
def _probe_ok(q):
    """One format (q: tiny normal, 1/2, 0, tiny/2, 2, 1, half an ulp of 1, 3/4 ulp of 1)."""
    tiny, half, zero, sub, two, one, tie, above = q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]
    if fma_native(tiny, half, zero) != sub:          # FTZ flushes the subnormal result
        return False
    if fma_native(sub, two, zero) != tiny:           # DAZ flushes the subnormal input
        return False
    if sub * two != tiny or tiny * half != sub or sub + sub != tiny:
        return False
    if fma_native(one, one, tie) != one or one + tie != one:        # tie -> even (not up)
        return False
    if fma_native(one, one, above) == one or one + above == one:    # above half -> up (not RZ/RD)
        return False
    if fma_native(-one, one, -above) == -one or -one - above == -one:  # not RU / RZ
        return False
    return True
