"""LLVM IR building blocks of the tensor-core intrinsics: <8 x double> loads and stores, loops
with loop-carried values, a branch merged by phis, and the vector rounding / exponent generators."""

from __future__ import annotations

from functools import lru_cache

from llvmlite import ir as _ir
from numba import types as _nbt
from numba.core import cgutils as _cgutils

from ..hostisa import has_avx512_registers, packed_int64_conversions
from .tables import _ZEXP

@lru_cache(maxsize=None)
def _packed_int64_conversions() -> bool:
    """Whether the code being generated has packed float64 <-> int64 conversions (AVX-512DQ).
    Without them (AVX2 hosts, or NUMBA_CPU_NAME / NUMBA_CPU_FEATURES naming one) LLVM converts
    <8 x double> to <8 x i64> one lane at a time, so the dot core sums its truncated terms in float64
    (the same exact sums) instead of int64; see engine/hostisa.py."""
    return packed_int64_conversions()


@lru_cache(maxsize=None)
def _sum_parts() -> int:
    """Independent partial sums (and maxima) a row of the dot core keeps (dot._terms): two where a
    register holds a row's <8 x double> (AVX-512), else one -- on AVX2 the four rows' two partials
    alone would fill all 16 registers, and the spilled accumulators cost more than the shorter
    dependency chains gain."""
    return 2 if has_avx512_registers() else 1


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
    return _phis(builder, inits, pre, res, end)


def _phis(builder, xs, bx, ys, by):
    """Phis merging each value of xs (from block bx) with its counterpart in ys (from block by)."""
    merged = []
    for x, y in zip(xs, ys):
        ph = builder.phi(x.type)
        ph.add_incoming(x, bx)
        ph.add_incoming(y, by)
        merged.append(ph)
    return merged


def _branch(builder, cond, then_fn, else_fn):
    """then_fn() where cond holds (likely), else else_fn(); their lists of values merged by phis."""
    with builder.if_else(cond, likely=True) as (then, otherwise):
        with then:
            xs = then_fn()
            bx = builder.block
        with otherwise:
            ys = else_fn()
            by = builder.block
    return _phis(builder, xs, bx, ys, by)

def _gen_round8(builder, v, rp):
    """IR of fused._fround for the <8 x double> v, every case in vector form: (the register word's
    bits <8 x i64>, ignored low bits zero; the rounded values <8 x double>).  v is the exact result (a normal float64, zero,
    or the IEEE special the block's float64 sum gave): NaN -> the canonical NaN, +-inf and results
    whose rounded bits reach inf's (OVF_INF) -> +-inf, zero and results rounding to zero -> +0
    (an HMMA never writes -0), subnormal results rounded on the format's fixed quantum.
    rp: the 8 <8 x i64> splats of round_params."""
    how = builder.extract_element(rp[7], _ir.Constant(_I32, 0))
    cases = [(1, lambda: _gen_round8_f32(builder, v)), (2, lambda: _gen_round8_f32_trunc(builder, v)),
             (0, lambda: _gen_round8_any(builder, v, rp))]
    out = builder.append_basic_block("round8.done")
    ends = []
    for k, (code, gen) in enumerate(cases):
        if k + 1 < len(cases):
            yes, no = builder.append_basic_block("round8.case"), builder.append_basic_block("round8.next")
            builder.cbranch(builder.icmp_signed("==", how, _ir.Constant(_I64, code)), yes, no)
            builder.position_at_end(yes)
        bits, val = gen()
        ends.append((bits, val, builder.block))
        builder.branch(out)
        if k + 1 < len(cases):
            builder.position_at_end(no)
    builder.position_at_end(out)
    bits, val = builder.phi(_V8L), builder.phi(_V8D)
    for b, x, blk in ends:
        bits.add_incoming(b, blk)
        val.add_incoming(x, blk)
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


def _gen_round8_f32_trunc(builder, v):
    """_gen_round8 into f32 with truncation (rp[7] == 2): the host's double -> float conversion
    (ties to even, checked FPU state), less one unit of magnitude where it rounded away from zero
    -- the integer bits step down to the next f32 toward zero, across binades, from inf to the
    largest finite, or to zero -- unless |v| >= 2^128 (that truncation overflows to +-inf too); then
    the canonical NaN and +0 for zero results, as _gen_round8_f32.  A handful of <8 x i32> / float
    operations where _gen_round8_any works in 64-bit integer lanes (two registers each on AVX2)."""
    isnan = builder.fcmp_unordered("uno", v, v)
    f = builder.fptrunc(v, _V8F)
    fabs = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_V8D, [_V8D]), "llvm.fabs.v8f64")
    av = builder.call(fabs, [v])
    away = builder.fcmp_ordered(">", builder.call(fabs, [builder.fpext(f, _V8D)]), av)
    away = builder.and_(away, builder.fcmp_ordered("<", av, _c8(2.0 ** 128, _V8D)))
    b = builder.bitcast(f, _V8I)
    b = builder.select(away, builder.sub(b, _ir.Constant(_V8I, [1] * 8)), b)
    b = builder.select(builder.icmp_signed("==", builder.and_(b, _ir.Constant(_V8I, [0x7FFFFFFF] * 8)),
                                           _ir.Constant(_V8I, [0] * 8)), _ir.Constant(_V8I, [0] * 8), b)
    bits = builder.select(isnan, _c8(0x7FFFFFFF), builder.zext(b, _V8L))
    val = builder.select(isnan, v, builder.fpext(builder.bitcast(b, _V8F), _V8D))
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

def _any8(builder, m):
    return builder.icmp_unsigned("!=", builder.bitcast(m, _ir.IntType(8)), _ir.Constant(_ir.IntType(8), 0))


def _data(context, builder, sig, args, k):
    return context.make_array(sig.args[k])(context, builder, args[k]).data


def _load_rp(builder, prp):
    return [_splat(builder, builder.load(builder.gep(prp, [_ir.Constant(_I64, k)])), _V8L) for k in range(8)]
