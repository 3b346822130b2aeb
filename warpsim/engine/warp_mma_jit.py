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
from numba.extending import overload

from . import kernel as _k
from .hostfpu import PROBE32, PROBE64
from .jitcache import named_copy
from .linking import unlinked
from .tc import mma as _tcm
from .tc.mma import _gather

#: the float tensor-core kernel's working arrays, built (and cached on disk) for these calls
_TC_SCRATCH = njit(cache=True, nogil=True)(named_copy(_tcm.tc_scratch.py_func, "tc_scratch_one"))


def _tc_one_matrix(p, M, K, Ka, ri0, q, scale, emin, rpb, rpa, zexp, ea, eb, ec, ed, S):
    """tc_warp on one warp of a dense, unscaled form, its elements already gathered into S (tc_scratch) by the
    caller; returns tc_warp's code.  LLVM folds these constants into this build, and no argument of the sparse
    or block-scaled forms is passed (each array argument is several words on the stack of every call)."""
    return _tcm.tc_warp(p, None, 0, M, K, Ka, ri0, None, False, False, q, scale, emin, rpb, rpa, None, None, False,
                        None, None, zexp, ea, eb, ec, ed, S)


def _tc_one_sparse(p, M, K, Ka, ri0, spt, e, q, scale, emin, rpb, rpa, zexp, ea, eb, ec, ed, S):
    """_tc_one_matrix for a sparse (mma.sp), unscaled form: e, the warp's (1, 32) metadata words."""
    return _tcm.tc_warp(p, e, 0, M, K, Ka, ri0, spt, True, False, q, scale, emin, rpb, rpa, None, None, False,
                        None, None, zexp, ea, eb, ec, ed, S)


#: the compiled PTX kernels' float tensor-core kernels, called by their symbols (not linked into each:
#: engine/linking.py)
_TC_ONE = njit(cache=True, nogil=True, _nrt=False)(named_copy(_tc_one_matrix, "tc_one_matrix"))
_TC_ONE_CALL = unlinked(_TC_ONE)
_TC_SPARSE = njit(cache=True, nogil=True, _nrt=False)(named_copy(_tc_one_sparse, "tc_one_sparse"))
_TC_SPARSE_CALL = unlinked(_TC_SPARSE)


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


#: the items of the float tensor-core path's arguments (call_args) a caller that gathers the registers itself takes
TC_REGISTER_ITEMS = 28


def call_args(pl, generic=False) -> tuple:
    """The constant arguments of ``mma_<path(pl)>`` for an unscaled plan (dense; or sparse on the float tensor-core
    path, for mma_tc_gathered).  The float tensor-core path's (``T``): p, M, K, Ka, ri0, q, scale, emin, rpb,
    rpa, zexp, the element types ea .. ed, the run types va .. vd, the units' places wpa .. wpd and types ua .. ud
    (_register_units), the sparse metadata's table spt -- what mma_tc_gathered and tc_register_units take,
    the first TC_REGISTER_ITEMS, each a word or more on the stack of every call that passes them -- then the runs'
    places pa .. pd (mma_tc, dense).  ``generic``: the exact generic kernel's, whatever the plan's path."""
    ins = pl.ins
    m, n, k = ins.mnk
    p = "generic" if generic else path(pl)
    if p == "generic":
        return _generic_args(pl)
    if p == "int":
        return (pl.params, _k._NO_META, m, n, k, *pl.itab, ins.is_sparse, 1)
    from .tc.tables import _DTYPE

    if ins.block_scaled or (ins.is_sparse and ins.atype == "tf32"):
        raise ValueError(f"{ins.opcode}: the one-warp tensor-core call takes unscaled forms, sparse ones but tf32")
    ft = pl.ftab
    runs = tuple(np.empty(0, t) for t in ft["wide"])
    elems = tuple(np.empty(0, _DTYPE[x]) for x in ft["bits"])
    units = tuple(_register_units(g, t) for g, t in zip(ft["gpos"], ft["wide"]))
    return (pl.params, m, k, ft["ka"], ft["ri0"], ft["q"], ft["scale"], ft["emin"], ft["rpb"], ft["rpa"], ft["zexp"],
            *elems, *runs, *(u[0] for u in units), *(u[1] for u in units), ft["spt"], *ft["gpos"])


