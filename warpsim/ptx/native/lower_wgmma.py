"""The translator's rows for ``wgmma`` kernels (registered into :data:`.lower.ROWS`): ``wgmma.mma_async``
(dense, m64nNk16, f16 / bf16 A and B, f32 or f16 D), ``wgmma.fence`` / ``commit_group`` / ``wait_group``,
``fence.proxy.async`` and ``cvt.rn.f16x2.f32``.

How a warpgroup's wgmma runs in compiled code: each warp computes its own 16 rows of D when it reaches
``mma_async`` (:func:`.rt_wgmma.warp_mma`), and writes them at once -- the interpreter's model too (results
computed at issue; an in-flight accumulator read is what ptxas makes of it, a wait).  The shared memory it
reads is the interpreter's at issue as long as no other warp stores into it between the last ``bar.sync``
and the wgmma (the PTX ISA requires a barrier there: such a store is a race on the GPU), and
``wgmma.wait_group`` yields like ``bar.sync`` (every warp of the CTA has issued before any of them stores
again).  Not checked here, unlike the interpreter: the asynchronous hazards it reports (accumulators or
A registers touched in flight, shared memory overwritten under a wgmma, registers written after the
fence); ``launch(..., wgmma_strict=True)`` keeps such kernels on the interpreter.
"""

from __future__ import annotations

import numpy as np

from ..syntax import parse_int
from .lower import row
from .rt import BAD_ADDRESS, WGMMA_OPERANDS
from .rt_wgmma import A_COL, A_ROW, D_COL, D_ROW, OUTSIDE


def _no_guard(o):
    if o.st.guard is not None:
        o.fail(f"a guarded {o.st.opcode}")


@row(r"wgmma\.(?:fence|commit_group)\.sync\.aligned")
def _issue_order(o, m):
    """Nothing to do in a warp that computes its rows at issue."""
    _no_guard(o)
    o.need(0)
    return []


@row(r"wgmma\.wait_group\.sync\.aligned")
def _wait(o, m):
    """A yield of the warp, like bar.sync: every warp issues its wgmmas before any runs past the wait."""
    _no_guard(o)
    (n,) = o.need(1)
    if not isinstance(n, str) or parse_int(n) is None or parse_int(n) < 0:
        o.fail("wgmma.wait_group without a non-negative immediate")
    return "bar", []


@row(r"fence\.proxy\.async(?:\.shared::cta)?")
def _proxy_fence(o, m):
    """Generic-proxy stores are visible to the async proxy at once in a model that reads shared memory at issue."""
    o.need(0)
    return []


@row(r"cvt\.rn\.f16x2\.f32")
def _cvt_f16x2(o, m):
    d, a, b = o.need(3)
    hi, lo = o.src(a, "f32"), o.src(b, "f32")
    return [f"{o.dst(d, 'b32')} = (np.uint64(rt_f16_rn({hi})) << np.uint64(16)) | np.uint64(rt_f16_rn({lo}))"]


def _row_of(o, reg, typ):
    """The register's row in its register file (read)."""
    o.src(reg, typ)
    return o.ir.index[reg]


def _immediate(o, tok, allowed, what):
    v = parse_int(tok) if isinstance(tok, str) else None
    if v not in allowed:
        o.fail(f"{what} {tok!r} (the interpreter reports it)")
    return v


@row(r"wgmma\.mma_async\.sync\.aligned\.m64n(?P<n>\d+)k16\.(?P<d>f32|f16)\.(?P<a>f16|bf16)\.(?P=a)")
def _mma_async(o, m):
    from ...engine.kernel import FORCE_GENERIC
    from ...engine.tensorcore import _wg_params, wgmma_runner
    from ...engine.warpgroup_mma import wgmma_instruction
    from ...isa.layouts import layout
    from ...numerics.arch import check_arch
    from ...numerics.recipes import recipe_params

    _no_guard(o)
    ins = wgmma_instruction(o.st.opcode)
    ops = o.st.operands
    reg_a = isinstance(ops[1], list) if len(ops) > 1 else False
    o.need(8 if not reg_a else 7)
    n, dbits = ins.mnk[1], ins.elem("d").bits
    dregs, bdesc, sd_tok = ops[0], ops[2], ops[3]
    if not isinstance(dregs, list) or len(dregs) != ins.words("d") or (reg_a and len(ops[1]) != ins.words("a")):
        o.fail("D or A with the wrong number of registers (the interpreter reports it)")
    d_tab, a_tab = layout(ins.opcode, "d")[:32], layout(ins.opcode, "a")[:32] if reg_a else None
    if not (np.array_equal(d_tab[..., 1], D_ROW[:, :n // 2]) and np.array_equal(d_tab[..., 2], D_COL[:, :n // 2])
            and (a_tab is None or np.array_equal(a_tab[..., 1], A_ROW) and np.array_equal(a_tab[..., 2], A_COL))):
        o.fail(f"{ins.opcode}: fragment layout other than the runtime's tables")
    sa = _immediate(o, ops[4], (1, -1), "imm-scale-a")
    sb = _immediate(o, ops[5], (1, -1), "imm-scale-b")
    ta = 0 if reg_a else _immediate(o, ops[6], (0, 1), "imm-trans-a")
    tb = _immediate(o, ops[-1], (0, 1), "imm-trans-b")
    if isinstance(sd_tok, str) and sd_tok.startswith("%"):
        sdrow, sd = _row_of(o, sd_tok, "pred"), 1
    else:
        sdrow, sd = -1, _immediate(o, sd_tok, (0, 1), "scale-d")
    for r in dregs:
        if sd or sdrow >= 0:        # D = A x B + D: the old words are read
            o.src(r, "b32")
        o.dst(r, "b32")
    drows = tuple(o.ir.index[r] for r in dregs)
    arows = tuple(_row_of(o, r, "b32") for r in ops[1]) if reg_a else (0, 0, 0, 0)
    adrow = -1 if reg_a else _row_of(o, ops[1], "b64")
    bdrow = _row_of(o, bdesc, "b64")
    p = np.asarray(recipe_params(ins, check_arch("sm_90a")), np.int64)
    params = tuple(int(x) for x in p)
    use_fused = not FORCE_GENERIC and wgmma_runner(ins, p) is not None    # as the interpreter chooses (warpgroup_mma)
    q, scale, emin, rp = _wg_params(p) if use_fused else (np.zeros(18), np.zeros(3), np.zeros(3), np.zeros(8))
    fused = (tuple(int(x) for x in q.ravel()), tuple(float(x) for x in scale), tuple(float(x) for x in emin),
             tuple(int(x) for x in rp))
    line = o.st.line
    return "warp", [
        f"_e, _v = rt_wgmma(R32, R64, P, act, base, w, W, SMEMP, SMEM_BYTES, {n}, {dbits}, {drows}, {arows}, "
        f"{adrow}, {bdrow}, {sdrow}, {sd}, {sa}, {sb}, {ta}, {tb}, {params}, {use_fused}, {fused})",
        f"if _e == {OUTSIDE}:",
        f"    return fail(status, {BAD_ADDRESS}, {line}, base, _v)",
        "if _e != 0:",
        f"    return fail(status, {WGMMA_OPERANDS}, {line}, base, _v)"]
