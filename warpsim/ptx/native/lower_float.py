"""The native translator's rows of f64 arithmetic, float conversions and the directed / ``.ftz`` / ``.sat`` f32
forms (issue 32); they register into :data:`warpsim.ptx.native.lower.ROWS` after its own rows (first match wins).

Each is the interpreter's row restated for one lane (:mod:`warpsim.ptx.float_ops`, :mod:`warpsim.ptx.convert`,
``instructions._cvt``), the runtime in :mod:`.rt_scalar`:

* f64 ``add`` / ``sub`` / ``mul`` / ``fma`` / ``div`` / ``rcp`` / ``sqrt`` ``.rn`` on the host's float64 (exact in its
  IEEE default state, which the kernel checks), NaN results by the H100's rules; ``.rz`` / ``.rm`` / ``.rp`` and
  the f32 ``.ftz`` / ``.sat`` / directed forms through the interpreter's soft-float core, as the scalar f16 / bf16
  ``add`` / ``sub`` / ``mul`` / ``fma`` ``.rn`` (:mod:`warpsim.ptx.packed_ops`);
* ``cvt`` between f32 and f64 (``.rn`` narrowing), to the same float type (``.sat``, ``.ftz``, ``.rni`` ...), from
  floats to integers (saturating), from f16 / bf16 to f32 / f64;
* ``rcp.approx.ftz.f64`` / ``rsqrt.approx[.ftz].f64``: the engine's jitted MUFU.RCP64H / RSQ64H (and the DFMA
  refinement), as :mod:`warpsim.engine.sfu` runs them for the interpreter.
"""

from __future__ import annotations

from ...numerics import softfloat as sf
from ..instructions import TYPES
from .lower import SCALAR_IMPORTS, row

_RMODE = {"rn": sf.ROUND_NEAREST, "rz": sf.ROUND_ZERO, "rm": sf.ROUND_DOWN, "rp": sf.ROUND_UP}
_IMODE = {"rni": 0, "rzi": 1, "rmi": 2, "rpi": 3}
#: per float type: (exponent bits, mantissa bits, the NaN of an invalid arithmetic result, 1.0, the sign bit)
_F = {"f32": (8, 23, 0x7FFFFFFF, 0x3F800000, 1 << 31), "f64": (11, 52, 0xFFF8000000000000, 0x3FF0000000000000, 1 << 63),
      "f16": (5, 10, 0x7FFF, 0x3C00, 1 << 15), "bf16": (8, 7, 0x7FFF, 0x3F80, 1 << 15)}
_SFU64 = "from warpsim.engine.sfu import RCP64 as SFU_RCP64, RSQRT64 as SFU_RSQRT64, _f64_form as sfu_f64_form"


def _words(o, t, n):
    """The statement's destination and ``n`` source words of float type ``t`` (the rows' runtime imported)."""
    d, *s = o.need(n + 1)
    o.prelude.append(SCALAR_IMPORTS)
    return o.dst(d, t), [o.src(x, t) for x in s]


def _soft(t, op, x, rnd, nan):
    """add / sub / mul / fma of words ``x`` rounded by ``rnd`` through the soft-float core, as
    float_ops.arith maps add / sub / mul onto the fma (x * 1 + y, x * y + (-0), or + (+0) rounding down)."""
    eb, mb, dnan, one, sign = _F[t]
    if op == "add":
        x = [x[0], f"np.uint64({one})", x[1]]
    elif op == "sub":
        x = [x[0], f"np.uint64({one})", f"({x[1]} ^ np.uint64({sign}))"]
    elif op == "mul":
        x = [x[0], x[1], f"np.uint64({0 if rnd == 'rm' else sign})"]
    return f"rt_fma_directed({', '.join(x)}, {eb}, {mb}, {nan}, np.uint64({dnan}), {_RMODE[rnd]})"


