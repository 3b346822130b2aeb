"""``warpsim.wgmma``: Hopper's warpgroup MMA (``wgmma.mma_async``) on raw words and shared memory.

A call is one ``wgmma.mma_async`` per *group* (a warpgroup: 128 threads).  D's
words in, D's words out; A from registers or through a descriptor into
``smem``, B through a descriptor.  The operands are decoded into matrices with
vectorised index tables (:mod:`warpsim.isa.layouts`, :mod:`warpsim.isa.smem`)
and computed by the same dot-product models as ``mma`` (:mod:`warpsim.engine.wgmma`).
"""

from __future__ import annotations

import numpy as np

from ..isa import smem as _smem
from ..isa.bits import elements_to_words, words_to_elements
from ..isa.catalog import Instruction
from ..isa.layouts import layout
from ..isa.parse import parse
from ..isa.sparse import gather_b
from ..numerics.arch import check_arch

ARCHS = ("sm_90a",)


def _instruction(instruction) -> Instruction:
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
    out = np.zeros((G, rows, k), dtype=np.uint64)
    uniq, inv = np.unique(descs, return_inverse=True)
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
             e=None, selector=0, arch="sm_90a"):
    """Validate a call and decode it: (ins, single, A (G,64,K), B^T (G,N,K), C (G,64,N)) raw element bits.

    Sparse opcodes: A is the compressed (G, 64, K/2) matrix and the fourth item is B gathered at the
    logical columns the metadata names, (G, 64, N, K/2)."""
    ins = _instruction(instruction)
    if arch not in ARCHS:
        raise ValueError(f"wgmma exists on sm_90a only; arch {arch!r} is not allowed (allowed: {list(ARCHS)})")
    if not ins.is_sparse and (e is not None or (not isinstance(selector, (int, np.integer)) or selector != 0)):
        raise ValueError(f"{ins.opcode} is dense: it takes no metadata (e) or sparsity selector "
                         "(wgmma.mma_async.sp opcodes do)")
    if ins.is_sparse:
        if isinstance(selector, (bool, np.bool_)) or not isinstance(selector, (int, np.integer)):
            raise TypeError(f"selector must be an integer, not {type(selector).__name__}")
        if int(selector) not in ins.selectors:
            raise ValueError(f"sparsity selector {selector} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}")
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
    el = words_to_elements(d3, dt.bits)
    tab = layout(ins.opcode, "d")
    C = np.zeros((G, m, n), dtype=np.uint64)
    C[:, tab[..., 1], tab[..., 2]] = el
    if at.is_float:
        if sa == -1:
            A = A ^ np.uint64(1 << (at.bits - 1))
        if sb == -1:
            B = B ^ np.uint64(1 << (bt.bits - 1))
    sdv = np.broadcast_to(sd, (G,))
    if not sdv.all():
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
    return ins, single, np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(C)


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
    from .mma import mma

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


def compute(ins, A, B, C, arch="sm_90a", params=None):
    """D element bits (G, 64, N) from decoded operands (sparse: B gathered by the metadata, (G, 64, N, K/2))."""
    from ..engine import wgmma as _eng

    twin = _mma_twin(ins) if params is None and not ins.is_sparse else None
    if twin is not None:
        return _compute_by_blocks(ins, twin, A, B, C)

    if ins.elem("a").kind in ("int", "bits"):
        from ..numerics.integer import int_params

        kind, p = "int", int_params(ins)
    else:
        from ..numerics.recipes import recipe_params

        kind, p = "tc", recipe_params(ins, check_arch(arch))   # sm_90a is sm_90: its table holds the wgmma rows
    if params is not None:
        p = params
    out = np.zeros(C.shape, dtype=np.uint64)
    _eng.matrix(kind, A, B, C, p, out)
    return out


def pack_d(ins, D):
    tab = layout(ins.opcode, "d")
    return elements_to_words(D[:, tab[..., 1], tab[..., 2]], ins.elem("d").bits)


