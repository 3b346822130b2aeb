"""The compiled engine's synchronisation: named barriers, mbarriers, the cluster barrier, setmaxnreg's
register budget, and the end of a scheduling round (jitted; never fastmath).

A compiled kernel runs the CTAs of one cluster together (one CTA when the launch has no clusters): warp w
belongs to CTA rank ``w // W``.  Each warp runs until it finishes (state 2), waits at a barrier (state 1;
the warp whose arrival completes it yields, state 4, so that the released warps go on in warp order)
or parks (state 3: a ``try_wait`` whose phase is not complete, ``barrier.cluster.wait`` before the
cluster arrived, a ``setmaxnreg.inc`` the register file cannot grant yet -- :data:`PARKED`); a parked
warp re-runs its statement when woken.  When no warp can run, :func:`round_end` releases and wakes
what it can, or reports a deadlock.  The semantics are the interpreter's (``simt.run``,
``warpsim.ptx.mbarrier``, ``cluster.py``): a barrier completes when its thread count (or every thread of
the CTA still running) has arrived, an mbarrier phase when its pending arrivals and tx-count are both zero.

mbarriers live in a table of their own (``MBO`` their shared offsets per CTA, ``MBS`` their state), not in
the shared-memory word: the interpreter keeps them apart too (kernels never read the word).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...engine.linking import unlinked
from ..memory import SHARED_WINDOW
from .rt import BAD_ADDRESS, DIVERGED_BARRIER, MISALIGNED, SYNC_ERROR, fail, settle

_WINDOW_BASE = np.int64(SHARED_WINDOW)

#: what each status[4] of a SYNC_ERROR means (status[3]: the shared offset, count or register count it names)
SYNC_ERRORS = {
    1: "the mbarrier address 0x{v:x} is not 8-byte aligned",
    2: "the mbarrier at shared offset 0x{v:x} is not initialised (mbarrier.init first, or it was invalidated)",
    3: "more than 64 mbarriers in one CTA (shared offset 0x{v:x}): the compiled engine's limit",
    4: "the mbarrier at 0x{v:x} lies outside the CTA's shared memory",
    5: "an mbarrier count of {v} is out of range (1 .. 2^20 - 1)",
    6: "mbarrier.arrive with a count of {v}, more than the arrivals pending in the phase",
    7: "an mbarrier's tx-count leaves [-(2^20 - 1), 2^20 - 1] (by {v} bytes)",
    8: "mbarrier.arrive.noComplete would complete the phase (count {v})",
    9: "a shared::cluster address 0x{v:x} names a CTA rank the cluster does not have",
    10: "a generic address 0x{v:x} outside the shared window names an mbarrier",
    11: "barrier.cluster.arrive twice without a wait in between",
    12: "barrier.cluster.wait without a preceding barrier.cluster.arrive",
    13: "bar / barrier thread count {v}: it must be a non-zero multiple of 32 and at most the CTA's threads",
    14: "barrier number {v} is out of range 0 .. 15",
    15: "setmaxnreg.inc to {v} registers lowers the warpgroup's count",
    16: "setmaxnreg.dec to {v} registers raises the warpgroup's count",
    17: "setmaxnreg.dec leaves the CTA holding more than the SM's 65536 registers ({v})",
    18: "a shared::cta address 0x{v:x} names another CTA of the cluster",
    19: "mapa to CTA rank {v}, which the cluster does not have",
}
#: why a warp in state 3 is parked (PARK[w])
PARK_NONE, PARK_MBARRIER, PARK_CLUSTER, PARK_REGISTERS = range(4)
#: the state of a warp that completed a barrier: it runs again from the next round (round_end)
YIELDED = 4
#: mbarriers per CTA; the fields of MBS[cta, slot]
MAX_MBARRIERS = 64
MB_VALID, MB_EXPECTED, MB_PENDING, MB_TX, MB_PHASE = range(5)
MAX_COUNT = (1 << 20) - 1
REGISTERS_PER_SM = 65536
#: address spaces of an mbarrier operand
SPACE_CTA, SPACE_CLUSTER, SPACE_GENERIC = range(3)
RANK_SHIFT = 24
_OFF_MASK = (1 << RANK_SHIFT) - 1


@njit(cache=True, nogil=True)
def sync_state(CS, W):
    """The synchronisation state of a run of clusters of CS CTAs of W warps: WBAR (the barrier each warp
    waits at), BARC / BARN (threads arrived and threads demanded per CTA and barrier key; 0: all),
    PARK / PSLOT / PPH (why a warp is parked, on which mbarrier slot, the phase or version it saw), MBO /
    MBS (mbarrier offsets and state), CLA (the cluster-barrier phase each warp arrived in, -1: none),
    CLS (cluster arrivals, phase), NREG (registers per thread of each CTA's warpgroups; 0: the initial),
    NRV (a version bumped by every setmaxnreg)."""
    WS = CS * W
    return (np.full(WS, -1, np.int64), np.zeros(CS * KEYS_PER_CTA, np.int64), np.zeros(CS * KEYS_PER_CTA, np.int64),
            np.zeros(WS, np.int64), np.zeros(WS, np.int64), np.zeros(WS, np.int64),
            np.full((CS, MAX_MBARRIERS), -1, np.int64), np.zeros((CS, MAX_MBARRIERS, 5), np.int64),
            np.full(WS, -1, np.int64), np.zeros(2, np.int64), np.zeros((CS, 16), np.int64), np.zeros(1, np.int64))


@njit(cache=True, nogil=True, _nrt=False)
def sync_begin(WBAR, BARC, BARN, PARK, MBO, MBS, CLA, CLS, NREG, NRV):
    """A cluster starts: no barrier arrivals, no mbarrier, nobody parked."""
    WBAR[:] = -1
    BARC[:] = 0
    BARN[:] = 0
    PARK[:] = 0
    MBO[:, :] = -1
    MBS[:, :, :] = 0
    CLA[:] = -1
    CLS[:] = 0
    NREG[:, :] = 0
    NRV[0] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _sync_fail(status, line, t, why, value):
    status[4] = why
    return fail(status, SYNC_ERROR, line, t, value)


# --- named barriers (bar.sync / bar.arrive / barrier.sync) ----------------------------------------------

#: barrier keys per CTA: the 16 named barriers, then one per warpgroup (wgmma.wait_group's: _WARPGROUP + g)
KEYS_PER_CTA = 32
_WARPGROUP = 16


@njit(cache=True, nogil=True, _nrt=False)
def _scope(W, key):
    """The warps barrier ``key`` waits for: its CTA's, or (a warpgroup's key) its warpgroup's."""
    r, k = key // KEYS_PER_CTA, key % KEYS_PER_CTA
    if k < _WARPGROUP:
        return r * W, (r + 1) * W
    lo = r * W + 4 * (k - _WARPGROUP)
    return lo, min(lo + 4, (r + 1) * W)


