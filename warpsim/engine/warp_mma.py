"""The validated warp-level ``mma``: check a call's register words and immediates, then run the
engine's cached runner for (opcode, selector, arch).

Shared by every front end that executes an ``mma`` (``warpsim.mma``, ``matmul``, wgmma's
block decomposition) and by the PTX layer's ``mma`` and ``wmma.mma`` statements.  numba is
loaded on first execution, not on import.
"""

from __future__ import annotations

import numpy as np

from ..isa.archs import as_assembled
from ..numerics.arch import check_arch
from ..isa.catalog import Instruction
from ..isa.parse import parse


def _words(name, x, ins: Instruction, nwords: int, one_warp: bool | None):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"operand {name} must be a numpy.uint32 array, not {type(x).__name__}")
    if x.dtype != np.uint32:
        raise TypeError(f"operand {name} must have dtype uint32 (raw register words), not {x.dtype}")
    want = (32, nwords) if nwords else (32,)
    if x.shape == want:
        single = True
    elif x.ndim == len(want) + 1 and x.shape[1:] == want:
        single = False
    else:
        lanes = "32 lanes" if x.ndim >= 1 else "lanes"
        raise ValueError(
            f"operand {name} of {ins.opcode} must have shape (warps, {', '.join(map(str, want))}) or {want} "
            f"({lanes}, {nwords or 1} word(s) per lane), got {x.shape}"
        )
    if one_warp is not None and single != one_warp:
        raise ValueError(f"operand {name} is {'one warp' if single else 'batched'} but earlier operands are "
                         f"{'one warp' if one_warp else 'batched'}; give every operand the same form")
    return single, (x[None] if single else x)


def validate(instruction, a, b, c, e=None, selector=0, arch="sm_90"):
    """Check everything about a call; returns (instruction, single_warp, a, b, c, e) as (W, 32, ...) views."""
    asked, arch = arch, check_arch(arch)
    ins = parse(instruction)
    if ins.iclass == "tcgen05":
        raise ValueError(f"{ins.opcode} is a tcgen05.mma spelling (sm_100a): its operands live in shared and tensor memory; use warpsim.matmul(..., arch='sm_100a') or warpsim.tcgen05_mma")
    if ins.is_wgmma:
        raise ValueError(f"{ins.opcode} is a warpgroup MMA: use warpsim.wgmma (D words, A registers or descriptor, "
                         "B descriptor, shared memory)")
    ins = as_assembled(parse(instruction, arch=asked), asked)   # sm_100a: a .kind:: spelling ptxas maps to legacy fp8
    single, a3 = _words("a", a, ins, ins.words("a"), None)
    _, b3 = _words("b", b, ins, ins.words("b"), single)
    _, c3 = _words("c", c, ins, ins.words("c"), single)
    counts = {"a": a3.shape[0], "b": b3.shape[0], "c": c3.shape[0]}
    e3 = None
    if ins.is_sparse:
        if e is None:
            raise ValueError(f"{ins.opcode} is sparse: pass its metadata words as e, shape (warps, 32) or (32,)")
        _, e3 = _words("e", e, ins, 0, single)
        counts["e"] = e3.shape[0]
    elif e is not None:
        raise ValueError(f"{ins.opcode} is dense: it takes no metadata (e must be None)")
    if len(set(counts.values())) != 1:
        raise ValueError(f"operands have different warp counts: {counts}")
    if isinstance(selector, (bool, np.bool_)) or not isinstance(selector, (int, np.integer)):
        raise TypeError(f"selector must be an integer, not {type(selector).__name__}")
    if int(selector) not in ins.selectors:
        allowed = list(ins.selectors)
        what = "sparsity selector" if ins.is_sparse else "selector (dense MMAs have none; leave it 0)"
        raise ValueError(f"{what} {selector} is out of range for {ins.opcode}; allowed: {allowed}")
    return ins, single, a3, b3, c3, e3


def _int_sel(name, v, allowed):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer immediate, not {type(v).__name__}")
    if int(v) not in allowed:
        raise ValueError(f"{name} {v} is out of range; allowed: {list(allowed)}")
    return int(v)


