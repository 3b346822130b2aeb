"""One warp's ``mma`` called from jitted code: the compiled PTX kernels of :mod:`warpsim.ptx.native`.

No arithmetic of its own.  It calls the engine's kernels on a batch of one warp, as :func:`.kernel.runner`
does for a batch: the integer kernel (``int``), the float tensor-core kernel (``tc``), or the exact generic
kernel (``generic``: every other plan, and ``WARPSIM_GENERIC=1``); their builds cached on disk are the ones
called.  :func:`call_args` gives a plan's constant arguments as one tuple, which the compiled kernel takes as
an argument of each launch (the values depend on the launch's arch, the path does not for the forms the
translator takes; see :func:`path`).  The compiled kernel has checked the host FPU's state before it started.
The wrappers are inlined into their callers (numba re-optimises a linked callee in every caller); the float
tensor-core kernel itself is called by its symbol (:mod:`.linking`).

a, b, c, d: C-contiguous uint32 arrays (1, 32, words) of one warp's register words, as the runners take; S: the
path's working arrays (``scratch_<path>``), made once by the caller for all its calls.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import kernel as _k
from .hostfpu import PROBE32, PROBE64
from .jitcache import named_copy
from .linking import unlinked
from .tc import mma as _tcm

#: the float tensor-core kernel's warps and working arrays, built (and cached on disk) for these calls
_TC_WARPS = njit(cache=True, nogil=True, _nrt=False)(named_copy(_tcm.tc_warps.py_func, "tc_warps_one"))
_TC_SCRATCH = njit(cache=True, nogil=True)(named_copy(_tcm.tc_scratch.py_func, "tc_scratch_one"))


def _tc_one_dense(p, a, b, c, d, e, M, K, Ka, pa, pb, pc, pd, ri0, spt, q, scale, emin, rpb, rpa, need, SFA, SFB,
                  sta, srb, zexp, ea, eb, ec, ed, S):
    """tc_warps on warp 0 alone of a dense, unscaled form: LLVM folds these constants into the copy of tc_warps
    linked into this build (as it did into the copy linked into each caller before)."""
    _TC_WARPS(p, a, b, c, d, e, 0, 1, M, K, Ka, pa, pb, pc, pd, ri0, spt, False, False, q, scale, emin, rpb, rpa,
              need, SFA, SFB, False, sta, srb, zexp, ea, eb, ec, ed, S)


#: the compiled PTX kernels' float tensor-core kernel, called by its symbol (not linked into each: engine/linking.py)
_TC_ONE = njit(cache=True, nogil=True, _nrt=False)(named_copy(_tc_one_dense, "tc_one_dense"))
_TC_ONE_CALL = unlinked(_TC_ONE)


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
    p = path(pl)
    if p == "generic":
        return _generic_args(pl)
    if p == "int":
        return (pl.params, _k._NO_META, m, n, k, *pl.itab, ins.is_sparse, 1)
    from .tc.tables import _DTYPE

    ft = pl.ftab
    runs = tuple(np.empty(0, t) for t in ft["wide"])
    elems = tuple(np.empty(0, _DTYPE[x]) for x in ft["bits"])
    return (pl.params, _k._NO_META, m, k, ft["ka"], *ft["gpos"], ft["ri0"], ft["spt"], ins.is_sparse,
            ins.atype == "tf32", ft["q"], ft["scale"], ft["emin"], ft["rpb"], ft["rpa"], 1, PROBE64, PROBE32,
            _k._NO_SCALES, _k._NO_SCALES, False, ft["sta"], ft["srb"], ft["zexp"], *runs, *elems)


@njit(nogil=True, inline="always")
def mma_generic(G, S, a, b, c, d):
    """The exact generic kernel (``kernel._serial``) on one warp (S: scratch_generic)."""
    (kind, params, e, P, M, N, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd, sp, sparse,
     tf32meta, chunk, SFA, SFB, scaled) = G
    _k._serial(kind, params, a, b, c, e, d, P, M, N, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd,
               sd, bd, sp, sparse, tf32meta, chunk, SFA, SFB, scaled)


@njit(nogil=True, inline="always")
def mma_int(I, S, a, b, c, d):
    """The integer kernel (``kernel._int_serial``) on one warp (S: scratch_int)."""
    params, e, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk = I
    _k._int_serial(params, a, b, c, e, d, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk)


@njit(nogil=True, inline="always")
def scratch_int(I, a, b, c, d):
    """mma_int's working arrays (none: the integer kernel keeps its own)."""
    return ()


@njit(nogil=True, inline="always")
def scratch_generic(G, a, b, c, d):
    """mma_generic's working arrays (none)."""
    return ()


@njit(nogil=True, inline="always")
def scratch_tc(T, a, b, c, d):
    """mma_tc's working arrays for warps of the shape of a .. d (made once, reused by every call): a flag, a .. d
    as runs (what mma_tc_own takes: views made once, as numba makes a view of a reshape in a C helper, a quarter
    of a call), and the kernel's own; T's M, K, Ka (items 2-4) and run types va .. vd (items 27-30), as
    call_args lays them out."""
    runs = (_words(a, T[27]), _words(b, T[28]), _words(c, T[29]), _words(d, T[30]))
    return (np.zeros(1, np.int8), runs) + _TC_SCRATCH(T[2], T[3], T[4], *runs)


@njit(nogil=True, inline="always")
def _words(x, v):
    """(1, 32, words) register words as one warp's row of runs of v's type."""
    y = x.view(v.dtype)
    return y.reshape(1, y.shape[1] * y.shape[2])


def _tc(own):
    """The float tensor-core kernel (``tc.mma.tc_warps``) on one warp, on the working arrays S (scratch_tc); with
    ``own``, on the very arrays a .. d that S was made for (their runs come from S).  It leaves a warp to the
    exact kernel only for tf32 sparse metadata that splices B halves, block-scaled warps or a host FPU off its
    default state: never for the dense, unscaled forms taken here on a checked FPU (the compiled kernel checks
    the FPU before it starts; the kernel itself is its dense one-warp build, called by symbol).  One body, not a
    shared callee: numba leaves a third level of inlined callees a call, a quarter of an mma's time with its
    exploded arguments."""
    @njit(nogil=True, inline="always")
    def mma(T, S, a, b, c, d):
        (p, e, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta, q, scale, emin, rpb, rpa, chunk, q64, q32, SFA,
         SFB, scaled, sta, srb, zexp, va, vb, vc, vd, ea, eb, ec, ed) = T
        if own:
            ra, rb, rc, rd = S[1]
        else:
            ra, rb, rc, rd = _words(a, va), _words(b, vb), _words(c, vc), _words(d, vd)
        if sparse or scaled:
            raise RuntimeError("warpsim: a sparse or block-scaled plan on the dense one-warp tensor-core call")
        need = S[0]
        _TC_ONE_CALL((p, ra, rb, rc, rd, e, M, K, Ka, pa, pb, pc, pd, ri0, spt, q, scale, emin, rpb, rpa, need, SFA,
                      SFB, sta, srb, zexp, ea, eb, ec, ed, S[2:]))
        if need[0] == 2:
            raise RuntimeError("warpsim: the tensor-core kernel left a dense warp to the exact kernel")
    return mma


mma_tc, mma_tc_own = _tc(False), _tc(True)


#: mma_<path> for callers that pass the arrays their working arrays were made for (``<path>_own`` where a path
#: has one)
OWN = {"int": mma_int, "tc": mma_tc_own, "generic": mma_generic}