@row(r"(?P<op>add|sub|mul)(?:\.(?P<rnd>rn|rz|rm|rp))?\.f64")
def _f64_arith(o, m):
    """NaN results: b's NaN quieted, else a's (float_ops.nan_b_then_a)."""
    d, (a, b) = _words(o, "f64", 2)
    rnd = m["rnd"] or "rn"
    if rnd == "rn":
        r = f"rt_f64({a}) {dict(add='+', sub='-', mul='*')[m['op']]} rt_f64({b})"
    else:
        r = f"rt_f64({_soft('f64', m['op'], [a, b], rnd, sf.NAN_CANONICAL)})"
    return [f"{d} = rt_w64_ba({r}, {a}, {b})"]


@row(r"(?:fma|mad)\.(?P<rnd>rn|rz|rm|rp)\.f64")
def _f64_fma(o, m):
    """NaN results: the first NaN of b, c, a quieted (float_ops._F64_FMA_NAN)."""
    d, (a, b, c) = _words(o, "f64", 3)
    if m["rnd"] == "rn":
        return [f"{d} = rt_w64_first(fma_native(rt_f64({a}), rt_f64({b}), rt_f64({c})), {b}, {c}, {a})"]
    return [f"{d} = {_soft('f64', 'fma', [a, b, c], m['rnd'], sf.NAN_PROPAGATE_BCA)}"]


@row(r"(?P<op>div|rcp|sqrt)\.rn\.f64")
def _f64_quotient(o, m):
    """NaN results: the first NaN operand quieted, else the default NaN (float_ops._host)."""
    op = m["op"]
    d, x = _words(o, "f64", 2 if op == "div" else 1)
    v = [f"rt_f64({w})" for w in x]
    r = {"div": lambda: f"rt_div64({v[0]}, {v[1]})", "rcp": lambda: f"rt_div64(1.0, {v[0]})",
         "sqrt": lambda: f"rt_sqrt64({v[0]})"}[op]()
    return [f"{d} = rt_w64_first({r}, {x[0]}, {x[-1]}, {x[-1]})"]


@row(r"(?P<op>neg|abs)\.f64")
def _f64_absneg(o, m):
    d, (a,) = _words(o, "f64", 1)
    return [f"{d} = rt_absneg64({a}, {m['op'] == 'neg'})"]


@row(r"copysign\.(?P<t>f32|f64)")
def _copysign(o, m):
    """The sign of a on the magnitude of b, as words (float_ops._copysign: NaNs too)."""
    d, a, b = o.need(3)
    t = m["t"]
    sign = 1 << (TYPES[t][0] - 1)
    return [f"{o.dst(d, t)} = (np.uint64({o.src(b, t)}) & np.uint64({~sign & (2 * sign - 1)})) | "
            f"(np.uint64({o.src(a, t)}) & np.uint64({sign}))"]


@row(r"(?P<op>add|sub|mul|fma|mad)(?:\.(?P<rnd>rn|rz|rm|rp))?(?P<ftz>\.ftz)?(?P<sat>\.sat)?\.f32")
def _f32_soft(o, m):
    """The f32 forms the host's unit does not round alike (its own rows take .rn without .ftz / .sat):
    operands and result flushed with .ftz, the result saturated with .sat, NaN results 0x7fffffff."""
    op = m["op"]
    if op in ("fma", "mad") and not m["rnd"]:
        o.fail(f"{o.st.opcode} needs a rounding modifier")
    d, x = _words(o, "f32", 3 if op in ("fma", "mad") else 2)
    if m["ftz"]:
        x = [f"rt_flush32({w})" for w in x]
    r = _soft("f32", "fma" if op == "mad" else op, x, m["rnd"] or "rn", sf.NAN_CANONICAL)
    if m["ftz"]:
        r = f"rt_flush32({r})"
    if m["sat"]:
        r = f"rt_saturate({r}, 8, 23)"
    return [f"{d} = {r}"]


def _halves(t, words, one):
    """``one(base type, 16-bit words)`` of scalar f16 / bf16 words, or of each half of f16x2 / bf16x2 words (element 0
    in bits 0-15, as packed_ops.lanes)."""
    base = t.replace("x2", "")
    if base == t:
        return one(base, words)
    lo = one(base, [f"(np.uint64({w}) & np.uint64(65535))" for w in words])
    hi = one(base, [f"(np.uint64({w}) >> np.uint64(16))" for w in words])
    return f"(np.uint64({lo}) | (np.uint64({hi}) << np.uint64(16)))"


