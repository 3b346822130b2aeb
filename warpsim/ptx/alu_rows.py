"""Declarative ALU rows for the instruction table, and each instruction's verification status.

``@row(pattern, dst, srcs)`` registers ``d = f(m, *sources)``: ``dst`` and ``srcs`` are PTX type
names or ``{group}`` templates filled from the pattern's named groups.  Float operands arrive and
leave as raw bit patterns (uint16/32/64), so no host rounding or NaN canonicalisation can touch
them.  Handlers compute every lane (the executor masks the writes), so they never fault on the
garbage an inactive lane may hold.

``STATUS`` says, per row, how far warpsim's result is trusted: ``verified`` (words captured on an
H100 replay exactly), ``exact`` (the PTX ISA's rule implemented bit for bit, checked against
hand-derived examples; this form is not in an H100 capture) or ``approximate`` (a hardware unit
whose words are not published: warpsim returns a model within the stated error; the measured
error is in the note).
"""

from __future__ import annotations

import re

import numpy as np

from .instructions import instr

VERIFIED, EXACT, APPROXIMATE = "verified", "exact", "approximate"
STATUS: list = []        # (compiled pattern, status, note) in registration order


def row(pattern, dst, srcs, *, status=EXACT, note=""):
    """Register ``d = fn(m, *sources)`` for opcodes matching ``pattern``."""
    def deco(fn):
        def handler(ctx, m):
            g = {k: v for k, v in m.groupdict().items() if v is not None}
            dt = dst.format(**g)
            sts = [s.format(**g) for s in srcs]
            ops = ctx.need(1 + len(sts))
            vals = []
            for i, (op, t) in enumerate(zip(ops[1:], sts)):
                v = ctx.read(op, t, what=f"source {i + 1} of {ctx.opcode}")
                vals.append(v.view(np.dtype(f"u{v.dtype.itemsize}")) if v.dtype.kind == "f" else v)
            out = np.asarray(fn(m, *vals))
            if out.dtype.kind == "f":
                out = out.view(np.dtype(f"u{out.dtype.itemsize}"))
            ctx.write(ops[0], out, dt, what=f"destination of {ctx.opcode}")
        handler.__name__ = handler.__qualname__ = fn.__name__
        instr(pattern)(handler)
        note_status(pattern, status, note)
        return fn
    return deco


def note_status(pattern, status, note=""):
    """Record the status of the opcodes matching ``pattern`` (rows of any kind)."""
    if status not in (VERIFIED, EXACT, APPROXIMATE):
        raise ValueError(f"status must be {VERIFIED!r}, {EXACT!r} or {APPROXIMATE!r}, not {status!r}")
    STATUS.append((re.compile(pattern + r"\Z"), status, note))


