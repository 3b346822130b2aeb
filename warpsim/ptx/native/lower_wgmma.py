"""The translator's rows for ``wgmma`` kernels (registered into :data:`.lower.ROWS`): ``wgmma.mma_async``
(dense and sparse ``.sp``; f16 / bf16 / tf32 / fp8 / 8-bit integer / b1 A and B, A from registers or a descriptor), ``wgmma.fence`` /
``commit_group`` / ``wait_group`` and ``fence.proxy.async`` (``cvt.rn.f16x2.f32``, which feeds register A, is
lower_mma's row).

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

import hashlib

import numpy as np

from ..syntax import parse_int
from .lower import int_tuple, row, sparse_operands
from .rt import BAD_ADDRESS, WGMMA_OPERANDS
from .rt_wgmma import A_TABLES, D_COL, D_ROW, OUTSIDE

#: the generated source's import of the runtime call (a prelude line, as lower_mma's rows have theirs)
_IMPORT = ("from warpsim.ptx.native.rt_wgmma import (scratch_by_symbol as rt_wgmma_scratch, "
           "warp_mma_by_symbol as rt_wgmma,\n    scratch_sparse_by_symbol as rt_wgmma_scratch_sparse, "
           "warp_mma_sparse_by_symbol as rt_wgmma_sparse)")


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
    """A barrier of the warp's warpgroup (rt_sync.bar_end, bid -1): every warp of the warpgroup issues its
    wgmmas before any runs past the wait (the warpgroup reads their operands together)."""
    _no_guard(o)
    (n,) = o.need(1)
    if not isinstance(n, str) or parse_int(n) is None or parse_int(n) < 0:
        o.fail("wgmma.wait_group without a non-negative immediate")
    return "bar", ["_bid = -1", "_bcnt = 0", "_bgiven = False", "_bsync = True"]


@row(r"fence\.proxy\.async(?:\.shared::cta)?")
def _proxy_fence(o, m):
    """Generic-proxy stores are visible to the async proxy at once in a model that reads shared memory at issue."""
    o.need(0)
    return []


def _row_of(o, reg, typ):
    """The register's row in its register file (read)."""
    o.src(reg, typ)
    return o.ir.index[reg]


def _immediate(o, tok, allowed, what):
    v = parse_int(tok) if isinstance(tok, str) else None
    if v not in allowed:
        o.fail(f"{what} {tok!r} (the interpreter reports it)")
    return v


def _engine_arguments(ins):
    """(dot kind, parameters, use the float tensor-core kernel, its (q, scale, emin, rp)) as tuples for the generated
    source: the choice the interpreter makes (engine.warpgroup_mma.compute)."""
    from ...engine.kernel import DOT_INT, DOT_TC, FORCE_GENERIC
    from ...engine.tensorcore import _wg_params, wgmma_runner
    from ...numerics.arch import check_arch

    if ins.elem("a").kind in ("int", "bits"):
        from ...numerics.integer import int_params

        kind, p, fused = DOT_INT, np.asarray(int_params(ins), np.int64), False
    else:
        from ...numerics.recipes import recipe_params

        kind, p = DOT_TC, np.asarray(recipe_params(ins, check_arch("sm_90a")), np.int64)
        fused = not FORCE_GENERIC and wgmma_runner(ins, p) is not None
    q, scale, emin, rp = _wg_params(p) if fused else (np.zeros(18), np.zeros(3), np.zeros(3), np.zeros(8))
    return kind, tuple(int(x) for x in p), fused, (tuple(int(x) for x in q.ravel()), tuple(float(x) for x in scale),
                                                   tuple(float(x) for x in emin), tuple(int(x) for x in rp))


