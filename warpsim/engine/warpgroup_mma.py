"""The validated warpgroup MMA (``wgmma.mma_async``): check a call, decode its operands into
matrices of raw element bits, compute D and pack it back into registers.

Decoding reads A from registers (the 128-thread fragments of :mod:`warpsim.isa.layouts`) or
through descriptors from shared memory (:mod:`warpsim.isa.smem`), B through a descriptor, and
for ``.sp`` forms gathers B at the columns the metadata names (:mod:`warpsim.isa.sparse`).
Shared by :func:`warpsim.wgmma`, ``matmul`` and the PTX layer's ``wgmma.mma_async`` statement.
The arithmetic is :mod:`warpsim.engine.wgmma` (or the warp-level engine, block by block, where
the two models coincide).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..isa import smem as _smem
from ..isa.bits import elements_to_words, words_to_elements
from ..isa.catalog import Instruction
from ..isa.layouts import layout
from ..isa.parse import parse
from ..isa.sparse import gather_b
from ..isa.sparse_matrix import check_selector
from ..numerics.arch import check_arch

ARCHS = ("sm_90a",)


def wgmma_instruction(instruction) -> Instruction:
    """The parsed opcode, refused unless it is a ``wgmma.mma_async`` form."""
    ins = parse(instruction)
    if ins.iclass == "tcgen05":
        raise ValueError(f"{ins.opcode} is a tcgen05.mma spelling (sm_100a): its operands live in shared and tensor memory; use warpsim.matmul(..., arch='sm_100a') or warpsim.tcgen05_mma")
    if not ins.is_wgmma:
        raise ValueError(f"{ins.opcode} is a warp-level mma: use warpsim.mma for it (warpsim.wgmma runs "
                         "wgmma.mma_async opcodes)")
    return ins


def _group_words(name, x, ins, nwords, dtype=np.uint32):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"operand {name} must be a numpy.uint32 array, not {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"operand {name} must have dtype uint32 (raw register words), not {x.dtype}")
    if x.shape == (128, nwords):
        return True, x[None]
    if x.ndim == 3 and x.shape[1:] == (128, nwords):
        return False, x
    raise ValueError(f"operand {name} of {ins.opcode} must have shape (groups, 128, {nwords}) or (128, {nwords}) "
                     f"(128 threads of a warpgroup, {nwords} word(s) each), got {x.shape}")


def _descs(name, x):
    """Descriptors -> (single, uint64 array (G,) or (1,))."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} descriptor must be a 64-bit integer, not bool")
    if isinstance(x, (int, np.integer)):
        if not 0 <= int(x) < 1 << 64:
            raise ValueError(f"{name} descriptor must fit in 64 unsigned bits, got {x}")
        return True, np.array([int(x)], dtype=np.uint64)
    if isinstance(x, np.ndarray):
        if x.dtype != np.uint64:
            raise TypeError(f"{name} descriptors must be numpy.uint64 (64-bit matrix descriptors), not {x.dtype}")
        if x.ndim == 0:
            return True, x.reshape(1)
        if x.ndim == 1:
            return False, x
        raise ValueError(f"{name} descriptors must be a scalar or shape (groups,), got {x.shape}")
    raise TypeError(f"{name} must be a 64-bit matrix descriptor (int or numpy.uint64), not {type(x).__name__}")


def _imm(name, v, allowed):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or int(v) not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {v!r}")
    return int(v)


def _gather_smem(smem, descs, G, rows, k, bits, major, name):
    """(G, rows, k) element bits read through per-group descriptors (one gather per distinct descriptor)."""
    uniq, inv = np.unique(descs, return_inverse=True)
    if len(uniq) == 1:          # one descriptor for every group: one gather, no scatter into a copy
        try:
            vals = _smem.read_operand(smem, int(uniq[0]), rows, k, bits, major)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return vals if vals.shape[0] == G else np.broadcast_to(vals, (G, rows, k))
    out = np.zeros((G, rows, k), dtype=np.uint64)
    for u, d in enumerate(uniq):
        sel = np.nonzero(inv == u)[0] if len(descs) > 1 else np.arange(G)
        sm = smem if smem.shape[0] == 1 else smem[sel]
        try:
            vals = _smem.read_operand(sm, int(d), rows, k, bits, major)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        out[sel] = vals
    return out