@row(r"(?:(?P<op>add|sub|mul)(?:\.rn)?(?P<ftz>\.ftz)?(?P<sat>\.sat)?\.(?P<t>f16|f16x2|bf16|bf16x2)|"
     r"(?P<fop>fma)\.rn(?P<fftz>\.ftz)?(?P<fsat>\.sat)?(?P<relu>\.relu)?\.(?P<ft>f16|f16x2|bf16|bf16x2))")
def _half_soft(o, m):
    """packed_ops' f16 / bf16 add / sub / mul / fma rounded to nearest, scalar and packed: the soft-float core,
    NaN results the canonical 0x7fff; .ftz flushes operands and result, .sat clamps to [+0, 1], .relu takes
    negative results to +0."""
    op = m["op"] or m["fop"]
    t, ftz, sat = m["t"] or m["ft"], m["ftz"] or m["fftz"], m["sat"] or m["fsat"]
    d, x = _words(o, t, 3 if op == "fma" else 2)
    eb, mb = _F[t.replace("x2", "")][:2]

    def one(base, w):
        if ftz:
            w = [f"rt_flush16({v}, {eb}, {mb})" for v in w]
        r = _soft(base, op, w, "rn", sf.NAN_CANONICAL)
        if ftz:
            r = f"rt_flush16({r}, {eb}, {mb})"
        if sat:
            r = f"rt_saturate({r}, {eb}, {mb})"
        if m["relu"]:
            r = f"rt_relu16({r}, {eb}, {mb})"
        return r
    return [f"{d} = {_halves(t, x, one)}"]


@row(r"(?P<op>min|max)(?P<ftz>\.ftz)?(?P<nan>\.NaN)?(?P<xs>\.xorsign\.abs)?\.(?P<t>f16|f16x2|bf16|bf16x2|f32)")
def _float_minmax(o, m):
    """min / max of f16 / bf16 (scalar, packed) and the f32 forms with .ftz or .xorsign.abs (float_ops.minmax)."""
    t = m["t"]
    d, x = _words(o, t, 2)
    eb, mb = _F[t.replace("x2", "")][:2]
    flags = f"{m['op'] == 'max'}, {bool(m['nan'])}, {bool(m['xs'])}, {bool(m['ftz'])}"
    return [f"{d} = {_halves(t, x, lambda base, w: f'rt_fminmax({w[0]}, {w[1]}, {eb}, {mb}, {flags})')}"]


@row(r"(?P<op>neg|abs)(?P<ftz>\.ftz)?\.(?P<t>f16|f16x2|bf16|bf16x2)")
def _half_absneg(o, m):
    """The sign bit flipped / cleared; a NaN becomes the canonical 0x7fff (packed_ops._half_absneg)."""
    d, x = _words(o, m["t"], 1)
    eb, mb = _F[m["t"].replace("x2", "")][:2]

    def one(base, w):
        v = f"rt_flush16({w[0]}, {eb}, {mb})" if m["ftz"] else f"np.uint64({w[0]})"
        flip = f"({v} ^ np.uint64(32768))" if m["op"] == "neg" else f"({v} & np.uint64(32767))"
        return f"(np.uint64(32767) if ({v} & np.uint64(32767)) > np.uint64({((1 << eb) - 1) << mb}) else {flip})"
    return [f"{d} = {_halves(m['t'], x, one)}"]


@row(r"cvt\.(?P<dt>f32|f64)\.(?P<st>f16|bf16)")
def _cvt_widen_half(o, m):
    """f16 / bf16 to f32 / f64, exact (convert.float_to_float): a NaN becomes the canonical NaN, but bf16 -> f32
    keeps its payload unquieted (convert._QUIET): that conversion is the word shifted up."""
    dt, st = m["dt"], m["st"]
    dd, sa = o.need(2)
    o.prelude.append(SCALAR_IMPORTS)
    d, a = o.dst(dd, dt), o.src(sa, st)
    if (st, dt) == ("bf16", "f32"):
        return [f"{d} = np.uint64({a}) << np.uint64(16)"]
    value = f"rt_half_value({a}, {_F[st][0]}, {_F[st][1]})"
    return [f"{d} = " + (f"rt_w32({value})" if dt == "f32" else f"rt_w64_cvt({value})")]