def wgmma(instruction, d, a, b, *, smem, e=None, selector=0, scale_d=1, scale_a=1, scale_b=1, trans_a=0,
          trans_b=0, arch="sm_90a"):
    """Execute ``wgmma.mma_async`` for one or many warpgroups, bit-exact to an H100.

    instruction: the opcode, e.g. ``"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"``.
    d: the accumulator's words, uint32 (groups, 128, words) or (128, words).
    a: A's register words (uint32, same form as d) or A's shared-memory descriptor(s)
    (int / numpy.uint64 scalar, or uint64 (groups,)).  b: B's descriptor(s).
    smem: uint8 shared memory from address 0, (bytes,) shared by all groups or (groups, bytes).
    scale_d: 0 (D = A*B) or 1 (D = A*B + D), scalar or per group.  scale_a / scale_b: +1 or -1
    (imm-scale; negate A / B).  trans_a / trans_b: 1 = MN-major (transposed) operand in shared memory.
    Returns the new D words (same shape as d).  Inputs are never modified.
    """
    ins, single, A, B, C = operands(instruction, d, a, b, smem=smem, scale_d=scale_d, scale_a=scale_a,
                                    scale_b=scale_b, trans_a=trans_a, trans_b=trans_b, e=e, selector=selector,
                                    arch=arch)
    out = pack_d(ins, compute(ins, A, B, C, arch))
    return out[0] if single else out


