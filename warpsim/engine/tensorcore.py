"""The dedicated kernel of the float tensor-core recipes (f16, bf16, tf32, fp8; dense and sparse).

It computes the recipe of :func:`warpsim.numerics.fused.tc_dot`
in float64 where float64 is provably exact (see the notes in ``warpsim.numerics.fused``) -- but reads the register
words in place and decodes without per-element shifts:

* every operand is viewed as an array of its elements (uint8 for fp8, uint16 for f16 / bf16,
  uint32 for tf32 / f32; element j of a lane at index ``lane * elements + j`` on a little-endian
  host) and gathered, in runs of elements that stay together (f16 pairs, fp8 quadruples), straight
  into the order the dot core reads (A by row in block order, B row-major, C / D row-major);
* elements decode in one vector pass (LLVM IR, 8 a step): the magnitude bits placed in an f32 word,
  widened and scaled by a power of two; NaN / inf elements become the float64 NaN / inf of their
  sign; the alignment exponents ``max(floor(log2 |v|), emin)`` (a far-negative value for zeros and
  specials) as float32;
* the dot core runs four rows side by side, each with split partial maxima and sums (the truncated
  terms are integers below 2^53: any order gives the same sum), and sums in int64 when no element is
  NaN or inf; the two-block (fp8) recipes sum the products unscaled where no term has a bit below the
  cut (dot._lsb_floor: then there is nothing to truncate); sparse A reads B through one row index per
  term (no gathered copy of B);
* results round in vector form (f32 with ties to even: the host's double -> float conversion; f32
  with truncation: that conversion stepped one unit toward zero where it rounded away).

NaN / inf elements are decided per output element.  Warps with tf32 sparse metadata that splices B
halves, or on a host FPU not in its default state (checked per chunk), are flagged; the engine
recomputes the flagged warps with the generic exact kernel.

The kernels live in :mod:`warpsim.engine.tc` (one module a responsibility); this module is their
entry point: the runners the engine calls, ``STATS``, and the names other modules import.
"""

from __future__ import annotations

import sys

import numba
import numpy as np
from numba import njit

from ..numerics import fused as ar
from ..numerics.fused import CMODE_FUSED, P_C, P_CMODE, P_NBLK, P_OP, P_RND, RND_RNE, P_ACC, tc_fast_ok
from .hostfpu import PROBE32 as _PROBE32, PROBE64 as _PROBE64
from .jitcache import named_copy
from .tc.chain import make_chain
from .tc.dot import _round8_common, _row8
from .tc.groups import _group_kernel, _nibble_positions
from .tc.ir import _packed_int64_conversions
from .tc.mma import _tc_kernel
from .tc.tables import (_DTYPE, _ZEXP, _as_checked, _decode_params, _emin, _fmt, group_tables, round_params, tc_tables,
                        truncated_acc)
from .tc.wgmma import _wg_kernel, _wg_words_kernel

#: the names other modules import from here
__all__ = ["STATS", "group_runner", "group_tables", "make_chain", "round_params", "tc_runner", "tc_tables",
           "truncated_acc", "wgmma_runner", "wgmma_words_runner", "_ZEXP", "_as_checked", "_packed_int64_conversions",
           "_round8_common", "_row8"]


def _serial_and_parallel(kernel, name):
    """The two builds of a kernel, each with its own cache name (jitcache.named_copy)."""
    return (njit(cache=True, nogil=True)(named_copy(kernel, f"{name}_serial")),
            njit(cache=True, nogil=True, parallel=True)(named_copy(kernel, f"{name}_parallel")))


_KERNELS = None
_WG_KERNEL = None
_WG_WORDS_KERNEL = None
_GROUP_KERNELS = None
_NO_SCALES = np.zeros((1, 1, 1), np.uint64)

#: set to a dict to count, per call, the warps by how the kernel took them: "ordinary" (every element
#: finite), "special" (some element NaN or inf, outputs decided per element) and "exact" (left to the
#: exact kernel).  A debugging aid for tests; None (the default) costs nothing.
STATS = None
_STAT_NAMES = ("ordinary", "special", "exact")


def _count(need, names=_STAT_NAMES):
    """Add a call's warps (or groups) to STATS when it counts: need code i is names[i]."""
    if STATS is not None:
        for name, x in zip(names, np.bincount(need, minlength=len(names))):
            STATS[name] = STATS.get(name, 0) + int(x)