_CVT_MODS = r"(?P<mods>(?:\.(?:rn|rz|rm|rp|rni|rzi|rmi|rpi|ftz|sat))*)"


@row(r"cvt" + _CVT_MODS + r"\.(?P<dt>f32|f64)\.(?P<st>f32|f64)")
def _cvt_float(o, m):
    """instructions._cvt of f32 / f64: to the same type a copy, a rounding to an integral value (NaN: the
    format's canonical NaN of convert.FORMATS) or a re-encoding (.ftz of an f32 source; NaN canonical);
    widening exact and narrowing .rn with the NaN payload kept (convert._payload_nan); then .sat."""
    mods = [x for x in m["mods"].split(".") if x]
    dt, st = m["dt"], m["st"]
    dd, sa = o.need(2)
    o.prelude.append(SCALAR_IMPORTS)
    d, a = o.dst(dd, dt), o.src(sa, st)
    ftz = "ftz" in mods and st == "f32"
    src = f"rt_flush32({a})" if ftz else a
    imode = [x for x in mods if x in _IMODE]
    rnd = [x for x in mods if x in _RMODE]
    if imode:
        if dt != st:
            o.fail(f".{imode[0]} rounds to an integral value in the same float type")
        y = f"rt_round_integral(rt_{st}({src}), {_IMODE[imode[0]]})"
        lines = [f"_y = {y}"]
        r = f"rt_w{st[1:]}{'' if st == 'f32' else '_cvt'}(_y)"
    elif dt == st:
        lines = []
        if not mods:
            r = a
        elif st == "f32":
            r = f"rt_w32(rt_f32({src}))"
        else:
            r = f"rt_w64_cvt(rt_f64({a}))"
    elif dt == "f64":
        lines, r = [], f"rt_widen32({a}, {ftz})"
    else:
        if rnd != ["rn"]:
            o.fail(f"{o.st.opcode}: narrowing f64 to f32 is translated with .rn only")
        lines, r = [], f"rt_narrow64({a})"
    if "sat" in mods:
        r = f"rt_saturate({r}, {_F[dt][0]}, {_F[dt][1]})"
    return lines + [f"{d} = {r}"]


@row(r"cvt\.(?P<imode>rni|rzi|rmi|rpi)(?:\.ftz)?(?:\.sat)?\.(?P<dt>[us](?:16|32|64))\.(?P<st>f32|f64)")
def _cvt_to_int(o, m):
    """convert.float_to_int: saturating, NaN 0 (.s64: 0x8000000000000000); .ftz does not change it there."""
    d, a = o.need(2)
    dt, st = m["dt"], m["st"]
    o.prelude.append(SCALAR_IMPORTS)
    x = f"np.float64(rt_{st}({o.src(a, st)}))"
    return [f"{o.dst(d, dt)} = rt_to_int({x}, {_IMODE[m['imode']]}, {TYPES[dt][0]}, {dt[0] == 's'})"]


@row(r"(?P<op>rcp\.approx\.ftz|rsqrt\.approx(?P<ftz>\.ftz)?)\.f64")
def _f64_mufu(o, m):
    d, a = o.need(2)
    o.prelude.append(_SFU64)
    if m["op"].startswith("rcp"):
        o.sfu = ("rcp64h",)
        call = f"sfu_f64_form(SFU_RCP64, True, {o.src(a, 'f64')}, TAB_rcp64h, TAB_rcp64h)"
    else:
        o.sfu = ("rsq64h_odd", "rsq64h_even")
        call = f"sfu_f64_form(SFU_RSQRT64, {bool(m['ftz'])}, {o.src(a, 'f64')}, TAB_rsq64h_odd, TAB_rsq64h_even)"
    return [f"{o.dst(d, 'f64')} = {call}"]