def canonical_smem(ins, A_bits, B_bits, swizzle="none"):
    """Place A (G, 64, K) and B (G, K, N) element bits K-major in shared memory (sparse: A is the
    compressed (G, 64, K/2) matrix).

    Returns (smem (G, bytes) uint8, A descriptor, B descriptor).  ``swizzle``:
    any mode of :data:`warpsim.isa.smem.SWIZZLE_MODES`; LBO/SBO of the usual dense layout
    (no swizzle: core matrices of one row group adjacent along K).
    """
    m, n, k = ins.mnk
    da, size_a = _smem.dense_layout(m, ins.elem("a").bits, "K", swizzle, 0)
    b0 = -(-size_a // 1024) * 1024
    db, size_b = _smem.dense_layout(n, ins.elem("b").bits, "K", swizzle, b0, kbytes=k * ins.elem("b").bits // 8)
    G = A_bits.shape[0]
    sm = np.zeros((G, b0 + size_b), dtype=np.uint8)
    _smem.write_operand(sm, da, A_bits, ins.elem("a").bits)
    _smem.write_operand(sm, db, np.swapaxes(B_bits, -1, -2), ins.elem("b").bits)
    return sm, da, db


def matmul_wgmma(ins, A, B, C=None, *, arch="sm_90a", swizzle="none", metadata=None, selector=0):
    """D = A x B + C for a wgmma opcode on matrices: A (64, K), B (K, N), C (64, N), optional batch axis.

    Sparse opcodes: A is the logical 64 x K matrix, 2:4 sparse (tf32 1:2), compressed here for
    ``selector``; or A is the compressed 64 x K/2 matrix and ``metadata`` its words ([batch,] 128).
    """
    from ..isa.layouts import _bits_to_values, _values_to_bits, pack

    m, n, k = ins.mnk
    A, B = np.asarray(A), np.asarray(B)
    if C is None:
        C = np.zeros((m, n), dtype=ins.elem("d").numpy_dtype)
    C = np.asarray(C)
    if ins.is_sparse:
        return _matmul_sparse(ins, A, B, C, arch, swizzle, metadata, selector)
    if metadata is not None or selector:
        raise ValueError(f"{ins.opcode} is dense: it takes no metadata or selector")
    mats = {}
    for name, x, shp, role in (("A", A, (m, k), "a"), ("B", B, (k, n), "b"), ("C", C, (m, n), "d")):
        if x.shape[-2:] != shp or x.ndim not in (2, 3):
            raise ValueError(f"{name} of {ins.opcode} must have shape ([batch,] {shp[0]}, {shp[1]}), got {x.shape}")
        mats[name] = x
    batches = {x.shape[0] for x in mats.values() if x.ndim == 3}
    if len(batches) > 1:
        raise ValueError(f"batch sizes differ: {sorted(batches)}")
    G = batches.pop() if batches else 1
    bits = {}
    for name, role in (("A", "a"), ("B", "b"), ("C", "d")):
        x = mats[name]
        x3 = x if x.ndim == 3 else x[None]
        bits[name] = np.ascontiguousarray(np.broadcast_to(_values_to_bits(x3, ins.elem(role)), (G,) + x.shape[-2:]))
    sm, da, db = canonical_smem(ins, bits["A"], bits["B"], swizzle)
    d = pack_d(ins, bits["C"])
    out = wgmma(ins.opcode, d, np.full(G, da, np.uint64), np.full(G, db, np.uint64), smem=sm, arch=arch)
    tab = layout(ins.opcode, "d")
    D = np.zeros((G, m, n), dtype=np.uint64)
    D[:, tab[..., 1], tab[..., 2]] = words_to_elements(out, ins.elem("d").bits)
    vals = _bits_to_values(D, ins.elem("d"))
    return vals if batches or any(x.ndim == 3 for x in mats.values()) else vals[0]


def _matmul_sparse(ins, A, B, C, arch, swizzle, metadata, selector):
    """matmul for wgmma.mma_async.sp: A in registers (compressed), B through a canonical layout."""
    from .sparse import compress
    from ..isa.layouts import _bits_to_values, _values_to_bits, pack

    m, n, k = ins.mnk
    if metadata is None:
        aw, e = compress(ins, A, selector)
    else:
        e = np.asarray(metadata)
        if e.dtype != np.uint32:
            raise TypeError(f"metadata must be numpy.uint32 words, got {e.dtype}")
        if A.shape[-2:] != (m, k // 2):
            raise ValueError(f"with metadata, A of {ins.opcode} is the compressed {m}x{k // 2} matrix, got {A.shape}")
        aw = pack(ins, "a", A)
    for name, x, shp in (("B", B, (k, n)), ("C", C, (m, n))):
        if x.shape[-2:] != shp or x.ndim not in (2, 3):
            raise ValueError(f"{name} of {ins.opcode} must have shape ([batch,] {shp[0]}, {shp[1]}), got {x.shape}")
    parts = {"a": aw, "e": e, "B": B, "C": C}
    nd = {"a": 2, "e": 1, "B": 2, "C": 2}
    batches = {x.shape[0] for key, x in parts.items() if x.ndim == nd[key] + 1}
    if len(batches) > 1:
        raise ValueError(f"batch sizes differ: {sorted(batches)}")
    G = batches.pop() if batches else 1
    full = {key: np.ascontiguousarray(np.broadcast_to(x if x.ndim == nd[key] + 1 else x[None], (G,) + x.shape[-nd[key]:]))
            for key, x in parts.items()}
    bb = _values_to_bits(full["B"], ins.elem("b"))
    cb = _values_to_bits(full["C"], ins.elem("d"))
    sm, _, db = canonical_smem(ins, np.zeros((G, m, k // 2), np.uint64), bb, swizzle)
    out = wgmma(ins.opcode, pack_d(ins, cb), full["a"], np.full(G, db, np.uint64), smem=sm, e=full["e"],
                selector=selector, arch=arch)
    tab = layout(ins.opcode, "d")
    D = np.zeros((G, m, n), dtype=np.uint64)
    D[:, tab[..., 1], tab[..., 2]] = words_to_elements(out, ins.elem("d").bits)
    vals = _bits_to_values(D, ins.elem("d"))
    return vals if (aw.ndim == 3 or B.ndim == 3 or C.ndim == 3) else vals[0]


def corpus_call(z, e, spec):
    """Arguments of :func:`wgmma` for entry ``e`` of a wgmma corpus (``tests/golden/wgmma_sm90a*.npz``,
    ``wgmma_sp_sm90a*.npz``: sparse entries add the metadata words and the selector).

    The capture kernel's buffer sat at shared address ``base`` (1024 on the H100) and the kernel added
    ``base >> 4`` to the stored descriptors: the shared window is rebuilt from address 0.
    Returns (opcode, d, a, b, keyword arguments).
    """
    op, a_src, sa, sb, ta, tb, *sel = spec.split("|")   # sparse specs end with the sparsity selector
    smem, desc, base = z[f"{e}.smem"], z[f"{e}.desc"], z[f"{e}.base"]
    off = int(base[0])
    if not (base == off).all() or off % 16:
        raise ValueError(f"entry {e}: shared buffers at different or misaligned addresses {sorted(set(base.tolist()))}")
    smem = np.concatenate([np.zeros((smem.shape[0], off), np.uint8), smem], axis=1)
    desc = desc + np.uint64(off >> 4)
    a = z[f"{e}.a"] if a_src == "reg" else desc[:, 0].copy()
    kw = dict(smem=smem, scale_d=z[f"{e}.sd"].astype(np.int64), scale_a=int(sa), scale_b=int(sb),
              trans_a=int(ta), trans_b=int(tb))
    if sel:
        kw.update(e=z[f"{e}.e"], selector=int(sel[0]))
    return op, z[f"{e}.d"], a, desc[:, 1].copy(), kw