def operands(instruction, d, a, b, *, smem, scale_d=1, scale_a=1, scale_b=1, trans_a=0, trans_b=0,
             e=None, selector=0, arch="sm_90a", c_words=False):
    """Validate a call and decode it: (ins, single, A (G,64,K), B^T (G,N,K), C (G,64,N)) raw element bits.

    Sparse opcodes: A is the compressed (G, 64, K/2) matrix and the fourth item is B gathered at the
    logical columns the metadata names, (G, 64, N, K/2).  c_words: C stays D's register words, the
    last item is then (words (G, 128, words), scale-d per group (G,)) for a kernel that reads them."""
    ins = wgmma_instruction(instruction)
    if arch not in ARCHS:
        raise ValueError(f"wgmma exists on sm_90a only; arch {arch!r} is not allowed (allowed: {list(ARCHS)})")
    if not ins.is_sparse and (e is not None or (not isinstance(selector, (int, np.integer)) or selector != 0)):
        raise ValueError(f"{ins.opcode} is dense: it takes no metadata (e) or sparsity selector "
                         "(wgmma.mma_async.sp opcodes do)")
    if ins.is_sparse:
        check_selector(ins, selector)
        if e is None:
            raise ValueError(f"{ins.opcode} is sparse: pass its metadata words e, uint32 (groups, 128) or (128,)")
    m, n, k = ins.mnk
    ka = k // 2 if ins.is_sparse else k
    single, d3 = _group_words("d", d, ins, ins.words("d"))
    G = d3.shape[0]
    sa = _imm("scale_a", scale_a, (1, -1))
    sb = _imm("scale_b", scale_b, (1, -1))
    ta = _imm("trans_a", trans_a, (0, 1))
    tb = _imm("trans_b", trans_b, (0, 1))
    if not ins.imm_scale and (sa, sb) != (1, 1):
        raise ValueError(f"{ins.opcode} has no imm-scale-a/imm-scale-b operands (only f16, bf16, tf32 and fp8 "
                         "wgmma do); leave scale_a = scale_b = 1")
    if not ins.imm_trans and (ta, tb) != (0, 0):
        raise ValueError(f"{ins.opcode} reads K-major shared memory only (imm-trans exists for f16 and bf16); "
                         "leave trans_a = trans_b = 0")
    sd = np.asarray(scale_d)
    if sd.dtype == bool:
        sd = sd.astype(np.int64)
    if sd.dtype.kind not in "iu" or not np.isin(sd, (0, 1)).all() or sd.ndim > 1 or (sd.ndim == 1 and sd.shape != (G,)):
        raise ValueError(f"scale_d must be 0 or 1 (or a (groups,) array of them), got {scale_d!r}")
    if not isinstance(smem, np.ndarray) or smem.dtype != np.uint8:
        raise TypeError("smem must be a numpy.uint8 array of shared-memory bytes, shape (bytes,) or (groups, bytes)")
    if smem.ndim == 1:
        sm = smem[None]
    elif smem.ndim == 2 and smem.shape[0] == G:
        sm = smem
    else:
        raise ValueError(f"smem must have shape (bytes,) or ({G}, bytes) (one row per group), got {smem.shape}")
    at, bt, dt = ins.elem("a"), ins.elem("b"), ins.elem("d")
    # A
    if isinstance(a, np.ndarray) and a.dtype == np.uint32:
        s_a, a3 = _group_words("a", a, ins, ins.words("a"))
        if a3.shape[0] != G or s_a != single:
            raise ValueError(f"A registers have {a3.shape[0]} group(s) ({'single' if s_a else 'batched'}) but D has "
                             f"{G} ({'single' if single else 'batched'}); give both the same form")
        if ta:
            raise ValueError("trans_a applies to descriptor A only; A from registers has no imm-trans-a")
        el = words_to_elements(a3, at.bits)
        tab = layout(ins.opcode, "a")
        A = np.zeros((G, m, ka), dtype=np.uint64)
        A[:, tab[..., 1], tab[..., 2]] = el
    else:
        s_a, da = _descs("a", a)
        if not s_a and da.shape[0] != G:
            raise ValueError(f"A has {da.shape[0]} descriptors but D has {G} group(s)")
        da = np.broadcast_to(da, (G,)) if s_a else da
        A = _gather_smem(sm, da, G, m, ka, at.bits, "MN" if ta else "K", "A descriptor")
    s_b, db = _descs("b", b)
    if not s_b and db.shape[0] != G:
        raise ValueError(f"B has {db.shape[0]} descriptors but D has {G} group(s)")
    db = np.broadcast_to(db, (G,)) if s_b else db
    B = _gather_smem(sm, db, G, n, k, bt.bits, "MN" if tb else "K", "B descriptor")
    C = None if c_words else _d_to_matrix(ins, d3)
    if at.is_float:
        if sa == -1:
            A = A ^ np.uint64(1 << (at.bits - 1))
        if sb == -1:
            B = B ^ np.uint64(1 << (bt.bits - 1))
    sdv = np.broadcast_to(sd, (G,))
    if c_words:
        C = (np.ascontiguousarray(d3), np.ascontiguousarray(sdv, dtype=np.int8))
    elif not sdv.all():
        C = np.where(sdv[:, None, None] == 1, C, np.uint64(0))
    if ins.is_sparse:
        if not isinstance(e, np.ndarray) or e.dtype != np.uint32:
            raise TypeError(f"metadata e must be a numpy.uint32 array, not {getattr(e, 'dtype', type(e).__name__)}")
        if e.shape == (128,) and single:
            e2 = e[None]
        elif e.shape == (G, 128) and not single:
            e2 = e
        else:
            raise ValueError(f"metadata e of {ins.opcode} must have shape {'(128,)' if single else f'({G}, 128)'} "
                             f"(one word per thread, like d), got {e.shape}")
        B = gather_b(ins, int(selector), e2, B)
    return ins, single, np.ascontiguousarray(A), np.ascontiguousarray(B), C if c_words else np.ascontiguousarray(C)