def _check_fragments(o, ins, reg_a):
    """The runtime's fragment tables are this opcode's (D of N columns a prefix of N = 256's; register A of its
    element width)."""
    from ...isa.layouts import layout

    n = ins.mnk[1]
    d = layout(ins.opcode, "d")[:32]
    ok = np.array_equal(d[..., 1], D_ROW[:, :n // 2]) and np.array_equal(d[..., 2], D_COL[:, :n // 2])
    if reg_a:
        a, (rows, cols) = layout(ins.opcode, "a")[:32], A_TABLES[ins.elem("a").bits]
        ok = ok and np.array_equal(a[..., 1], rows) and np.array_equal(a[..., 2], cols)
    if not ok:
        o.fail(f"{ins.opcode}: a fragment layout other than the runtime's tables")


class _Metadata:
    """values(arch) of a sparse wgmma's launch argument: its selector's metadata table (a named callable: the IR
    keeps it; wgmma is sm_90a's, whatever the launch's arch)."""

    def __init__(self, opcode, selector):
        self.opcode, self.selector = opcode, selector

    def __call__(self, arch):
        from ...isa.sparse import metadata_matrix

        return np.array(metadata_matrix(self.opcode, self.selector), np.int64)


def _sparse_operands(o, ins, meta, token):
    """A sparse form's metadata register (its R32 row) and the launch argument naming its selector's table."""
    sel, erow = sparse_operands(o, ins, meta, token)
    name = f"WGSP_{hashlib.sha256(f'{ins.opcode} {sel}'.encode()).hexdigest()[:10]}"
    o.launch_args.append((name, _Metadata(ins.opcode, sel)))
    return erow, name


@row(r"wgmma\.mma_async(?:\.sp)?\.sync\.aligned\.m64n\d+k\d+\.[\w.]+")
def _mma_async(o, m):
    from ...engine.warpgroup_mma import wgmma_instruction

    _no_guard(o)
    try:
        ins = wgmma_instruction(o.st.opcode)
    except ValueError as exc:
        o.fail(str(exc))
    ops = o.st.operands
    reg_a = len(ops) > 1 and isinstance(ops[1], list)
    nimm = (2 if ins.imm_scale else 0) + ((1 if reg_a else 2) if ins.imm_trans else 0)
    nsp = 2 if ins.is_sparse else 0         # the metadata register and the sparsity selector
    o.need(4 + nsp + nimm)
    dregs, sd_tok, imms = ops[0], ops[3 + nsp], ops[4 + nsp:]
    if not isinstance(dregs, list) or len(dregs) != ins.words("d") or (reg_a and len(ops[1]) != ins.words("a")):
        o.fail("D or A with the wrong number of registers (the interpreter reports it)")
    _check_fragments(o, ins, reg_a)
    sa, sb = (_immediate(o, t, (1, -1), "imm-scale") for t in imms[:2]) if ins.imm_scale else (1, 1)
    trans = [_immediate(o, t, (0, 1), "imm-trans") for t in imms[2 if ins.imm_scale else 0:]]
    ta, tb = ([0] + trans if reg_a else trans) if ins.imm_trans else (0, 0)
    if isinstance(sd_tok, str) and (sd_tok.startswith("%") or o.ir.regs.get(sd_tok) is not None):   # (p$b46: asm's)
        sdrow, sd = _row_of(o, sd_tok, "pred"), 1
    else:
        sdrow, sd = -1, _immediate(o, sd_tok, (0, 1), "scale-d")
    for r in dregs:
        if sd or sdrow >= 0:        # D = A x B + D: the old words are read
            o.src(r, "b32")
        o.dst(r, "b32")
    drows = int_tuple(o.ir.index[r] for r in dregs)
    arows = int_tuple(_row_of(o, r, "b32") for r in ops[1]) if reg_a else int_tuple((0, 0, 0, 0))
    adrow = -1 if reg_a else _row_of(o, ops[1], "b64")
    bdrow = _row_of(o, ops[2], "b64")
    try:
        kind, params, fused, tables = _engine_arguments(ins)
    except (ValueError, NotImplementedError) as exc:
        o.fail(f"{ins.opcode}: {exc}")
    line = o.st.line
    o.prelude.append(_IMPORT)
    if ins.is_sparse:
        erow, meta = _sparse_operands(o, ins, ops[3], ops[4])
        made = f"rt_wgmma_scratch_sparse({ins.mnk[1]}, {ins.elem('a').bits}, {params})"
        call, last = "rt_wgmma_sparse", f"np.int64({erow}), {meta}, {int(ins.atype == 'tf32')}"
    else:
        made = f"rt_wgmma_scratch({ins.mnk[1]}, {ins.elem('a').bits}, {params}, {tables})"
        call, last = "rt_wgmma", f"{fused}"
    scratch = f"WGS_{hashlib.sha256(made.encode()).hexdigest()[:10]}"
    o.scratch.append((scratch, made))
    return "warp", [
        f"_e, _v = {call}(R32, R64, P, act, base, w, W, SMEMP, SMEM_BYTES, {ins.mnk[1]}, {ins.elem('a').bits}, "
        f"{ins.elem('d').bits}, {drows}, {arows}, np.int64({adrow}), np.int64({bdrow}), np.int64({sdrow}), {sd}, {sa}, "
        f"{sb}, {ta}, {tb}, {kind}, {last}, {scratch})",
        f"if _e == {OUTSIDE}:",
        f"    return fail(status, {BAD_ADDRESS}, {line}, base, _v)",
        "if _e != 0:",
        f"    return fail(status, {WGMMA_OPERANDS}, {line}, base, _v)"]
