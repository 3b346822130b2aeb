"""The plain fused chain of one row and several 8-column panels (whole GEMMs, wgmma): make_chain."""

from __future__ import annotations

from llvmlite import ir as _ir
from numba import types as _nbt
from numba.core import cgutils as _cgutils
from numba.extending import intrinsic as _intrinsic

from .ir import (_F32, _I64, _V8D, _V8F, _V8I, _V8L, _c8, _data, _gen_round8, _i64, _load_rp, _loopn, _splat, _vload,
                 _vmax, _vstore)
from .tables import _ZEXP

# The chain of one row and PG panels (8 columns each) is PG independent dependency chains: one code
# loop over the k terms advances all of them, so the CPU overlaps their latencies (the two passes of
# _row8 are each one serial max / add chain per panel).  The exponent pass does not read the
# accumulator until its end, so the next instruction's pass can start before this one's rounding
# ends.  Every truncated term is an integer multiple of 2^(emax - frac) below 2^53 in sum (see
# the notes above), so the float64 sum is exact in any order: the accumulator's term is added last.

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
