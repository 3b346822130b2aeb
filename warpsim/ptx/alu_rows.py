"""Declarative ALU rows for the instruction table, and each instruction's verification status.

``@row(pattern, dst, srcs)`` registers ``d = f(m, *sources)``: ``dst`` and ``srcs`` are PTX type
names or ``{group}`` templates filled from the pattern's named groups.  Float operands arrive and
leave as raw bit patterns (uint16/32/64), so no host rounding or NaN canonicalisation can touch
them.  Handlers compute every lane (the executor masks the writes), so they never fault on the
garbage an inactive lane may hold.

``STATUS`` says, per row, how far warpsim's result is trusted: ``verified`` (words captured on an
H100 replay exactly), ``exact`` (the PTX ISA's rule implemented bit for bit, checked against
hand-derived examples; H100 capture pending) or ``approximate`` (a hardware unit whose words are
not published: warpsim returns the correctly rounded value; the measured error is in the note).
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
VERIFIED_FORMS = [re.compile(p + r"\Z") for p in _CAPTURED]


def instruction_status(opcode: str) -> tuple[str, str]:
    """(status, note) of a PTX ALU opcode: 'verified', 'exact' or 'approximate' (see module doc).
    Raises ValueError for an opcode no ALU row of this registry handles."""
    if not isinstance(opcode, str):
        raise TypeError(f"opcode must be a str such as 'div.rn.f32', not {type(opcode).__name__}")
    if any(p.match(opcode) for p in VERIFIED_FORMS):
        return VERIFIED, "replayed word for word against H100 captures (tests/ptx/data/cap_alu.npz)"
    for pat, status, note in STATUS:
        if pat.match(opcode):
            return status, note
    raise ValueError(f"{opcode!r} is not an ALU opcode with a recorded status (integer, float, f16/bf16 "
                     "arithmetic and comparisons are; mma/wgmma have warpsim.explain)")