def _mma_twin(ins):
    """The warp-level mma whose sm_90 recipe equals this wgmma's sm_90a recipe (f16, bf16, tf32: the HMMA
    model of the same K), or None.  Such a wgmma is computed as 4 x N/8 m16n8 blocks by the mma engine
    (with its fast paths): every output element is the same fused dot of the same k-ordered terms."""
    from ..isa.catalog import BY_OPCODE
    from ..numerics.recipes import find_recipe

    op = f"mma.sync.aligned.m16n8k{ins.k}.row.col.{ins.dtype}.{ins.atype}.{ins.btype}.{ins.dtype}"
    twin = BY_OPCODE.get(op)
    if twin is None or ins.family not in ("f16", "bf16", "tf32"):
        return None
    return twin if find_recipe(twin, "sm_90") == find_recipe(ins, "sm_90") else None


def _compute_by_blocks(ins, twin, A, B, C):
    from .warp_mma import execute as mma

    G, M, K = A.shape
    N = B.shape[1]
    J = N // 8
    ta, tb, tc = (layout(twin.opcode, r) for r in "abc")
    Ab = A.reshape(G, 4, 16, K)
    ea = Ab[:, :, ta[..., 1], ta[..., 2]]                                   # (G, 4, 32, ea)
    Bb = B.reshape(G, J, 8, K)
    eb = Bb[:, :, tb[..., 2], tb[..., 1]]                                   # (G, J, 32, eb)
    Cb = C.reshape(G, 4, 16, J, 8).transpose(0, 1, 3, 2, 4)                 # (G, 4, J, 16, 8)
    ec = Cb[..., tc[..., 1], tc[..., 2]]                                    # (G, 4, J, 32, ec)
    W = G * 4 * J
    aw = elements_to_words(np.broadcast_to(ea[:, :, None], (G, 4, J) + ea.shape[2:]), ins.elem("a").bits)
    bw = elements_to_words(np.broadcast_to(eb[:, None], (G, 4, J) + eb.shape[2:]), ins.elem("b").bits)
    cw = elements_to_words(ec, ins.elem("d").bits)
    d = mma(twin.opcode, np.ascontiguousarray(aw.reshape(W, 32, -1)), np.ascontiguousarray(bw.reshape(W, 32, -1)),
            np.ascontiguousarray(cw.reshape(W, 32, -1)), arch="sm_90")
    ed = words_to_elements(d, ins.elem("d").bits).reshape(G, 4, J, 32, -1)
    td = layout(twin.opcode, "d")
    out = np.zeros((G, 4, J, 16, 8), dtype=np.uint64)
    out[..., td[..., 1], td[..., 2]] = ed
    return out.transpose(0, 1, 3, 2, 4).reshape(G, M, N)


def compute(ins, A, B, C, arch="sm_90a", params=None, _exact=False):
    """D element bits (G, 64, N) from decoded operands (sparse: B gathered by the metadata, (G, 64, N, K/2)).

    Dense float forms whose recipe is one fused pass take the float tensor-core kernel
    (engine.tensorcore.wgmma_runner); the others the exact matrix kernel, or (f16 / bf16 / tf32 under
    WARPSIM_GENERIC=1) the warp-level engine block by block."""
    from . import wgmma as _eng

    if ins.elem("a").kind in ("int", "bits"):
        from ..numerics.integer import int_params

        kind, p = "int", int_params(ins)
    else:
        from ..numerics.recipes import recipe_params

        kind, p = "tc", recipe_params(ins, check_arch(arch))   # sm_90a is sm_90: its table holds the wgmma rows
    if params is not None:
        p = params
    fast = _fast_runner(ins, p) if kind == "tc" and A.shape[0] and not _exact else None
    out = np.empty(C.shape, dtype=np.uint64) if fast is not None else np.zeros(C.shape, dtype=np.uint64)
    if fast is not None:        # writes every element of out
        left = fast(A, B, C, out)
        if left is not None:        # groups whose thread's FPU is not in its default state
            sub = np.zeros((len(left),) + C.shape[1:], dtype=np.uint64)
            _eng.matrix(kind, A[left], B[left], C[left], p, sub)
            out[left] = sub
        return out
    twin = _mma_twin(ins) if params is None and not ins.is_sparse else None
    if twin is not None:
        return _compute_by_blocks(ins, twin, A, B, C)
    _eng.matrix(kind, A, B, C, p, out)
    return out


