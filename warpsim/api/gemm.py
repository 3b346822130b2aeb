"""``warpsim.gemm``: a whole matrix product as a tensor-core kernel's main loop computes it.

A kernel that keeps one accumulator per output tile and walks K (Triton's and CUTLASS's main
loops) computes, for every output element, a chain of one instruction's model in k order::

    acc = C[i, j]
    for k0 in 0, k, 2k, ...:  acc = model(A[i, k0:k0+k], B[k0:k0+k, j], acc)
    D[i, j] = acc

``split_k`` and ``promote_every`` add the two reductions kernels put around that chain (see
:func:`gemm` and ``docs/gemm.md``).  The numerics are those of the instruction's recipe in
:mod:`warpsim.numerics` (nothing is restated here); the kernels are in :mod:`warpsim.engine.gemm`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from ..isa.codec import to_storage, to_values
from ..isa.parse import parse
from ..isa.sparse import unit_elements
from ..isa.types import TYPES

__all__ = ["gemm"]

SPLIT_K_REDUCTIONS = ("serial", "parallel")
#: rows per kernel call when progress is shown
_PROGRESS_ROWS = 64


def _is_dask(x) -> bool:
    return type(x).__module__.split(".")[0] == "dask"


def _check_int(name, v, lo=1):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(v).__name__}")
    if int(v) < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return int(v)


def _red_format(ins):
    """(reduction kind, exponent bits, mantissa bits, NaN rule, default NaN) of split-K / promotion."""
    from ..engine.gemm import RED_FLOAT, RED_SAT, RED_WRAP
    from ..numerics.softfloat import NAN_CANONICAL, NAN_PROPAGATE

    d = ins.elem("d")
    if not d.is_float:
        return (RED_SAT if ins.satfinite else RED_WRAP), 0, 0, 0, 0
    if d.name == "f64":
        return RED_FLOAT, 11, 52, NAN_PROPAGATE, 0xFFF8000000000000 - (1 << 64)
    return RED_FLOAT, 8, 23, NAN_CANONICAL, 0x7FFFFFFF


class _Progress:
    def __init__(self, progress, total, what):
        self.cb = progress if callable(progress) else None
        self.show = bool(progress) and not callable(progress)
        self.total, self.what, self.t0 = total, what, time.perf_counter()

    def __call__(self, done):
        if self.cb is not None:
            self.cb(done, self.total)
        elif self.show:
            el = time.perf_counter() - self.t0
            eta = el / done * (self.total - done) if done else 0.0
            print(f"\r{self.what}: {100 * done / self.total:5.1f}% ({done}/{self.total} rows), "
                  f"{el:.1f} s, {eta:.1f} s left   ", end="" if done < self.total else "\n", file=sys.stderr,
                  flush=True)


def _tcgen05_twin(spelling, A, arch):
    """The sm_100 ``mma`` whose recipe equals a tcgen05.mma's, and its target: a tcgen05 main loop is a chain
    of K-step MMAs, each a fused sum with C, which is what that mma chain computes.  kind::f16 (f16 or bf16
    A/B, f32 D: the m16n8k16 HMMA rule) and kind::tf32 (m16n8k8) have one; the other kinds do not yet."""
    from ..numerics.recipes import recipe_params
    from ..isa import tcgen05 as _t

    op = parse(spelling, arch="sm_100a" if arch is None else arch)
    adt = getattr(getattr(A, "dtype", None), "name", "")
    twin = {("f16", "float16"): "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            ("f16", "bfloat16"): "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            ("tf32", "float32"): "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}.get((op.kind, adt))
    if twin is None or op.sparse:
        raise NotImplementedError(f"{op.opcode}: warpsim.gemm runs tcgen05 main loops for dense kind::f16 (float16 / "
                                  "bfloat16 A and B, f32 D) and kind::tf32 (float32) only; warpsim.matmul(..., "
                                  "arch='sm_100a') computes one tcgen05.mma of every kind")
    t = twin.split(".")[-3]
    desc = _t.InstrDesc(kind=op.kind, atype=t, btype=t, dtype="f32", m=128, n=64)
    if not np.array_equal(recipe_params(_t.instruction(op, desc), "sm_100"), recipe_params(twin, "sm_100")):
        raise NotImplementedError(f"{op.opcode}: its recipe no longer equals {twin}'s on sm_100")
    return twin, "sm_100"


def gemm(A, B, C=None, *, instruction, arch=None, split_k=1, promote_every=None, progress=False,
         split_k_reduce="serial", pad=False, k_order=None):
    """D = A @ B + C as a tensor-core kernel's main loop computes it with ``instruction``.

    A: (M, K), B: (K, N), C: (M, N) or None (zeros), optionally with a leading batch axis (B and
    C may then be shared by every batch entry); any dtype that converts to the operand types
    (as :func:`warpsim.pack`).  numpy or dask arrays (dask: the result is a dask array, computed
    block by block on the M and N chunks, each task running its block's whole K chain).
    instruction: a float or integer ``mma`` opcode of the catalog, or a ``wgmma`` opcode (tile
    64 x n, its own recipe: fp8 -> f32 keeps 13 mantissa bits); its m, n, k are the tile and the k step.  A dense tcgen05
    kind::f16 / kind::tf32 spelling (arch sm_100a) runs as the sm_100 ``mma`` chain of the same recipe.  Sparse (``mma.sp``) forms take the logical A, 2:4 sparse (tf32 1:2), as
    :func:`warpsim.compress` (in every group the nonzero positions, padded with the lowest unused).
    arch: the target whose recipes compute each instruction (default "sm_90", the one verified on
    hardware; see warpsim.mma for the modelled ones).

    split_k: S > 1 splits K into S contiguous equal slices, each chained from +0, reduced in slice
    order with ``split_k_reduce``: "serial" D = ((C + P0) + P1) + ... (CUTLASS serial split-K),
    "parallel" D = ((P0 + P1) + ...) + C (a separate reduction then the epilogue's C).
    promote_every: accumulate this many k elements in the tensor core from +0, then add the partial
    into the main accumulator (started from C): Triton's ``max_num_imprecise_acc`` on Hopper,
    DeepSeek-V3's promotion.  Every reduction addition is one IEEE addition, nearest even, in f32
    (f16 partials and C widen exactly; an f16 D is rounded once at the end), f64 for f64, s32
    wrap-around (saturating with ``.satfinite``) for integers.
    pad: M, N, K that are not multiples of the tile / k step raise ValueError; with pad=True they are
    padded with zeros (what a kernel with masked, zero-filled loads computes) and D is cropped.
    progress: True prints progress to stderr; a callable gets (rows done, rows total).
    k_order: the order in which a kernel feeds the k elements to its instructions, when its operand
    layout is not plain k order: a permutation of range(K); instruction s then takes the k elements
    k_order[s*k : (s+1)*k].  Triton's fp8 ``mma.sync`` path is one (docs/gemm.md).  Dense only.

    Returns D in the accumulator's element type (numpy / ml_dtypes), shape (M, N) or (batch, M, N).
    Inputs are never modified.

    Example: a 64 x 256 x 32 product, K chained 16 at a time in k order, against float64.

    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.standard_normal((64, 256)).astype(np.float16), rng.standard_normal((256, 32)).astype(np.float16)
    >>> D = warpsim.gemm(A, B, instruction="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    >>> D.shape, D.dtype, bool(np.abs(D - A.astype(np.float64) @ B).max() < 1e-3)
    ((64, 32), dtype('float32'), True)
    """
    if isinstance(instruction, str) and instruction.strip().startswith("tcgen05"):
        instruction, arch = _tcgen05_twin(instruction, A, arch)
    plan = plan_gemm(instruction, arch=arch, split_k=split_k, promote_every=promote_every,
                     split_k_reduce=split_k_reduce, pad=pad, k_order=k_order)
    if any(_is_dask(x) for x in (A, B, C) if x is not None):
        return _gemm_dask(plan, A, B, C)
    A, B = np.asarray(A), np.asarray(B)
    C = None if C is None else np.asarray(C)
    if A.ndim == 3:
        n = A.shape[0]
        for name, x in (("B", B), ("C", C)):
            if x is not None and x.ndim == 3 and x.shape[0] != n:
                raise ValueError(f"batch sizes differ: A has {n}, {name} has {x.shape[0]}")
        out = [plan.run(A[b], B[b] if B.ndim == 3 else B, None if C is None else (C[b] if C.ndim == 3 else C),
                        progress if b == 0 else False) for b in range(n)]
        return np.stack(out) if out else np.zeros((0,) + (A.shape[1], B.shape[-1]), plan.ins.elem("d").numpy_dtype)
    if A.ndim != 2:
        raise ValueError(f"A must have shape ([batch,] M, K), got {A.shape}")
    if B.ndim != 2 or (C is not None and C.ndim != 2):
        raise ValueError(f"B and C must be 2-D (K, N) / (M, N) when A is 2-D; got B {B.shape}"
                         + ("" if C is None else f", C {C.shape}"))
    return plan.run(A, B, C, progress)


def plan_gemm(instruction, *, arch=None, split_k=1, promote_every=None, split_k_reduce="serial", pad=False,
              k_order=None) -> "GemmPlan":
    """Check gemm's options against the instruction and decide everything that does not depend on
    the data (:class:`GemmPlan`); the arguments are :func:`gemm`'s."""
    from ..engine.kernel import DOT_KINDS
    from ..numerics.arch import check_arch

    is_wg = isinstance(instruction, str) and instruction.strip().startswith("wgmma")
    arch = check_arch("sm_90" if arch is None else arch)
    try:   # arch picks the numerics (sm_90 and sm_90a are one target there); wgmma's ptxas target is sm_90a
        ins = parse(instruction, arch="sm_90a" if is_wg and arch == "sm_90" else arch)
    except ValueError as exc:
        op = instruction.strip() if isinstance(instruction, str) else ""
        if not op.startswith("wgmma") or "not available on" in str(exc):
            raise
        from ..isa.catalog import CATALOG

        if not any(getattr(i, "is_wgmma", False) for i in CATALOG):
            raise NotImplementedError(
                f"{op}: warpsim.gemm takes wgmma opcodes once the catalog has wgmma rows with their "
                "recipes (the tile is then 64 x n, the k step the wgmma's k); this build's catalog has none. "
                "For f16 / bf16 / tf32 the wgmma instruction computes what the mma opcode of equal k computes "
                "(m16n8k16 for f16 / bf16, m16n8k8 for tf32): pass that opcode") from None
        ins = parse(op)                 # warpgroup MMA: its own (sm_90a) catalog rows
    if getattr(ins, "block_scaled", False):
        raise NotImplementedError(f"{ins.opcode}: block-scaled forms need per-block scale operands, which "
                                  "warpsim.gemm does not take (yet); the unscaled kind:: forms work")
    split_k = _check_int("split_k", split_k)
    if promote_every is not None:
        promote_every = _check_int("promote_every", promote_every)
    if split_k_reduce not in SPLIT_K_REDUCTIONS:
        raise ValueError(f"split_k_reduce must be one of {SPLIT_K_REDUCTIONS}, got {split_k_reduce!r}")
    if promote_every is not None and ins.dtype != "f32":
        raise ValueError(f"promote_every needs an f32 accumulator (the partials are added into an f32 main "
                         f"accumulator); {ins.opcode} accumulates in {ins.dtype}")
    if k_order is not None:
        if ins.is_sparse:
            raise ValueError("k_order applies to dense instructions only (a permutation would break the 2:4 groups)")
        k_order = np.asarray(k_order)
        if k_order.ndim != 1 or k_order.dtype.kind not in "iu":
            raise TypeError(f"k_order must be a 1-D integer permutation of range(K), got {k_order.dtype} {k_order.shape}")
    kind_name, p = _recipe(ins, arch)
    p = np.ascontiguousarray(p, dtype=np.int64)
    kind = DOT_KINDS[kind_name]
    ka = ins.mnk[2] // 2 if ins.is_sparse else ins.mnk[2]
    return GemmPlan(ins, arch, split_k, promote_every, split_k_reduce, pad, k_order, kind, p, ka,
                    _fast_path(ins, kind, p, ka, split_k, promote_every))


def _fit(name, size, mult, what, pad):
    if size % mult == 0:
        return size
    if pad:
        return size + (-size) % mult
    raise ValueError(f"{name} = {size} is not a multiple of {what} ({mult}); pass pad=True to zero-pad "
                     "(what a kernel with masked, zero-filled loads computes)")


def _u64(x):
    return np.ascontiguousarray(x, dtype=np.uint64)


def _compress(ins, Abits, Avals):
    """Logical sparse A -> (compressed term bits (M, K/2), their logical k (M, K/2)), in the order
    the instruction's dot takes them: per group of four (tf32: pair) the kept positions ascending."""
    M, K = Abits.shape
    us = unit_elements(ins)
    tf32 = ins.atype == "tf32"
    per_group, keep = (2, 1) if tf32 else (4, 2)
    nz = np.asarray(Avals != 0)
    if us > 1:
        nz = nz.reshape(M, K // us, us).any(axis=-1)
    g = nz.reshape(M, -1, per_group)
    count = g.sum(axis=-1)
    bad = np.argwhere(count > keep)
    if bad.size:
        r, grp = (int(x) for x in bad[0])
        lo = grp * per_group * us
        rule = "1:2 (at most one nonzero per pair)" if tf32 else (
            "2:4 over pairs (at most two nonzero pairs per group of four)" if us > 1 else
            "2:4 (at most two nonzeros per group of four)")
        raise ValueError(f"A is not {rule} sparse: row {r}, columns {lo}..{lo + per_group * us - 1} hold "
                         f"{int(count[r, grp])} nonzero {'pairs' if us > 1 else 'elements'}; "
                         f"{len(bad)} group(s) in all break the pattern")
    order = np.sort(np.argsort(~g, axis=-1, kind="stable")[..., :keep], axis=-1)     # (M, G, keep)
    units = np.arange(g.shape[1])[None, :, None] * per_group + order
    cols = (units[..., None] * us + np.arange(us)).reshape(M, -1)
    return np.ascontiguousarray(np.take_along_axis(Abits, cols, axis=1)), np.ascontiguousarray(cols, dtype=np.int64)


def _values(bits, t):
    """Raw bits -> exact float64 values (ignored low bits cleared), finite mask."""
    if t.ignored_low_bits:
        bits = bits & ~np.uint64((1 << t.ignored_low_bits) - 1)
    with np.errstate(invalid="ignore"):       # NaN payloads of ml_dtypes types
        v = to_values(bits, t).astype(np.float64)
    fin = np.isfinite(v)
    return np.where(fin, v, 0.0), fin


def _exponents(v, emin):
    """Alignment exponents: max(floor(log2 |v|), emin) as float32; zeros far below anything."""
    from ..engine.tensorcore import _ZEXP

    _, e = np.frexp(v)
    E = np.maximum(e - 1, emin).astype(np.float32)
    E[v == 0] = _ZEXP
    return E


_TABLES: dict = {}


def _decoder(t, emin):
    """(table?, mask, TV, TE, TF) for engine.gemm.decode_*: 8 / 16-bit formats by lookup tables
    (cached), 32-bit ones (tf32, f32) computed with the ignored low bits masked."""
    key = (t.name, emin)
    if key not in _TABLES:
        if t.bits <= 16:
            raw = np.arange(1 << t.bits, dtype=np.uint64)
            v, fin = _values(raw, t)
            _TABLES[key] = (True, 0, v, _exponents(v, emin), fin)
        else:
            z = np.zeros(1, np.float64)
            _TABLES[key] = (False, (0xFFFFFFFF >> t.ignored_low_bits) << t.ignored_low_bits, z,
                            z.astype(np.float32), np.zeros(1, np.bool_))
    return _TABLES[key]


def _recipe(ins, arch):
    """(dot kind, parameter vector) of one instruction on arch; a wgmma opcode takes the recipe of
    the warpgroup rows (sm_90a) when the architecture registry has none for it."""
    from ..numerics import arch as _arch

    try:
        return _arch.recipe(ins, arch)
    except NotImplementedError:
        if not getattr(ins, "is_wgmma", False):
            raise
        from ..numerics import recipes

        if "sm_90a" not in recipes.RECIPES:
            raise
        return "tc", recipes.recipe_params(ins, "sm_90")   # wgmma rows live in the sm_90 table (sm_90a spells sm_90)


def _fmt(p, f):
    return tuple(int(x) for x in p[f:f + 5])


def _tc_checked(p):
    """The recipe tc_fast_ok is to judge: a truncated result format (wgmma fp8 -> f32 keeps 13 mantissa
    bits of an f32 word) as D's own, which the block rounding (round_params with ignored bits) narrows."""
    from ..engine.tensorcore import _as_checked, truncated_acc

    return _as_checked(p) if truncated_acc(p) else p


def _fast_path(ins, kind, p, ka, split_k, promote_every):
    """The numba kernel family that computes this plan's ordinary outputs ("tc", "tc_sep", "int",
    "f64"), or None: the exact generic kernel for every output (also under WARPSIM_GENERIC=1)."""
    from ..engine.kernel import DOT_CHAIN, DOT_INT, DOT_TC, FORCE_GENERIC
    from ..numerics.chain import FIRST_FROM_C, P_FIRST, P_KORDER
    from ..numerics.fused import CMODE_FUSED, CMODE_SEPARATE_ADD, P_CMODE, P_GROUP, P_NBLK, tc_fast_ok

    if FORCE_GENERIC:
        return None
    if kind == DOT_TC and tc_fast_ok(_tc_checked(p), 8, ka):
        nblk = int(p[P_NBLK])
        if nblk == 1 and p[P_CMODE] == CMODE_FUSED:
            return "tc"
        if nblk == 2 and p[P_CMODE] == CMODE_SEPARATE_ADD and ka % (2 * int(p[P_GROUP])) == 0:
            return "tc_sep"
        return None
    if kind == DOT_INT and not ins.is_sparse:
        return "int"
    if (kind == DOT_CHAIN and ins.elem("a").name == "f64" and p[P_FIRST] == FIRST_FROM_C and p[P_KORDER] == 0
            and split_k == 1 and not promote_every):
        return "f64"
    return None


@dataclass(frozen=True)
class GemmPlan:
    """Everything :func:`gemm` decides before it sees data, built once by :func:`plan_gemm`: the
    instruction, its recipe (dot kind and parameters), the kernel family of its fast path, the tile,
    split-K and promotion.  :meth:`run` then reads down the layers: operands to storage words
    (:mod:`warpsim.isa.codec`), the fast kernel of :mod:`warpsim.engine.gemm` for ordinary outputs,
    the exact kernel for the rest, words back to values."""

    ins: object
    arch: str
    split_k: int
    promote_every: int | None
    reduce: str
    pad: bool
    k_order: np.ndarray | None
    kind: int
    params: np.ndarray
    ka: int                      # A terms per k step (half the k step for sparse A)
    path: str | None

    def options(self):
        """The plan as :func:`gemm`'s keyword arguments (plain values: what a dask task carries)."""
        return dict(instruction=self.ins.opcode, arch=self.arch, split_k=self.split_k,
                    promote_every=self.promote_every, split_k_reduce=self.reduce, pad=self.pad, k_order=self.k_order)

    @property
    def tile(self):
        """(m, n, k): the output tile and the k step (wgmma: m = 64)."""
        return self.ins.mnk

    def padded(self, M, N, K):
        """(Mp, Np, Kp): the problem rounded up to the tile, the k step x split_k (x promote_every); a
        ValueError for a shape that needs padding unless pad=True."""
        ins, (m, n, k) = self.ins, self.tile
        if K == 0:
            raise ValueError(f"A is {M}x0 and B is 0x{N}: K must be at least 1 (with K = 0 no {ins.opcode} runs, "
                             "so there is no tensor-core arithmetic to emulate)")
        if self.split_k > -(-K // k):
            raise ValueError(f"split_k = {self.split_k} exceeds the {-(-K // k)} k step(s) of {ins.opcode} in K = {K}: "
                             "every slice needs at least one k step")
        Mp = _fit("M", M, m, f"the tile's m of {ins.opcode}", self.pad)
        Np = _fit("N", N, n, f"the tile's n of {ins.opcode}", self.pad)
        kmult = k * self.split_k
        if self.promote_every is not None:
            if self.promote_every % k:
                raise ValueError(f"promote_every = {self.promote_every} must be a multiple of the k step ({k}) "
                                 f"of {ins.opcode}")
            kmult = int(np.lcm(kmult, self.promote_every * self.split_k))
        Kp = _fit("K", K, kmult, f"the k step{' x split_k' if self.split_k > 1 else ''}"
                  f"{' x promote_every' if self.promote_every else ''} of {ins.opcode}", self.pad)
        return Mp, Np, Kp

    def operands(self, A, B, C):
        """Checked, k-ordered, padded storage words of A, B, C, and A's logical k per stored term
        (sparse A compressed) -> (Ab, Bb, Cb, RI, Kp)."""
        ins = self.ins
        M, K = A.shape
        K2, N = B.shape
        if K2 != K:
            raise ValueError(f"A is {M}x{K} but B is {K2}x{N}: inner dimensions differ")
        if C is not None and C.shape != (M, N):
            raise ValueError(f"C must have shape (M, N) = ({M}, {N}), got {C.shape}")
        if self.k_order is not None:
            if self.k_order.shape != (K,) or not np.array_equal(np.sort(self.k_order), np.arange(K)):
                raise ValueError(f"k_order must be a permutation of range(K) = range({K})")
            A, B = A[:, self.k_order], B[self.k_order]
        Mp, Np, Kp = self.padded(M, N, K)
        ta, tb, tc = (ins.elem(r) for r in "abc")
        Ab = to_storage(A, ta)
        Bb = to_storage(B, tb)
        Cb = to_storage(np.zeros((M, N), tc.numpy_dtype) if C is None else C, tc)
        if (Mp, Np, Kp) != (M, N, K):
            Ab = np.pad(Ab, ((0, Mp - M), (0, Kp - K)))
            Bb = np.pad(Bb, ((0, Kp - K), (0, Np - N)))
            Cb = np.pad(Cb, ((0, Mp - M), (0, Np - N)))
        if ins.is_sparse:
            Ab, RI = _compress(ins, Ab, to_values(Ab, ta))
        else:
            RI = np.zeros((1, 1), np.int64)
        return Ab, Bb, Cb, RI, Kp

    def globals(self, Kp):
        """The launch vector of :mod:`warpsim.engine.gemm`'s kernels (k step, steps, split-K,
        promotion, the reduction's format)."""
        from ..engine import gemm as eg

        ins, k = self.ins, self.tile[2]
        red, reb, rmb, rnan, rdnan = _red_format(ins)
        ac = TYPES[ins.dtype]
        g = np.zeros(eg.G_LEN, np.int64)
        g[[eg.G_KS, eg.G_KA, eg.G_STEPS, eg.G_SPLIT, eg.G_PROMOTE, eg.G_SERIAL]] = (
            k, self.ka, Kp // k, self.split_k, (self.promote_every or 0) // k, 1 if self.reduce == "serial" else 0)
        g[[eg.G_RED, eg.G_REB, eg.G_RMB, eg.G_AEB, eg.G_AMB, eg.G_SPARSE, eg.G_RNAN, eg.G_RDNAN]] = (
            red, reb, rmb, ac.exp_bits if ac.is_float else 0, ac.man_bits if ac.is_float else 0,
            int(ins.is_sparse), rnan, rdnan)
        return g

    def run(self, A, B, C, progress=False):
        """D of one 2-D product (numpy arrays), in the accumulator's element type."""
        from ..engine import gemm as eg

        ins = self.ins
        M, N = A.shape[0], B.shape[1]
        Ab, Bb, Cb, RI, Kp = self.operands(A, B, C)
        Mp, Np = Ab.shape[0], Bb.shape[1]
        g = self.globals(Kp)
        D = np.zeros((Mp, Np), np.uint64)
        rare = np.ones((Mp, Np // eg.PANEL), np.bool_)          # panels still to compute exactly
        prog = _Progress(progress, Mp, f"gemm {ins.shape} {ins.atype}->{ins.dtype}")
        blocks = [(r, min(Mp, r + _PROGRESS_ROWS)) for r in range(0, Mp, _PROGRESS_ROWS)] if progress else [(0, Mp)]
        if self.path is not None:
            _FAST[self.path](self, g, Ab, Bb, Cb, RI, D, rare, blocks, prog)
        ti, tp = np.nonzero(rare)
        if ti.size:
            BT = _u64(Bb.T)
            Ab, Cb = _u64(Ab), _u64(Cb)
            tj = tp * eg.PANEL
            if self.path is None and progress:
                for r0, r1 in blocks:
                    sel = (ti >= r0) & (ti < r1)
                    eg.exact_tasks(self.kind, self.params, g, Ab, RI, BT, Cb, D, ti[sel], tj[sel])
                    prog(r1)
            else:
                eg.exact_tasks(self.kind, self.params, g, Ab, RI, BT, Cb, D, ti, tj)
        elif self.path is None:
            prog(Mp)
        return to_values(D[:M, :N], ins.elem("d"))


def _run_tc(plan, g, Ab, Bb, Cb, RI, D, rare, blocks, prog):
    """The fused-dot kernels ("tc": one block per k step, C fused; "tc_sep": two blocks, C added
    separately): operands decoded to exact values and exponents, outputs marked rare where a
    special value or an out-of-range sum needs the exact kernel."""
    from ..engine import gemm as eg
    from ..engine.hostfpu import PROBE32, PROBE64
    from ..engine.tensorcore import round_params
    from ..numerics.fused import P_ACC, P_FRAC, P_GROUP, P_OP, P_RND, RND_RNE

    ins, p, ka, sep = plan.ins, plan.params, plan.ka, plan.path == "tc_sep"
    ta, tb, tc, td = (ins.elem(r) for r in "abcd")
    Mp, Kp, Np = Ab.shape[0], Bb.shape[0], Bb.shape[1]
    S, NP = Kp // plan.tile[2], Np // eg.PANEL
    op = _fmt(p, P_OP) if p[P_OP] != 0 else None
    opt = None
    if op is not None:
        opt = next(t for t in TYPES.values() if t.is_float and (t.bits, t.exp_bits, t.man_bits) == op[:3])
    emin_a = 1 - (opt or ta).bias
    emin_b = 1 - (opt or tb).bias
    Kc = Ab.shape[1]
    AV, AE = np.empty((Mp, Kc), np.float64), np.empty((Mp, Kc), np.float32)
    arow = np.empty(Mp, np.bool_)
    eg.decode_rows(Ab, *_decoder(ta, emin_a), np.float32(emin_a), AV, AE, arow)
    # a chain without split-K / promotion decodes C itself, row block by row block (no decoded copy
    # of C), and (sep) reads B's rows in the instructions' block order like A's terms
    cbits = (plan.split_k == 1 and not plan.promote_every and not ins.is_sparse
             and (ka % 4 == 0 if sep else ka % 2 == 0))
    if sep:
        t = np.arange(ka)
        step_perm = np.argsort((t // int(p[P_GROUP])) % 2, kind="stable")
        perm = (np.arange(S)[:, None] * ka + step_perm[None, :]).ravel()
    BVp, BEp = np.empty((NP, Kp, eg.PANEL), np.float64), np.empty((NP, Kp, eg.PANEL), np.float32)
    bok = np.empty(NP, np.bool_)
    eg.decode_panels(Bb[perm] if cbits and sep else Bb, *_decoder(tb, emin_b), np.float32(emin_b), BVp, BEp, bok)
    cdec = _decoder(tc, 1 - tc.bias)
    cemin = np.float32(1 - tc.bias)
    if cbits:
        CV, CE = np.zeros((1, 1), np.float64), np.zeros((1, 1), np.float32)
        crow = np.ones(1, np.bool_)
    else:
        CV, CE = np.empty((Mp, Np), np.float64), np.empty((Mp, Np), np.float32)
        crow = np.empty(Mp, np.bool_)
        eg.decode_rows(Cb, *cdec, cemin, CV, CE, crow)
    if sep:
        AV, AE = np.ascontiguousarray(AV[:, perm]), np.ascontiguousarray(AE[:, perm])
        RIf = np.ascontiguousarray(RI[:, perm]) if ins.is_sparse else perm[None, :].astype(np.int64)
    else:
        RIf = RI if ins.is_sparse else np.arange(Kp, dtype=np.int64)[None, :]
    cbad = np.zeros((1, 1) if cbits else (Mp, NP), np.bool_)
    if not crow.all():
        cbad = ~_values(Cb, tc)[1].reshape(Mp, NP, eg.PANEL).all(axis=2)
    accf = _fmt(p, P_ACC)
    rpb = round_params(accf, p[P_RND] == RND_RNE)
    rpa = round_params(accf, True)
    rpr = round_params((32, 8, 23, 0, 1), True)
    rpd = round_params((td.bits, td.exp_bits, td.man_bits, 0, 1), True)
    emino = np.float32(1 - TYPES[ins.dtype].bias)
    rare[:] = False
    for r0, r1 in blocks:
        eg.fast_rows(g, AV, AE, RIf, BVp, BEp, CV, CE, ~arow, ~bok, cbad, float(p[P_FRAC]),
                     sep, rpb, rpa, rpr, rpd, emino, r0, r1, D, rare, PROBE64, PROBE32,
                     cbits, Cb, *cdec, cemin)
        prog(r1)


def _run_int(plan, g, Ab, Bb, Cb, RI, D, rare, blocks, prog):
    """The integer dot kernel: every output exact (s32 wrap-around or saturating)."""
    from ..engine import gemm as eg

    ins = plan.ins
    Ai = to_values(Ab, ins.elem("a")).astype(np.int16)
    BTi = np.ascontiguousarray(to_values(Bb, ins.elem("b")).astype(np.int16).T)
    Ci = to_values(Cb, ins.elem("c")).astype(np.int64)
    Di = np.zeros(D.shape, np.int64)
    op = eg.INT_XOR if ins.bitop == "xor" else eg.INT_MUL
    for r0, r1 in blocks:
        eg.int_rows(Ai, BTi, Ci, Di, r0, r1, plan.tile[2], bool(ins.satfinite), op)
        prog(r1)
    D[:] = (Di & 0xFFFFFFFF).astype(np.uint64)
    rare[:] = False


def _run_f64(plan, g, Ab, Bb, Cb, RI, D, rare, blocks, prog):
    """The f64 chain (DMMA: every product and sum rounded as IEEE f64 fma)."""
    from ..engine import gemm as eg
    from ..engine.hostfpu import PROBE32, PROBE64

    Kp, Np = Bb.shape
    NP = Np // eg.PANEL
    Bf = np.ascontiguousarray(Bb.view(np.float64).reshape(Kp, NP, eg.PANEL).transpose(1, 0, 2))
    rare[:] = False
    for r0, r1 in blocks:
        eg.f64_rows(Ab.view(np.float64), Bf, Cb.view(np.float64), D.view(np.float64), r0, r1, rare, PROBE64, PROBE32)
        prog(r1)


_FAST = {"tc": _run_tc, "tc_sep": _run_tc, "int": _run_int, "f64": _run_f64}


# --- dask ---------------------------------------------------------------------------------------

def _aligned_chunks(chunks, mult, total):
    """Chunk sizes near the given ones, each a multiple of mult (the last takes the rest)."""
    size = max(mult, (int(np.median(chunks)) // mult) * mult)
    out = [size] * (total // size)
    if total % size:
        out.append(total % size)
    return tuple(out)


def _block(a, b, c, _dtypes=(None, None, None), **kw):
    a, b, c = (x if dt is None else x.view(dt) for x, dt in zip((a, b, c), _dtypes))
    return gemm(a, b, c, **kw)


def _view(block, dtype):
    return block.view(dtype)


def _as_bits(x):
    """(x as raw unsigned bits, its dtype) for ml_dtypes element types, else (x, None).

    dask.distributed moves chunks between workers with its own numpy serializer, which names a
    dtype by its ``dtype.str``: ``'<f1'`` for every ml_dtypes float8 type, which does not parse back.
    Raw bits travel; the task views them as the element type again."""
    if x is None or not x.dtype.type.__module__.startswith("ml_dtypes"):
        return x, None
    bits = np.dtype(f"u{x.dtype.itemsize}")
    return x.map_blocks(_view, bits, dtype=bits), x.dtype


def _gemm_dask(plan, A, B, C):
    import dask.array as da

    ins, kw = plan.ins, plan.options()
    A, B = da.asarray(A), da.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"dask inputs must be 2-D (M, K) and (K, N); got A {A.shape}, B {B.shape}")
    if kw["pad"]:
        raise ValueError("pad=True is not supported for dask arrays; pad the arrays first")
    M, K = A.shape
    K2, N = B.shape
    if K2 != K:
        raise ValueError(f"A is {M}x{K} but B is {K2}x{N}: inner dimensions differ")
    m, n, _ = plan.tile
    for name, size, mult in (("M", M, m), ("N", N, n)):
        _fit(name, size, mult, f"the tile's {name.lower()} of {ins.opcode}", False)
    rows = _aligned_chunks(A.chunks[0], m, M)
    cols = _aligned_chunks(B.chunks[1], n, N)
    (A, adt), (B, bdt) = _as_bits(A), _as_bits(B)      # rechunking moves chunks between workers
    A = A.rechunk((rows, -1))
    B = B.rechunk((-1, cols))
    dt = ins.elem("d").numpy_dtype
    if C is None:
        C = da.zeros((M, N), dtype=ins.elem("c").numpy_dtype, chunks=(rows, cols))
    else:
        C = da.asarray(C)
        if C.shape != (M, N):
            raise ValueError(f"C must have shape (M, N) = ({M}, {N}), got {C.shape}")
        C = C.rechunk((rows, cols))
    C, cdt = _as_bits(C)
    return da.blockwise(_block, "ij", A, "ik", B, "kj", C, "ij", dtype=dt, concatenate=True,
                        _dtypes=(adt, bdt, cdt), **kw)