def validate_scales(ins: Instruction, single, warps, scale_a, scale_b, sel):
    """Check the block-scale operands; returns (SFA, SFB) row / column scale bits, or None."""
    given = scale_a is not None or scale_b is not None or any(v != 0 for v in sel)
    if not ins.block_scaled:
        if given:
            raise ValueError(f"{ins.opcode} is not block-scaled: it takes no scale_a / scale_b / byte_id / thread_id")
        return None
    if scale_a is None or scale_b is None:
        raise ValueError(f"{ins.opcode} is block-scaled: pass scale_a and scale_b, each one uint32 register per "
                         f"lane (shape (warps, 32) or (32,)) holding .{ins.stype} scale factors")
    _, sa3 = _words("scale_a", scale_a, ins, 0, single)
    _, sb3 = _words("scale_b", scale_b, ins, 0, single)
    if sa3.shape[0] != warps or sb3.shape[0] != warps:
        raise ValueError(f"scale_a / scale_b have {sa3.shape[0]} / {sb3.shape[0]} warps, the operands {warps}")
    bytes_ok, ta, tb = ins.scale_selectors()
    bida = _int_sel("byte_id_a", sel[0], bytes_ok)
    tida = _int_sel("thread_id_a", sel[1], ta)
    bidb = _int_sel("byte_id_b", sel[2], bytes_ok)
    tidb = _int_sel("thread_id_b", sel[3], tb)
    from .kernel import scale_factors

    return scale_factors(ins, sa3, sb3, (bida, tida), (bidb, tidb))


#: (instruction, selector, arch) -> (operand shapes of one warp, is sparse, runner) for calls already
#: validated once (block-scaled forms excluded); see execute
_CALLS: dict = {}
_U32 = np.dtype(np.uint32)


def execute(instruction, a, b, c, e=None, *, selector=0, arch="sm_90", scale_a=None, scale_b=None,
            byte_id_a=0, thread_id_a=0, byte_id_b=0, thread_id_b=0):
    """D's register words for one ``mma``/``mma.sp`` per warp (the contract of :func:`warpsim.mma`)."""
    # Fast path for an instruction already seen: the same checks as validate(), on the common
    # case only (exact uint32 ndarrays of one warp or of one batch); anything else takes the full
    # validation below, which raises the precise error.
    if (type(selector) is int and type(instruction) is str and scale_a is None and scale_b is None
            and not (byte_id_a or thread_id_a or byte_id_b or thread_id_b)):
        ent = _CALLS.get((instruction, selector, arch))
        if ent is not None:
            (sa, sb, sc), sparse, go = ent
            if (type(a) is np.ndarray and type(b) is np.ndarray and type(c) is np.ndarray
                    and a.dtype is _U32 and b.dtype is _U32 and c.dtype is _U32 and (e is None) != sparse
                    and (not sparse or (type(e) is np.ndarray and e.dtype is _U32))):
                if a.shape == sa and b.shape == sb and c.shape == sc and (not sparse or e.shape == (32,)):
                    d = go(np.ascontiguousarray(a)[None], np.ascontiguousarray(b)[None],
                           np.ascontiguousarray(c)[None], None if e is None else np.ascontiguousarray(e)[None])
                    return d[0]
                if (a.shape[1:] == sa and b.shape == a.shape[:1] + sb and c.shape == a.shape[:1] + sc
                        and (not sparse or e.shape == a.shape[:1] + (32,))):
                    return go(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(c),
                              None if e is None else np.ascontiguousarray(e))

    from . import kernel as _engine  # numba is loaded on first use, keeping `import warpsim` light

    ins, single, a3, b3, c3, e3 = validate(instruction, a, b, c, e, selector, arch)
    scales = validate_scales(ins, single, a3.shape[0], scale_a, scale_b,
                             (byte_id_a, thread_id_a, byte_id_b, thread_id_b))
    args = [np.ascontiguousarray(x) for x in (a3, b3, c3)]
    e3 = None if e3 is None else np.ascontiguousarray(e3)
    if scales is not None:
        d = _engine.run(_engine.plan(ins.opcode, int(selector), check_arch(arch)), *args, e3, scales=scales)
    else:
        go = _engine.runner(ins.opcode, int(selector), check_arch(arch))
        if type(selector) is int and type(instruction) is str:
            _CALLS[(instruction, selector, arch)] = (tuple((32, ins.words(r)) for r in "abc"), ins.is_sparse, go)
        d = go(*args, e3)
    return d[0] if single else d