@njit(cache=True, nogil=True, _nrt=False)
def bar_release(state, WBAR, BARC, BARN, spc, srpc, smask, depth, W, key):
    """Barrier ``key`` completes if its thread count -- or every thread of its scope (the CTA; a warpgroup for
    wgmma.wait_group) still running -- has arrived: its waiting warps go on."""
    lo, hi = _scope(W, key)
    need = BARN[key]
    if need == 0:
        for v in range(lo, hi):
            if state[v] != 2:
                need += 32
    if BARC[key] == 0 or BARC[key] < need:
        return False
    for v in range(lo, hi):
        if state[v] == 1 and WBAR[v] == key:
            state[v] = 0
            WBAR[v] = -1
            if not settle(spc, srpc, smask, depth, v):
                state[v] = 2
    BARC[key] = 0
    BARN[key] = 0
    return True


@njit(cache=True, nogil=True, _nrt=False)
def bar_arrive(status, line, state, WBAR, BARC, BARN, spc, srpc, smask, depth, w, W, bid, cnt, given, sync):
    """Warp w arrives at barrier ``bid`` of its CTA (``cnt`` threads when ``given``; bid -1: its warpgroup's,
    which wgmma.wait_group waits at: every warp of the warpgroup issues its wgmmas before any runs past it);
    ``sync``: it waits (its pc is already past the barrier), else it goes on.  Returns 1 after a failure."""
    if given and (cnt == 0 or cnt % 32 != 0 or cnt > 32 * W):
        return _sync_fail(status, line, w * 32, 13, cnt)
    if bid > 15:
        return _sync_fail(status, line, w * 32, 14, bid)
    key = (w // W) * KEYS_PER_CTA + (bid if bid >= 0 else _WARPGROUP + (w % W) // 4)
    BARC[key] += 32
    if given:
        BARN[key] = cnt
    if sync:
        state[w] = 1
        WBAR[w] = key
    elif not settle(spc, srpc, smask, depth, w):
        state[w] = 2
    if bar_release(state, WBAR, BARC, BARN, spc, srpc, smask, depth, W, key) and state[w] == 0:
        state[w] = YIELDED      # the warps it released run from the next round, in warp order, it with them
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def bar_end(status, line, act, live, base, nxt, state, WBAR, BARC, BARN, spc, srpc, smask, depth, w, W, bid, cnt,
            given, sync):
    """The end of a block whose last statement is a CTA barrier: every lane of the warp must be there (else
    DIVERGED_BARRIER at the first that is not), the warp goes on at block ``nxt``, and arrives (:func:`bar_arrive`).
    One call, not the kernel's own lines at each barrier (numba's compile time follows them).  Returns 1 after a
    failure."""
    for l in range(32):
        if act[l] != live[w, l]:
            return fail(status, DIVERGED_BARRIER, line, base + l, np.uint64(0))
    spc[w, depth[w]] = nxt
    return bar_arrive(status, line, state, WBAR, BARC, BARN, spc, srpc, smask, depth, w, W, bid, cnt, given, sync)


@njit(cache=True, nogil=True, _nrt=False)
def cluster_at(status, line, t, smem0, smem_bytes, r, CS, addr, n, align=1):
    """The host address of the shared::cluster bytes [addr, addr + n): CTA r's own below 2^24, CTA k's for
    (k + 1) << 24 | offset (mapa); 0 after a failure, a misaligned address included (as rt.shared_at)."""
    if addr & np.uint64(align - 1):
        return fail(status, MISALIGNED, line, t, addr) - 1
    rank = np.int64(addr >> np.uint64(RANK_SHIFT))
    off = np.int64(addr & np.uint64(_OFF_MASK))
    k = r if rank == 0 else rank - 1
    if k >= CS:
        return _sync_fail(status, line, t, 9, addr) - 1
    if off + n > smem_bytes:
        return fail(status, BAD_ADDRESS, line, t, addr) - 1
    return smem0 + k * smem_bytes + off


# --- mbarriers ------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def target(status, line, t, addr, space, r, CS):
    """One lane's mbarrier / shared::cluster address -> rank << 32 | shared offset (-1 after a failure), as
    ``ClusterState.shared_target``: rank bits (r + 1) << 24 name CTA r of the cluster (what ``mapa`` makes)."""
    a = np.int64(addr)
    if space == SPACE_GENERIC:
        a = a - _WINDOW_BASE
        if a < 0 or a >= np.int64(1) << 32:
            return _sync_fail(status, line, t, 10, addr) - 2
    rank = a >> RANK_SHIFT
    off = a & _OFF_MASK
    if rank == 0:
        return (np.int64(r) << 32) | off
    if space == SPACE_CTA:
        return _sync_fail(status, line, t, 18, a) - 2
    if rank - 1 >= CS:
        return _sync_fail(status, line, t, 9, a) - 2
    return ((rank - 1) << 32) | off


@njit(cache=True, nogil=True, _nrt=False)
def mb_slot(status, line, t, MBO, MBS, smem_bytes, rk, init):
    """The table slot of the mbarrier at ``rk`` (CTA rank << 32 | shared offset; ``init``: made if new); -1 after
    a failure."""
    r, off = rk >> 32, rk & 0xFFFFFFFF
    if off % 8:
        return _sync_fail(status, line, t, 1, off) - 2
    if off + 8 > smem_bytes:
        return _sync_fail(status, line, t, 4, off) - 2
    free = -1
    for k in range(MBO.shape[1]):
        if MBO[r, k] == off:
            if not init and MBS[r, k, MB_VALID] == 0:
                return _sync_fail(status, line, t, 2, off) - 2
            return k
        if MBO[r, k] < 0 and free < 0:
            free = k
    if not init:
        return _sync_fail(status, line, t, 2, off) - 2
    if free < 0:
        return _sync_fail(status, line, t, 3, off) - 2
    MBO[r, free] = off
    return free


@njit(cache=True, nogil=True, _nrt=False)
def _tx(status, line, t, MBS, r, k, delta):
    new = MBS[r, k, MB_TX] + delta
    if new > MAX_COUNT or new < -MAX_COUNT:
        return _sync_fail(status, line, t, 7, delta)
    MBS[r, k, MB_TX] = new
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def _complete(MBS, r, k):
    if MBS[r, k, MB_PENDING] == 0 and MBS[r, k, MB_TX] == 0:
        MBS[r, k, MB_PHASE] += 1
        MBS[r, k, MB_PENDING] = MBS[r, k, MB_EXPECTED]


@njit(cache=True, nogil=True, _nrt=False)
def mb_init(status, line, t, MBO, MBS, smem_bytes, rk, count):
    """mbarrier.init of the barrier at ``rk`` (rank << 32 | offset); 1 after a failure."""
    r = rk >> 32
    k = mb_slot(status, line, t, MBO, MBS, smem_bytes, rk, True)
    if k < 0:
        return 1
    if count < 1 or count > MAX_COUNT:
        return _sync_fail(status, line, t, 5, count)
    MBS[r, k, MB_VALID] = 1
    MBS[r, k, MB_EXPECTED] = count
    MBS[r, k, MB_PENDING] = count
    MBS[r, k, MB_TX] = 0
    MBS[r, k, MB_PHASE] = 0
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def mb_inval(status, line, t, MBO, MBS, smem_bytes, rk):
    r = rk >> 32
    k = mb_slot(status, line, t, MBO, MBS, smem_bytes, rk, False)
    if k < 0:
        return 1
    MBS[r, k, MB_VALID] = 0
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def mb_arrive(status, line, t, MBO, MBS, smem_bytes, rk, count, tx, drop, no_complete):
    """mbarrier.arrive[_drop][.noComplete][.expect_tx] (tx < 0: no expect_tx): the state token of the phase
    arrived on (warpsim's encoding, ``MBarrier.token``), -1 after a failure."""
    r = rk >> 32
    k = mb_slot(status, line, t, MBO, MBS, smem_bytes, rk, False)
    if k < 0:
        return -1
    if tx >= 0:
        if tx > MAX_COUNT:
            return _sync_fail(status, line, t, 7, tx) - 2
        if _tx(status, line, t, MBS, r, k, tx):
            return -1
    if count < 1 or count > MAX_COUNT:
        return _sync_fail(status, line, t, 5, count) - 2
    if drop:
        if count > MBS[r, k, MB_EXPECTED]:
            return _sync_fail(status, line, t, 6, count) - 2
        MBS[r, k, MB_EXPECTED] -= count
    token = (MBS[r, k, MB_PHASE] << 32) | MBS[r, k, MB_PENDING]
    if count > MBS[r, k, MB_PENDING]:
        return _sync_fail(status, line, t, 6, count) - 2
    if no_complete and count == MBS[r, k, MB_PENDING] and MBS[r, k, MB_TX] == 0:
        return _sync_fail(status, line, t, 8, count) - 2
    MBS[r, k, MB_PENDING] -= count
    _complete(MBS, r, k)
    return token


@njit(cache=True, nogil=True, _nrt=False)
def mb_tx(status, line, t, MBO, MBS, smem_bytes, rk, nbytes, sign):
    """mbarrier.expect_tx (sign 1) / complete_tx (sign -1, also a TMA copy's landing bytes); 1 after a failure."""
    r = rk >> 32
    k = mb_slot(status, line, t, MBO, MBS, smem_bytes, rk, False)
    if k < 0:
        return 1
    if nbytes < 0 or nbytes > MAX_COUNT:
        return _sync_fail(status, line, t, 7, nbytes)
    if _tx(status, line, t, MBS, r, k, sign * nbytes):
        return 1
    if sign < 0:
        _complete(MBS, r, k)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def mb_test(status, line, t, MBO, MBS, smem_bytes, rk, value, parity, PARK, PSLOT, PPH, w):
    """try_wait / test_wait: 1 when the phase named by ``value`` (a parity, or a state token) has completed,
    0 when not (the warp is marked to park on it, once), -1 after a failure."""
    r = rk >> 32
    k = mb_slot(status, line, t, MBO, MBS, smem_bytes, rk, False)
    if k < 0:
        return -1
    ph = MBS[r, k, MB_PHASE]
    ok = ((ph & 1) != (value & 1)) if parity else (ph > (value >> 32))
    if ok:
        return 1
    if PARK[w] == PARK_NONE:
        PARK[w] = PARK_MBARRIER
        PSLOT[w] = r * MBO.shape[1] + k
        PPH[w] = ph
    return 0


# --- the cluster barrier and setmaxnreg ----------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def cluster_barrier(status, line, CLA, CLS, PARK, w, wait):
    """barrier.cluster.arrive (wait 0) / .wait (1) by warp w; 1 after a failure.  A wait before the cluster
    arrived parks the warp (PARK_CLUSTER): it runs the wait again when the phase completes."""
    if not wait:
        if CLA[w] >= 0 and CLA[w] >= CLS[1]:
            return _sync_fail(status, line, w * 32, 11, 0)
        CLA[w] = CLS[1]
        CLS[0] += 1
        return 0
    if CLA[w] < 0:
        return _sync_fail(status, line, w * 32, 12, 0)
    if CLA[w] >= CLS[1]:
        PARK[w] = PARK_CLUSTER
    else:
        CLA[w] = -1
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def setmaxnreg(status, line, NREG, NRV, PARK, PPH, w, W, val, inc, initial):
    """setmaxnreg.inc / .dec to ``val`` registers by warp w's warpgroup, as ``cluster._setmaxnreg``: an
    .inc that would take the CTA past the SM's registers parks until another warpgroup's .dec; 1 after a
    failure."""
    r = w // W
    g = (w % W) // 4
    cur = NREG[r, g] if NREG[r, g] else initial
    if inc and val < cur:
        return _sync_fail(status, line, w * 32, 15, val)
    if not inc and val > cur:
        return _sync_fail(status, line, w * 32, 16, val)
    total = 0
    for h in range((W + 3) // 4):
        n = val if h == g else (NREG[r, h] if NREG[r, h] else initial)
        total += n * min(128, (W - 4 * h) * 32)
    if total > REGISTERS_PER_SM:
        if not inc:
            return _sync_fail(status, line, w * 32, 17, total)
        PARK[w] = PARK_REGISTERS
        PPH[w] = NRV[0]
        return 0
    if NREG[r, g] != val:
        NREG[r, g] = val
        NRV[0] += 1
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def round_end(state, WBAR, BARC, BARN, PARK, PSLOT, PPH, MBS, CLA, CLS, NRV, spc, srpc, smask, depth, W):
    """No warp of the cluster can run: complete the barriers whose last warps left, the cluster barrier
    if every running warp arrived, and wake the parked warps whose wait may be over.  -> 0 every warp
    finished, 1 some warp runs again, 2 a deadlock (every running warp waits for something that cannot
    happen)."""
    WS = state.shape[0]
    for key in range(BARC.shape[0]):
        if BARC[key] > 0:
            bar_release(state, WBAR, BARC, BARN, spc, srpc, smask, depth, W, key)
    alive = 0
    for w in range(WS):
        if state[w] != 2:
            alive += 1
    if CLS[0] > 0 and CLS[0] >= alive:
        CLS[1] += 1
        CLS[0] = 0
    nmb = MBS.shape[1]
    for w in range(WS):
        if state[w] == YIELDED:
            state[w] = 0
        if state[w] == 3:
            p = PARK[w]
            go = True
            if p == PARK_MBARRIER:
                r, k = PSLOT[w] // nmb, PSLOT[w] % nmb
                go = MBS[r, k, MB_VALID] == 0 or MBS[r, k, MB_PHASE] != PPH[w]
            elif p == PARK_CLUSTER:
                go = CLA[w] < CLS[1]
            elif p == PARK_REGISTERS:
                go = NRV[0] != PPH[w]
            if go:
                state[w] = 0
                PARK[w] = PARK_NONE
    run = False
    for w in range(WS):
        if state[w] == 0:
            run = True
    if run:
        return 1
    return 0 if alive == 0 else 2


#: called by its symbol from the compiled kernels (engine/linking.py): not compiled again inside every kernel
sync_state_by_symbol = unlinked(sync_state, literal=True)
bar_end_by_symbol = unlinked(bar_end)
round_end_by_symbol = unlinked(round_end, literal=True)