def _register_units(gpos, run):
    """(places, unit): where each unit of an operand's register words goes among its elements in matrix order, for
    :func:`units_in` / :func:`units_out`.  A unit is a run of elements (gpos: the runs' places) no wider than a
    word, or a word of a wider run; the words are taken lane by lane, each lane's words in order, a word's units
    from its low bits up.  unit: an empty array of the units' type."""
    rbits = run.itemsize * 8
    g = min(rbits, 32)
    per_run = rbits // g
    u = np.arange(gpos.size * per_run, dtype=np.int64)
    return (np.ascontiguousarray(gpos.astype(np.int64)[u // per_run] * per_run + u % per_run, dtype=np.uint32),
            np.empty(0, _UNIT[g]))


_UNIT = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def units_in(U, places, R, base, regs):
    """U[places[...]] = the units of the warp's registers ``regs`` (rows of the 32-bit register file R, C-contiguous,
    threads base .. base + 31; a word's k-th unit its k-th lowest bits, as the GPU packs them); U: the elements in
    matrix order viewed as units (_register_units)."""


def units_out(U, places, R, base, regs):
    """The inverse of :func:`units_in`: the warp's registers ``regs`` from the units U[places[...]]."""


def _units(U, into):
    """units_in (``into`` U) or units_out for U's unit type; ``per``, the units a word, their width and ``into`` are
    constants of the build (the loop over a word's units unrolls, the other direction is pruned).  A word's k-th unit
    is its bits ``width * k`` up, shifted out of (or into) the 32-bit word itself: a view of the register file as
    units was a call and a reference count each time."""
    width = U.dtype.bitwidth
    per, mask = 32 // width, (1 << width) - 1
    unit = U.dtype

    def impl(U, places, R, base, regs):
        n = len(regs)
        for l in range(32):
            for i in range(n):
                x = np.uint64(per * (l * n + i))
                r, t = np.uint64(regs[i]), np.uint64(base + l)
                if into:
                    w = R[r, t]
                    for k in range(per):
                        U[places[x + np.uint64(k)]] = unit((w >> np.uint32(width * k)) & np.uint32(mask))
                else:
                    w = np.uint32(0)
                    for k in range(per):
                        w |= np.uint32(U[places[x + np.uint64(k)]]) << np.uint32(width * k)
                    R[r, t] = w
    # a name per direction: numba names a build by its qualified name and argument types, which the two share, and
    # a kernel linking two same-named builds keeps one of them (engine/jitcache.py's _process_unique_ids)
    impl.__name__ = impl.__qualname__ = f"units_{'in' if into else 'out'}_impl"
    return impl


# (cached on disk, keyed by the closure's constants: numba otherwise builds them, and the view, in every process --
# ~0.6 s of each process's first compile of a kernel with mma.sync)
overload(units_in, jit_options={"cache": True})(lambda U, places, R, base, regs: _units(U, True))
overload(units_out, jit_options={"cache": True})(lambda U, places, R, base, regs: _units(U, False))


@njit(nogil=True, inline="always")
def _generic_on(G, a, b, c, d, e, SFA, SFB, scaled):
    """The exact generic kernel (``kernel._serial``) on one warp, with these metadata words and scale bits."""
    (kind, params, _, P, M, N, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd, sp, sparse,
     tf32meta, chunk, _sfa, _sfb, _scaled) = G
    _k._serial(kind, params, a, b, c, e, d, P, M, N, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd,
               sd, bd, sp, sparse, tf32meta, chunk, SFA, SFB, scaled)


@njit(nogil=True, inline="always")
def mma_generic(G, S, a, b, c, d):
    """The exact generic kernel on one warp (S: scratch_generic)."""
    _generic_on(G, a, b, c, d, G[2], G[28], G[29], G[30])


@njit(nogil=True, inline="always")
def mma_generic_sparse(G, S, a, b, c, d):
    """mma_generic of a sparse form (mma.sp): the warp's (1, 32) metadata words in S[0] (scratch_generic_sparse; the
    plan's own is a placeholder), which the caller has filled."""
    _generic_on(G, a, b, c, d, S[0], G[28], G[29], G[30])


@njit(nogil=True, inline="always")
def mma_generic_scaled(G, S, a, b, c, d):
    """mma_generic of a block-scaled form: S (scratch_generic_scaled) holds the warp's metadata words (a sparse form's;
    unused by a dense one) and its rows' and columns' scale bits ((1, M, nscale), (1, N, nscale)), which the caller
    has filled (kernel.scale_factors' gather)."""
    _generic_on(G, a, b, c, d, S[0], S[1], S[2], True)


@njit(nogil=True, inline="always")
def mma_int(I, S, a, b, c, d):
    """The integer kernel (``kernel._int_serial``) on one warp (S: scratch_int)."""
    params, e, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk = I
    _k._int_serial(params, a, b, c, e, d, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk)


@njit(nogil=True, inline="always")
def mma_int_sparse(I, S, a, b, c, d):
    """mma_int of a sparse form (mma.sp): the warp's (1, 32) metadata words in S[0] (scratch_int_sparse; the plan's
    own is a placeholder), which the caller has filled."""
    params, _, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk = I
    _k._int_serial(params, a, b, c, S[0], d, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk)


@njit(nogil=True, inline="always")
def scratch_int_sparse(I, a, b, c, d):
    """mma_int_sparse's (and mma_generic_sparse's) working arrays: the warp's metadata words."""
    return (np.empty((1, 32), np.uint32),)


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
    """mma_tc's working arrays for warps of the shape of a .. d (made once, reused by every call): the kernel's own
    (tc_scratch: S[5], S[6], S[7] the A, B, C elements in matrix order, S[3] D's); T's M, K, Ka (items 1-3) and run
    types va .. vd (items 15-18), as call_args lays them out."""
    return _TC_SCRATCH(T[1], T[2], T[3], _words(a, T[15]), _words(b, T[16]), _words(c, T[17]), _words(d, T[18]))


@njit(nogil=True, inline="always")
def _words(x, v):
    """(1, 32, words) register words as one warp's row of runs of v's type."""
    y = x.view(v.dtype)
    return y.reshape(1, y.shape[1] * y.shape[2])


@njit(nogil=True, inline="always")
def mma_tc(T, S, a, b, c, d):
    """The float tensor-core kernel (``tc.mma.tc_warp``) on one warp's register words a .. d, on the working arrays
    S (scratch_tc).  It leaves a warp to the exact kernel only for tf32 sparse metadata that splices B halves,
    block-scaled warps or a host FPU off its default state: never for the dense, unscaled forms taken here on a
    checked FPU (the compiled kernel checks the FPU before it starts; the kernel itself is its dense one-warp
    build, called by symbol)."""
    va, vb, vc, vd, pa, pb, pc, pd = T[15], T[16], T[17], T[18], T[28], T[29], T[30], T[31]
    _gather(S[5], _words(a, va)[0], pa)
    _gather(S[6], _words(b, vb)[0], pb)
    _gather(S[7], _words(c, vc)[0], pc)
    mma_tc_gathered(T, S, None)
    rd, DBw = _words(d, vd), S[3]
    for t in range(pd.shape[0]):
        rd[0, t] = DBw[pd[t]]


@njit(nogil=True, inline="always")
def mma_tc_gathered(T, S, e):
    """The float tensor-core kernel on the one warp whose A, B and C elements are in S's matrix-order arrays
    (scratch_tc); D's words in matrix order to S[3].  e: None (a dense form), or a sparse form's (1, 32) metadata
    words (mma.sp, not tf32; numba keeps the one call e's type takes).  For callers that gather the elements
    themselves: straight from a compiled kernel's registers (:func:`tc_register_units`, :func:`units_in`).  One
    body, not a shared callee: numba leaves a third level of inlined callees a call, a quarter of an mma's time
    with its exploded arguments."""
    p, M, K, Ka, ri0, q, scale, emin, rpb, rpa, zexp, ea, eb, ec, ed = T[:15]
    if e is None:
        code = _TC_ONE_CALL(p, M, K, Ka, ri0, q, scale, emin, rpb, rpa, zexp, ea, eb, ec, ed, S)
    else:
        code = _TC_SPARSE_CALL(p, M, K, Ka, ri0, T[27], e, q, scale, emin, rpb, rpa, zexp, ea, eb, ec, ed, S)
    if code == 2:
        raise RuntimeError("warpsim: the tensor-core kernel left a warp to the exact kernel")


@njit(nogil=True, inline="always")
def tc_register_units(T, S):
    """A, B, C and D's elements in matrix order viewed as units: what :func:`units_in` and :func:`units_out` take
    around :func:`mma_tc_gathered`, with the units' places T[19] .. T[22] (T: call_args, S: scratch_tc)."""
    return S[5].view(T[23].dtype), S[6].view(T[24].dtype), S[7].view(T[25].dtype), S[3].view(T[26].dtype)


#: mma_<path> for callers that pass the arrays their working arrays were made for (the float tensor-core path's
#: callers gather their registers themselves: mma_tc_gathered)
OWN = {"int": mma_int, "generic": mma_generic, "int_sparse": mma_int_sparse, "generic_sparse": mma_generic_sparse,
       "generic_scaled": mma_generic_scaled}