# forms replayed word for word against the H100 captures of tests/ptx/data/cap_alu.npz
_CAPTURED = [
    r"(?:add|sub|mul\.lo|mul\.hi|mad\.lo|mad\.hi|min|max|shr|bfe)\.[su](?:32|64)",
    r"(?:mul|mad)\.wide\.[su]32", r"(?:add|sub)\.sat\.s32", r"(?:abs|neg)\.s32", r"sh[lr]\.b32", r"shl\.b64",
    r"(?:and|or|xor|not|cnot|popc|clz|brev|bfi)\.b32", r"(?:popc|clz|brev|bfi)\.b64", r"prmt\.b32",
    r"setp\.(?:eq|ne|lt|le|gt|ge)\.s32", r"setp\.(?:lo|ls|hi|hs)\.u32",
    r"setp\.(?:eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan)\.f32",
    r"(?:add|sub|mul)\.f32", r"(?:add|mul)\.rn\.f32", r"fma\.rn\.f32", r"(?:min|max|neg|abs)\.f32",
]
# forms replayed word for word against the H100 captures of tests/ptx/data/cap_alu2.npz (the plan
# warpsim/hw/ptx_alu2_cases.py; tests/test_ptx_alu2.py checks that this list and the plan agree)
_R, _RD, _H = r"(?:rn|rz|rm|rp)", r"(?:rz|rm|rp)", r"(?:f16|f16x2|bf16|bf16x2)"
_F64_CMPS = r"(?:eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan)"
_CAPTURED_ALU2 = [
    # integer
    r"(?:div|rem|sad)\.[su](?:16|32|64)", r"(?:mul\.hi|mul\.wide|mad\.lo|min|max)\.[su]16", r"mad\.hi\.[su]64",
    r"(?:abs|neg)\.s(?:16|64)", r"not\.b64", r"cnot\.b16",
    r"(?:add\.cc|addc\.cc|addc|sub\.cc|subc\.cc|subc|mad\.lo\.cc|madc\.hi\.cc|madc\.lo\.cc|madc\.hi)\.(?:u32|u64|s32)",
    r"(?:min|max)\.relu\.s32", r"(?:min|max)\.(?:u16x2|s16x2|relu\.s16x2)", r"shf\.[lr]\.(?:wrap|clamp)\.b32",
    r"prmt\.b32\.(?:f4e|b4e|rc8|ecl|ecr|rc16)", r"lop3\.b32", r"bfind(?:\.shiftamt)?\.[su](?:32|64)",
    r"dp4a\.[su]32\.[su]32", r"dp2a\.(?:lo|hi)\.[su]32\.[su]32",
    r"testp\.(?:finite|infinite|number|notanumber|normal|subnormal)\.(?:f32|f64)",
    r"setp\.(?:lt|ge)\.s(?:16|64)", r"setp\.(?:lo|hs)\.u(?:16|64)",
    # f32 / f64
    r"(?:add|sub|mul)\." + _R + r"(?:\.ftz)?\.f32", r"(?:add|sub|mul)\." + _R + r"\.f64",
    r"(?:add|sub|mul)\.(?:rn\.sat|rz\.ftz\.sat)\.f32", r"fma\." + _R + r"(?:\.ftz|\.sat)?\.f32",
    r"fma\." + _R + r"\.f64", r"mad\.(?:rz|rn\.ftz\.sat)\.f32",
    r"div\.rn(?:\.ftz)?\.f32", r"div\." + _RD + r"(?:\.ftz)?\.f32", r"(?:rcp|sqrt)\." + _RD + r"\.f32",
    r"(?:div|rcp|sqrt)\." + _R + r"\.f64", r"(?:rcp|sqrt)\.rn(?:\.ftz)?\.f32",
    r"(?:min|max)\.(?:ftz|NaN|xorsign\.abs|ftz\.NaN)\.f32", r"(?:min|max)\.f64",
    r"(?:abs|neg)\.ftz\.f32", r"(?:abs|neg)\.f64", r"copysign\.(?:f32|f64)",
    r"setp\.(?:lt|equ|num)\.ftz\.f32", r"setp\." + _F64_CMPS + r"\.f64",
    r"slct\.s32\.s32", r"slct(?:\.ftz)?\.b32\.f32",
    # f16 / bf16, scalar and packed (.ftz and .sat exist for f16 only)
    r"(?:add|sub|mul)\.rn\." + _H, r"(?:add|sub|mul)\.rn\.(?:ftz|sat)\.f16(?:x2)?",
    r"fma\.rn(?:\.relu)?\." + _H, r"fma\.rn\.(?:ftz|sat)\.f16(?:x2)?",
    r"(?:min|max)(?:\.NaN|\.xorsign\.abs)?\." + _H, r"(?:min|max)\.ftz\.f16(?:x2)?", r"(?:neg|abs)\." + _H,
    r"setp\.(?:lt|equ|nan)\.(?:f16|bf16)", r"setp\.(?:lt|geu)\.(?:f16x2|bf16x2)",
]
VERIFIED_FORMS = [re.compile(p + r"\Z") for p in _CAPTURED]
VERIFIED_ALU2 = [re.compile(p + r"\Z") for p in _CAPTURED_ALU2]


def instruction_status(opcode: str) -> tuple[str, str]:
    """(status, note) of a PTX ALU opcode: 'verified', 'exact' or 'approximate' (see module doc).
    Raises ValueError for an opcode no ALU row of this registry handles.

    Example:

    >>> warpsim.ptx.instruction_status("div.rn.f32")[0]
    'verified'
    >>> warpsim.ptx.instruction_status("rcp.rz.ftz.f32")[0]
    'exact'
    """
    if not isinstance(opcode, str):
        raise TypeError(f"opcode must be a str such as 'div.rn.f32', not {type(opcode).__name__}")
    if any(p.match(opcode) for p in VERIFIED_FORMS):
        return VERIFIED, "replayed word for word against H100 captures (tests/ptx/data/cap_alu.npz)"
    row_note = next((note for pat, _, note in STATUS if pat.match(opcode)), "")
    if any(p.match(opcode) for p in VERIFIED_ALU2):
        where = "replayed word for word against H100 captures (tests/ptx/data/cap_alu2.npz)"
        return VERIFIED, f"{where}; {row_note}" if row_note else where
    for pat, status, note in STATUS:
        if pat.match(opcode):
            return status, note
    raise ValueError(f"{opcode!r} is not an ALU opcode with a recorded status (integer, float, f16/bf16 "
                     "arithmetic and comparisons are; mma/wgmma have warpsim.explain)")