def _fast_runner(ins, p):
    """The float tensor-core kernel for this wgmma's recipe (engine.tensorcore.wgmma_runner), cached
    per (opcode, recipe); None under WARPSIM_GENERIC=1 or where it does not apply."""
    from .kernel import FORCE_GENERIC

    if FORCE_GENERIC:
        return None
    key = (ins.opcode, np.asarray(p, dtype=np.int64).tobytes())
    if key not in _FAST:
        from .tensorcore import wgmma_runner

        _FAST[key] = wgmma_runner(ins, p)
    return _FAST[key]


_FAST: dict = {}


@lru_cache(maxsize=None)
def _d_flat(opcode):
    """Each D element's row * N + col, per thread: (128, elements) int64."""
    tab = layout(opcode, "d")
    n = parse(opcode).mnk[1]
    return np.ascontiguousarray(tab[..., 1] * n + tab[..., 2], dtype=np.int64)


def _d_to_matrix(ins, d3):
    """D's register words (G, 128, words) -> element bits (G, 64, N) (one jitted pass)."""
    from .wgmma import words_to_matrix

    m, n, _ = ins.mnk
    bits = ins.elem("d").bits
    if bits not in (8, 16, 32):
        tab = layout(ins.opcode, "d")
        C = np.zeros((d3.shape[0], m, n), dtype=np.uint64)
        C[:, tab[..., 1], tab[..., 2]] = words_to_elements(d3, bits)
        return C
    return words_to_matrix(d3, _d_flat(ins.opcode), bits, m, n)


def pack_d(ins, D):
    """D element bits (G, 64, N) -> D's register words (G, 128, words)."""
    bits = ins.elem("d").bits
    if bits not in (8, 16, 32):
        tab = layout(ins.opcode, "d")
        return elements_to_words(D[:, tab[..., 1], tab[..., 2]], bits)
    from .wgmma import matrix_to_words

    return matrix_to_words(D, _d_flat(ins.opcode), bits, ins.words("d"))


def _words_runner(ins, arch):
    """The float tensor-core kernel that reads C's and writes D's register words itself
    (engine.tensorcore.wgmma_words_runner), cached per (opcode, arch); None where it does not apply."""
    from .kernel import FORCE_GENERIC

    if FORCE_GENERIC or ins.is_sparse or ins.elem("a").kind in ("int", "bits"):
        return None
    key = ("words", ins.opcode, arch)
    if key not in _FAST:
        from ..numerics.recipes import recipe_params
        from .tensorcore import wgmma_words_runner

        p = np.asarray(recipe_params(ins, check_arch(arch)), dtype=np.int64)
        _FAST[key] = wgmma_words_runner(ins, p, _d_flat(ins.opcode), ins.elem("d").bits)
    return _FAST[key]


def execute(instruction, d, a, b, *, smem, e=None, selector=0, scale_d=1, scale_a=1, scale_b=1, trans_a=0,
            trans_b=0, arch="sm_90a"):
    """D's new words for one ``wgmma.mma_async`` per warpgroup (the contract of :func:`warpsim.wgmma`)."""
    ins = wgmma_instruction(instruction)
    fast = _words_runner(ins, arch) if arch in ARCHS else None
    ins, single, A, B, C = operands(instruction, d, a, b, smem=smem, scale_d=scale_d, scale_a=scale_a,
                                    scale_b=scale_b, trans_a=trans_a, trans_b=trans_b, e=e, selector=selector,
                                    arch=arch, c_words=fast is not None)
    if fast is None:
        out = pack_d(ins, compute(ins, A, B, C, arch))
    else:
        d3, sdv = C
        out = np.empty(d3.shape, np.uint32)
        left = fast(A, B, d3, sdv, out) if A.shape[0] else None
        if left is not None:        # groups whose thread's FPU is not in its default state: the exact kernel
            Cl = _d_to_matrix(ins, d3[left])
            Cl = np.where(sdv[left][:, None, None] == 1, Cl, np.uint64(0))
            out[left] = pack_d(ins, compute(ins, A[left], B[left], Cl, arch, _exact=True))
    return out[0] if single else out