def tc_kernels():
    """The serial and parallel builds of the warp-level tensor-core kernel (``tc.mma._tc_kernel``)."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _serial_and_parallel(_tc_kernel, "_tc_kernel")
    return _KERNELS


def tc_runner(ins, params, ft, chunk: int, threshold: int):
    """A function (a, b, c, e, d) -> the indices of the warps left to the exact kernel (None: none),
    computing D for all the others.  a, b, c, d: C-contiguous uint32 (W, 32, words); e: (W, 32)
    metadata words or a dummy.  Everything that does not depend on the call is bound once."""
    ser, par = tc_kernels()
    m, n, k = ins.mnk
    ta, tb, tc, td = ft["wide"]
    consts = (params, m, k, ft["ka"], *ft["gpos"], ft["ri0"], ft["spt"], ins.is_sparse, ins.atype == "tf32",
              ft["q"], ft["scale"], ft["emin"], ft["rpb"], ft["rpa"])
    tail = (ins.block_scaled, ft["sta"], ft["srb"], ft["zexp"],
            *(np.empty(0, _DTYPE[x]) for x in ft["bits"]))

    def go(a, b, c, e, d, scales=None):
        W = a.shape[0]
        need = np.empty(W, np.int8)
        fn = par if W >= threshold else ser
        sfa, sfb = scales if scales is not None else (_NO_SCALES, _NO_SCALES)
        # a few chunks a thread at least (each allocates its scratch once): no fixed cost per 64 warps
        ch = chunk if W <= 4 * chunk else max(chunk, W // (4 * numba.get_num_threads()))
        nslow = fn(a.view(ta), b.view(tb), c.view(tc), d.view(td), e, need, *consts, ch, _PROBE64, _PROBE32,
                   sfa, sfb, *tail)
        _count(need)
        return np.flatnonzero(need == 2) if nslow else None

    return go


def _wg_params(p):
    """A wgmma recipe's decode parameters (q, scale, emin of A, B, C) and D's round_params."""
    fa, fb, fc = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C)
    dp = [_decode_params(f) for f in (fa, fb, fc)]
    return (np.array([x[0] for x in dp], np.int64), np.array([x[1] for x in dp], np.float64),
            np.array([_emin(fa), _emin(fb), _emin(fc)], np.float32), round_params(_fmt(p, P_ACC), p[P_RND] == RND_RNE))


def wgmma_runner(ins, params):
    """A function (A, B, C, out) -> indices of the groups left to the exact kernel (None: none), for a
    dense wgmma whose recipe is one fused pass this kernel computes exactly; None when it is not one."""
    global _WG_KERNEL
    p = np.asarray(params, dtype=np.int64)
    m, n, k = ins.mnk
    if (sys.byteorder != "little" or ins.is_sparse or n % 8 or p[P_NBLK] != 1 or p[P_CMODE] != CMODE_FUSED
            or p[P_OP] != 0 or not tc_fast_ok(_as_checked(p), 8, k)):
        return None
    if any(_fmt(p, f)[0] > 32 for f in (ar.P_A, ar.P_B, P_C)):
        return None
    q, scale, emin, rp = _wg_params(p)
    if _WG_KERNEL is None:
        _WG_KERNEL = njit(cache=True, nogil=True, parallel=True)(named_copy(_wg_kernel, "_wg_kernel_parallel"))
    fn = _WG_KERNEL

    def go(A, B, C, out):
        need = np.empty(A.shape[0], np.int8)
        fn(A, B, C, out, p, q, scale, emin, rp, need, _PROBE64, _PROBE32)
        _count(need, ("ordinary", "exact"))
        return np.flatnonzero(need) if need.any() else None

    return go


def wgmma_words_runner(ins, params, flat, bits):
    """Like wgmma_runner, on D's register words: a function (A, B, CW, sd, OW) -> indices of the groups
    left to the exact kernel (None: none); None where it does not apply."""
    global _WG_WORDS_KERNEL
    if wgmma_runner(ins, params) is None or bits not in (8, 16, 32) or ins.k % 2:
        return None
    p = np.asarray(params, dtype=np.int64)
    q, scale, emin, rp = _wg_params(p)
    per = 32 // bits
    j = np.arange(flat.shape[1])
    cword = np.ascontiguousarray(j // per, dtype=np.int64)
    cshift = np.ascontiguousarray((j % per) * bits, dtype=np.uint32)
    row, col = np.divmod(np.asarray(flat, dtype=np.int64), ins.n)
    flat = np.ascontiguousarray((col >> 3) * (ins.m * 8) + row * 8 + (col & 7), dtype=np.int64)
    if _WG_WORDS_KERNEL is None:
        _WG_WORDS_KERNEL = njit(cache=True, nogil=True, parallel=True)(
            named_copy(_wg_words_kernel, "_wg_words_kernel_parallel"))
    fn = _WG_WORDS_KERNEL

    def go(A, B, CW, sd, OW):
        need = np.empty(A.shape[0], np.int8)
        G = A.shape[0]
        nch = max(1, min(G, 4 * numba.get_num_threads()))
        fn(A, B, CW, sd, flat, cword, cshift, bits, OW, p, q, scale, emin, rp, need, _PROBE64, _PROBE32, nch)
        _count(need, ("ordinary", "exact"))
        return np.flatnonzero(need) if need.any() else None

    return go


def group_runner(ins, ft, tables, sp, chunk: int, threshold: int):
    """A function (a, b, c, e, d, (SFA, SFB)) -> indices of the warps left to the exact kernel (None:
    none), for a block-scaled group recipe (group_tables)."""
    global _GROUP_KERNELS
    if _GROUP_KERNELS is None:
        _GROUP_KERNELS = _serial_and_parallel(_group_kernel, "_group_kernel")
    ser, par = _GROUP_KERNELS
    m, n, k = ins.mnk
    (fa, wa, sa, ba), (fb, wb, sb, bb), (fc, wc, _, _), (fd, wd, _, _) = tables
    consts = (m, k, ft["ka"], fa, wa, sa.astype(np.uint32), ba, fb, wb, sb.astype(np.uint32), bb, fc, wc, fd, wd,
              np.ascontiguousarray(sp), ins.is_sparse, ft["G"], ft["st"], float(ft["frac"]),
              round_params((32, 8, 23, 0, 1), ft["rne"]),
              ft["lut_a"], ft["lut_b"], ft["snan"], ft["sexp"], ft["sval"], ft["zon"], ft["zexp"], chunk,
              _PROBE64, _PROBE32, *_nibble_positions(fa, wa, sa, ba, fb, wb, sb, bb, k))

    def go(a, b, c, e, d, scales):
        W = a.shape[0]
        need = np.empty(W, np.int8)
        fn = par if W >= threshold else ser
        fn(a, b, c, e, d, scales[0], scales[1], need, *consts)
        _count(need)
        return np.flatnonzero(need == 2) if (need == 2).any() else None

    return go
