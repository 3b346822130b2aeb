"""Decoded statements (warpsim/ptx/plan.py) against the general path, word for word: the same
statements on the same registers, once on every warp (the plan) and once on the warps listed
one by one (rows given: the general Context path)."""

import numpy as np
import pytest

from warpsim.ptx.regfile import PTXError, Warp
from warpsim.ptx.syntax import make_statement

W = 3
SPECIALS = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFFC12345, 0x00000001,
            0x80000001, 0x3F800000, 31, 32, 33, 64]


def _values(rng, bits):
    v = rng.integers(0, 1 << min(bits, 63), size=(W, 32), dtype=np.uint64)
    if bits == 64:
        v |= rng.integers(0, 2, size=(W, 32), dtype=np.uint64) << np.uint64(63)
    v.flat[:len(SPECIALS)] = np.array(SPECIALS, np.uint64) & np.uint64((1 << bits) - 1)
    return v


REGS = {"%r1": 32, "%r2": 32, "%r3": 32, "%f1": 32, "%f2": 32, "%f3": 32, "%rd1": 64, "%rd2": 64, "%rs1": 16,
        "%rs2": 16, "%p1": 1, "%p2": 1}

STATEMENTS = [
    "add.s32 %r4, %r1, %r2", "sub.u32 %r4, %r1, 7", "mul.lo.s32 %r4, %r1, %r2", "mad.lo.s32 %r4, %r1, %r2, %r3",
    "mul.wide.s32 %rd3, %r1, %r2", "mad.wide.s32 %rd3, %r1, 4, %rd1", "mad.wide.u32 %rd3, %r1, %r2, %rd2",
    "add.s64 %rd3, %rd1, %rd2", "add.s64 %rd3, %rd1, -16", "shl.b32 %r4, %r1, %r2", "shl.b32 %r4, %r1, 4",
    "shr.s32 %r4, %r1, %r2", "shr.u32 %r4, %r1, 3", "shl.b64 %rd3, %rd1, 2", "and.b32 %r4, %r1, 0x0F0F0F0F",
    "or.b32 %r4, %r1, %r2", "xor.b32 %r4, %r1, -1", "not.b32 %r4, %r1", "min.s32 %r4, %r1, %r2",
    "max.u32 %r4, %r1, %r2", "neg.s32 %r4, %r1", "abs.s32 %r4, %r1", "bfe.s32 %r4, %r1, 3, 5",
    "bfe.u32 %r4, %r1, %r2, %r3", "add.s16 %rs3, %rs1, %rs2", "mul.lo.u16 %rs3, %rs1, 300",
    "and.pred %p3, %p1, %p2", "or.pred %p3, %p1, %p2", "xor.pred %p3, %p1, %p2", "not.pred %p3, %p1",
    "add.f32 %f4, %f1, %f2", "mul.rn.f32 %f4, %f1, 0f3FC00000", "fma.rn.f32 %f4, %f1, %f2, %f3",
    "min.f32 %f4, %f1, %f2", "neg.f32 %f4, %f1", "mov.b32 %r4, %r1", "mov.u32 %r4, 0xDEADBEEF", "mov.u16 %rs3, %rs1",
    "mov.b16 %rs3, 0x7C00", "mov.f32 %f4, 0f7FC00000", "mov.pred %p3, %p1", "mov.b64 %rd3, %rd1",
    "setp.lt.s32 %p3, %r1, %r2", "setp.hi.u32 %p3, %r1, 9", "setp.ne.f32 %p3, %f1, %f2",
    "setp.geu.f32 %p3, %f1, 0f00000000", "setp.eq.b32 %p3, %r1, 0", "selp.b32 %r4, %r1, %r2, %p1",
    "selp.b32 %r4, 10, 20, %p2", "selp.s64 %rd3, %rd1, -1, %p1",
    "@%p1 add.s32 %r4, %r1, %r2", "@!%p2 mov.b32 %r4, 1",
]


def _machines(seed):
    rng = np.random.default_rng(seed)
    a, b = Warp(W), Warp(W)
    for name, bits in REGS.items():
        v = _values(rng, bits) & np.uint64(1) if bits == 1 else _values(rng, bits)
        for w in (a, b):
            w.set(name, v.astype(bool) if bits == 1 else v.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]))
    return a, b


@pytest.mark.parametrize("text", STATEMENTS)
def test_plan_matches_the_general_path(text):
    for seed in range(3):
        a, b = _machines(seed)
        for w in (a, b):        # the destination holds something before (guarded statements keep it)
            for r, bits in (("%r4", 32), ("%rd3", 64), ("%rs3", 16), ("%f4", 32)):
                w.set(r, np.full((W, 32), 0x5A5A5A5A5A5A5A5A & ((1 << bits) - 1), dtype=np.uint64))
            w.set("%p3", np.zeros((W, 32), bool))
        st = make_statement(1, text)
        a.execute(st, None, None)
        b.execute(make_statement(1, text), np.arange(W), None)
        if st.guard is None:
            assert st.__dict__.get("plan") is not None, text      # the plan ran, not the general path
        for name in a.names:
            assert np.array_equal(a.get(name), b.get(name)), (text, name, seed)


@pytest.mark.parametrize("text, msg", [
    ("add.s32 %r4, %r1", "takes 3 operands"),
    ("add.s32 %rd3, %r1, %r2", "must be a 32-bit register"),
    ("add.s32 %r4, %r9, %r1", "used before it is defined"),
    ("mov.b32 %r4, %rd1", "32-bit register"),
    ("setp.lt.s32 %r4, %r1, %r2", "predicate"),
])
def test_plan_leaves_errors_to_the_general_path(text, msg):
    a, _ = _machines(0)
    with pytest.raises(PTXError, match=msg):
        a.run(text + ";")
