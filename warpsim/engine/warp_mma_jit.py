"""One warp's ``mma`` called from jitted code: the compiled PTX kernels of :mod:`warpsim.ptx.native`.

No arithmetic of its own.  It calls the engine's kernels on a batch of one warp, as :func:`.kernel.runner`
does for a batch: the integer kernel (``int``), the float tensor-core kernel with the exact generic kernel
for a warp it leaves (``tc``), or the exact generic kernel alone (``generic``: every other plan, and
``WARPSIM_GENERIC=1``).  :func:`call_args` gives a plan's constant arguments as one tuple, which the
compiled kernel takes as an argument of each launch (the values depend on the launch's arch, the path does
not for the forms the translator takes; see :func:`path`).  The compiled kernel has checked the host FPU's
state before it started (the tensor-core kernel's own per-chunk check is therefore not repeated here).

a, b, c, d: C-contiguous uint32 arrays (1, 32, words) of one warp's register words, as the runners take.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import kernel as _k
from .tc.mma import _tc_chunk

#: the jitted paths, by name (what the translator's generated code calls)
PATHS = ("int", "tc", "generic")


def path(pl) -> str:
    """The path ``kernel.runner`` takes for a plan (the host-FPU chain fast path of chain plans computes
    the generic kernel's words: its warps take the generic kernel here)."""
    if _k.FORCE_GENERIC:
        return "generic"
    if pl.itab is not None:
        return "int"
    if pl.ftab is not None:
        return "tc"
    return "generic"


def _generic_args(pl):
    ins = pl.ins
    m, n, k = ins.mnk
    tabs = [x for t in pl.tables for x in t]
    return (pl.kind, pl.params, _k._NO_META, ins.products, m, n, k, k // 2 if ins.is_sparse else k, *tabs,
            pl.sparse_tab, ins.is_sparse, ins.atype == "tf32", 1, _k._NO_SCALES, _k._NO_SCALES, False)


def call_args(pl) -> tuple:
    """The constant arguments of ``mma_<path(pl)>`` for a dense, unscaled plan."""
    ins = pl.ins
    m, n, k = ins.mnk
    gen = _generic_args(pl)
    p = path(pl)
    if p == "generic":
        return gen
    if p == "int":
        return (pl.params, _k._NO_META, m, n, k, *pl.itab, ins.is_sparse)
    from .tc.tables import _DTYPE

    ft = pl.ftab
    runs = tuple(np.empty(0, t) for t in ft["wide"])
    elems = tuple(np.empty(0, _DTYPE[x]) for x in ft["bits"])
    tc = (pl.params, _k._NO_META, m, k, ft["ka"], *ft["gpos"], ft["ri0"], ft["spt"], ins.is_sparse,
          ins.atype == "tf32", ft["q"], ft["scale"], ft["emin"], ft["rpb"], ft["rpa"], _k._NO_SCALES,
          _k._NO_SCALES, False, ft["sta"], ft["srb"], ft["zexp"], *runs, *elems)
    return tc, gen


@njit(nogil=True)
def mma_generic(G, a, b, c, d):
    """The exact generic kernel (``kernel._serial``) on one warp."""
    (kind, params, e, P, M, N, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd, sp, sparse,
     tf32meta, chunk, SFA, SFB, scaled) = G
    _k._serial(kind, params, a, b, c, e, d, P, M, N, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd,
               sd, bd, sp, sparse, tf32meta, chunk, SFA, SFB, scaled)


@njit(nogil=True)
def mma_int(I, a, b, c, d):
    """The integer kernel (``kernel._int_serial``) on one warp."""
    params, e, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse = I
    _k._int_serial(params, a, b, c, e, d, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, 1)


@njit(nogil=True)
def mma_tc(TG, a, b, c, d):
    """The float tensor-core kernel (``tc.mma._tc_chunk``) on one warp; the exact generic kernel when it
    leaves the warp (need 2)."""
    T, G = TG
    (p, e, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta, q, scale, emin, rpb, rpa, SFA, SFB, scaled, sta,
     srb, zexp, va, vb, vc, vd, ea, eb, ec, ed) = T
    need = np.zeros(1, np.int8)
    a2 = a.reshape(1, a.shape[1] * a.shape[2]).view(va.dtype)
    b2 = b.reshape(1, b.shape[1] * b.shape[2]).view(vb.dtype)
    c2 = c.reshape(1, c.shape[1] * c.shape[2]).view(vc.dtype)
    d2 = d.reshape(1, d.shape[1] * d.shape[2]).view(vd.dtype)
    _tc_chunk(p, a2, b2, c2, d2, e, 0, 1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta, q, scale, emin, rpb,
              rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed)
    if need[0] == 2:
        mma_generic(G, a, b, c, d)
