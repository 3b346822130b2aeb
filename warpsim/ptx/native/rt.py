"""The runtime the generated kernels call: byte loads and stores, the global-memory lookup, the
warp's reconvergence stack, and f32 words as host floats (jitted; never fastmath).

The helpers that take arrays and allocate nothing are compiled without numba's reference counting
(``_nrt=False``): the kernel holds the arrays, and the counts cost more than a bounds check per call.
A compiled kernel keeps every warp's SIMT state in arrays: ``spc`` / ``srpc`` (warps, depth) the
block and reconvergence block of each stack entry, ``smask`` (warps, depth, 32) its active lanes,
``depth`` the top entry of each warp.  Blocks are numbered; EXIT (-1) is "after the kernel".
"""

from __future__ import annotations

import numpy as np
from numba import njit

from llvmlite import ir as _ll
from numba import types as _nbt
from numba.extending import intrinsic as _intrinsic

from ...engine import sfu as _sfu
from ...engine.hostfpu import fma_native
from ...engine.linking import unlinked as _unlinked


EXIT = -1
#: status codes a kernel returns in status[0] (0: it finished)
OK, BAD_ADDRESS, MISALIGNED, DIVERGED_BARRIER, SHFL_MEMBERS, DEADLOCK, MAX_STEPS, FPENV, PARTIAL_WARP, CP_SIZE = range(10)
#: a wgmma.mma_async whose warp's lanes disagree on its descriptors or scale-d, run by a partial warp or warpgroup,
#: or with a descriptor the model does not take (lower_wgmma; a code apart from the range above, which grows)
WGMMA_OPERANDS = 16
WMMA_OPERANDS = 17      # the lanes of a wmma.load / store disagree on its matrix address or stride (rt_wmma)
BAD_LOCAL = 18          # a local address outside the thread's local memory (status[4]: the access's bytes)
#: refused TMA tile copies (rt_tma; status[2] the thread, status[3] and [4] as each says)
TMA_SMEM_ALIGN = 19     # the box's shared offset (status[3]) is negative or not 128-byte aligned
TMA_SMEM_RANGE = 20     # the box at shared offset status[3] ends at byte status[4], past the CTA's shared bytes
TMA_INNER = 21          # a load's innermost coordinate (status[3]) is status[4] bytes, not a multiple of 16
TMA_NEGATIVE = 22       # a store's start coordinate status[3] (of dimension status[4]) is negative
SYNC_ERROR = 23         # an mbarrier, barrier or setmaxnreg misuse (status[4]: which, rt_sync.SYNC_ERRORS)
BRKPT = 24              # a thread reached brkpt
ASSERT_FAILED = 25      # a thread called CUDA's __assertfail (a failed device assert)
TMA_DESCRIPTOR = 26     # a TMA statement's descriptor not found (status[4] 1), of another rank (2), a bad ctaMask (3)
CALL_DEPTH = 27         # calls of recursive functions nested deeper than FRAME_DEPTH in a warp (inline.Frame)
BULK_COPY = 28          # a cp.async.bulk's address or size breaks its rule (status[4]: which, rt_tma.BULK_ERRORS)
LAUNCH_SHAPE = 29       # a kernel made for another number of threads a run than the launch's (kernel._text)
#: frames of recursive calls a warp may hold (the GPU's own limit is its call stack: 1 KiB a thread by default)
FRAME_DEPTH = 128
#: a call's entry on the reconvergence stack reconverges nowhere: its body's return pops it
CALL_RPC = -3

_U32 = np.uint32


# f32 words and host floats: intrinsics (a jitted call costs numba a call frame to type, lower and optimise;
# a kernel makes hundreds)

@_intrinsic
def f32(typingctx, w):
    """An f32 word (the low 32 bits of an integer) as a host float32 (bit cast)."""
    if not isinstance(w, _nbt.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        v = builder.trunc(v, _ll.IntType(32)) if w.bitwidth > 32 else builder.zext(v, _ll.IntType(32)) \
            if w.bitwidth < 32 else v
        return builder.bitcast(v, _ll.FloatType())

    return _nbt.float32(w), codegen


@_intrinsic
def w32(typingctx, x):
    """A float result rounded to float32, as its word; NaN as the canonical 0x7fffffff (what the GPU writes)."""
    if not isinstance(x, _nbt.Float):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        nan = builder.fcmp_unordered("uno", v, v)
        if x.bitwidth > 32:
            v = builder.fptrunc(v, _ll.FloatType())
        return builder.select(nan, _ll.Constant(_ll.IntType(32), 0x7FFFFFFF), builder.bitcast(v, _ll.IntType(32)))

    return _nbt.uint32(x), codegen


@njit(cache=True, nogil=True, _nrt=False)
def load(buf, off, n):
    """n (1, 2, 4 or 8) little-endian bytes at buf[off] as an unsigned integer."""
    v = np.uint64(0)
    for i in range(n):
        v |= np.uint64(buf[off + i]) << np.uint64(8 * i)
    return v


def _peek(bits):
    @_intrinsic
    def peek(typingctx, addr):
        """The uint{bits} at host address ``addr`` (unaligned load; the caller checked the bounds)."""
        if not isinstance(addr, _nbt.Integer):
            return None

        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], _ll.IntType(bits).as_pointer())
            v = builder.load(ptr, align=1)
            return builder.zext(v, _ll.IntType(64)) if bits < 64 else v

        return _nbt.uint64(addr), codegen
    return peek


def _poke(bits):
    @_intrinsic
    def poke(typingctx, addr, value):
        """Store the low {bits} bits of ``value`` at host address ``addr`` (unaligned)."""
        if not isinstance(addr, _nbt.Integer) or not isinstance(value, _nbt.Integer):
            return None

        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], _ll.IntType(bits).as_pointer())
            v = context.cast(builder, args[1], signature.args[1], _nbt.uint64)
            builder.store(builder.trunc(v, _ll.IntType(bits)) if bits < 64 else v, ptr, align=1)
            return context.get_dummy_value()

        return _nbt.void(addr, value), codegen
    return poke


#: loads and stores of 1, 2, 4, 8 bytes at host addresses: global and shared memory in the kernels
peek1, peek2, peek4, peek8 = (_peek(b) for b in (8, 16, 32, 64))
poke1, poke2, poke4, poke8 = (_poke(b) for b in (8, 16, 32, 64))


# The register files: a kernel keeps them in arrays (registers, threads) and its statements reach their words
# through these intrinsics on the array's address (``addr``: its data pointer, ``T``: threads per register).
# An array element costs numba a struct alloca per access, which LLVM's SROA takes quadratic time to remove;
# a word at an address costs a load or a store.

_FILE_TYPE = {1: _nbt.boolean, 16: _nbt.uint16, 32: _nbt.uint32, 64: _nbt.uint64}


def _word_pointer(context, builder, sig, args, bits):
    addr, T, k, t = (context.cast(builder, v, ty, _nbt.intp) for v, ty in zip(args[:4], sig.args[:4]))
    ptr = builder.inttoptr(addr, _ll.IntType(8 if bits == 1 else bits).as_pointer())
    return builder.gep(ptr, [builder.add(builder.mul(k, T), t)])


def _get(bits, as_type):
    """Register k of thread t: the word (as_type None: the file's type), zero- (uint64) or sign-extended
    (int64) to 64 bits."""
    @_intrinsic
    def get(typingctx, addr, T, k, t):
        if not all(isinstance(x, _nbt.Integer) for x in (addr, T, k, t)):
            return None
        out = as_type or _FILE_TYPE[bits]

        def codegen(context, builder, sig, args):
            v = builder.load(_word_pointer(context, builder, sig, args, bits))
            if bits == 1:
                return builder.icmp_unsigned("!=", v, v.type(0))
            if out.bitwidth == bits:
                return v
            return builder.sext(v, _ll.IntType(64)) if out.signed else builder.zext(v, _ll.IntType(64))

        return out(addr, T, k, t), codegen
    return get


def _set(bits):
    """Register k of thread t = value (an integer truncated to the register's width; a predicate: its truth)."""
    @_intrinsic
    def set_(typingctx, addr, T, k, t, value):
        if not all(isinstance(x, _nbt.Integer) for x in (addr, T, k, t)) or \
                not isinstance(value, (_nbt.Integer, _nbt.Boolean)):
            return None

        def codegen(context, builder, sig, args):
            ptr = _word_pointer(context, builder, sig, args, bits)
            if bits == 1:
                v = builder.zext(context.cast(builder, args[4], sig.args[4], _nbt.boolean), _ll.IntType(8))
            else:
                v = context.cast(builder, args[4], sig.args[4], _nbt.uint64)
                v = builder.trunc(v, _ll.IntType(bits)) if bits < 64 else v
            builder.store(v, ptr)
            return context.get_dummy_value()

        return _nbt.void(addr, T, k, t, value), codegen
    return set_


#: the most special-function statements one call of the unit runs for a warp (codegen: consecutive statements of
#: one form); the lane scratch SHJ, SA, SB, SO holds 32 lanes of each
SFU_BATCH = 16


@njit(cache=True, nogil=True)
def launch_state(BX, BY, BZ, CS, n1, n16, n32, n64, depth, smem_bytes, local_stride):
    """The arrays a kernel keeps for a run of clusters of CS CTAs (one without clusters): the threads'
    indices, the register files (n<bits> registers of the cluster's threads), the warps' reconvergence
    stacks (``depth`` entries), the lane scratch of warp statements, shared memory (smem_bytes per CTA)
    and the threads' local memory (``local_stride`` bytes each).  (One cached helper: numba compiles
    ``np.zeros`` afresh in every process for every dtype and shape it is called with.)"""
    T1 = BX * BY * BZ
    T = T1 * CS
    W = T // 32
    tid = np.empty((3, T), np.uint32)
    for t in range(T):
        u = t % T1
        tid[0, t] = u % BX
        tid[1, t] = (u // BX) % BY
        tid[2, t] = u // (BX * BY)
    files = (np.zeros((max(1, n1), T), np.bool_), np.zeros((max(1, n16), T), np.uint16),
             np.zeros((max(1, n32), T), np.uint32), np.zeros((max(1, n64), T), np.uint64))
    stacks = (np.zeros((W, depth), np.int64), np.zeros((W, depth), np.int64), np.zeros((W, depth, 32), np.bool_),
              np.zeros(W, np.int64), np.zeros((W, 32), np.bool_), np.zeros(W, np.int64))
    n = 32 * SFU_BATCH
    lanes = (np.zeros(32, np.bool_), np.zeros(32, np.bool_), np.zeros(32, np.uint64), np.zeros(n, np.int64),
             np.zeros(n, np.uint32), np.zeros(n, np.uint32), np.zeros(n, np.uint32), np.zeros(32, np.float64),
             np.zeros(32, np.int64), np.zeros(32, np.uint8), np.zeros(32, np.int64))
    return tid[0], tid[1], tid[2], files, stacks, lanes, np.zeros(smem_bytes * CS, np.uint8), \
        np.zeros(T * local_stride, np.uint8)


@njit(cache=True, nogil=True)
def cta_begin(smem, lmem, spc, srpc, smask, depth, live, state):
    """A CTA starts: shared and local memory zero (as the interpreter's launch makes them), every warp at
    block 0 with all its lanes."""
    smem[:] = 0
    lmem[:] = 0
    for w in range(depth.size):
        depth[w] = 0
        spc[w, 0] = 0
        srpc[w, 0] = EXIT
        smask[w, 0, :] = True
        live[w, :] = True
        state[w] = 0


@njit(cache=True, nogil=True)
def clear(file, k):
    """Register k of every thread = 0 (registers some thread may read before writing, at a CTA's start)."""
    file[k, :] = 0


@njit(cache=True, nogil=True)
def alive(p, r16, r32, r64):
    """A use of the register files' arrays after the kernel's last word access through their addresses (numba
    frees an array after its last use as an array)."""
    return p.size + r16.size + r32.size + r64.size


#: get<bits>(addr, T, k, t): the word; get<bits>u / get32s: zero- / sign-extended to 64 bits; set<bits>: a store
get1, get16, get32, get64 = (_get(b, None) for b in (1, 16, 32, 64))
get16u, get32u = _get(16, _nbt.uint64), _get(32, _nbt.uint64)
get16s, get32s = _get(16, _nbt.int64), _get(32, _nbt.int64)
set1, set16, set32, set64 = (_set(b) for b in (1, 16, 32, 64))


@njit(cache=True, nogil=True, _nrt=False)
def find(bases, sizes, addr, n):
    """The mapped array holding [addr, addr + n), or -1."""
    for k in range(bases.size):
        if bases[k] <= addr and addr + np.uint64(n) <= bases[k] + sizes[k]:
            return k
    return -1


#: what a tracked launch records of each global-memory byte it touches (``track``)
READ, WRITTEN = 1, 2
_EVERY_BYTE = np.uint64(0x0101010101010101)


@njit(cache=True, nogil=True, _nrt=False)
def track(trk, toff, k, off, n, how):
    """Record that ``n`` bytes at offset ``off`` of mapped array ``k`` were read or written (how: READ,
    WRITTEN) when the launch is tracked (``trk``: one byte per byte of every mapped array, ``toff``
    where each array's bytes start; an empty ``trk`` tracks nothing).  A tracked run of some of a
    launch's CTAs is merged with the runs of the others only when no run read what another wrote
    (:mod:`warpsim.ptx.workers`).  An access of 2, 4, 8 or 16 bytes marks its bytes with one or two word-wide
    read-modify-writes (the flag in every byte), not byte by byte: tracking is most of what a tracked run costs
    over an untracked one."""
    if trk.size:
        o = toff[k] + off
        if n == 2 or n == 4 or n == 8 or n == 16:
            p = np.int64(trk.ctypes.data) + o
            f = _EVERY_BYTE * np.uint64(how)
            if n == 2:
                poke2(p, peek2(p) | f)
            elif n == 4:
                poke4(p, peek4(p) | f)
            else:
                for j in range(0, n, 8):
                    poke8(p + j, peek8(p + j) | f)
        else:
            for i in range(n):
                trk[o + i] |= np.uint8(how)


_READ8, _WRITTEN8 = np.uint64(0x0101010101010101), np.uint64(0x0202020202020202)


@njit(cache=True, nogil=True, _nrt=False)
def mark_written(trk, written):
    """One tracked run's part of merging runs of a launch in CTA order (:mod:`warpsim.ptx.workers`'s
    rule): False when it read a byte an earlier run wrote (``written``: 1 per such byte), else its writes
    are added there.  Eight bytes a step (both arrays' sizes are multiples of 8)."""
    t8, w8 = trk.view(np.uint64), written.view(np.uint64)
    for i in range(t8.size):
        if t8[i] & _READ8 & w8[i]:
            return False
    for i in range(t8.size):
        w8[i] |= (t8[i] & _WRITTEN8) >> np.uint64(1)
    return True


@njit(cache=True, nogil=True)
def apply_written(trk, data, out, o):
    """Copy the bytes a tracked run wrote (``trk[o:]``) from its copy ``data[o:]`` into the launch's array
    ``out``: eight track bytes a step, whole runs of written steps as one copy (``trk``'s size: a
    multiple of 8)."""
    t8 = trk.view(np.uint64)
    n = out.size
    i = min(n, (8 - o % 8) % 8)
    e = i + (n - i) // 8 * 8
    for q in range(i):                          # up to the first 8-byte step, and after the last
        if trk[o + q] & WRITTEN:
            out[q] = data[o + q]
    for q in range(e, n):
        if trk[o + q] & WRITTEN:
            out[q] = data[o + q]
    b = i
    while b < e:
        m = t8[(o + b) // 8] & _WRITTEN8
        if m == _WRITTEN8:
            b1 = b + 8
            while b1 < e and t8[(o + b1) // 8] & _WRITTEN8 == _WRITTEN8:
                b1 += 8
            for q in range(b, b1):          # not a slice assignment: that compiles numba's shape-error text
                out[q] = data[o + q]
            b = b1
            continue
        if m:
            for q in range(b, b + 8):
                if trk[o + q] & WRITTEN:
                    out[q] = data[o + q]
        b += 8


@njit(cache=True, nogil=True, _nrt=False)
def global_at(status, line, t, bases, sizes, ptrs, trk, toff, addr, n, how, align=1):
    """The host address of the global bytes [addr, addr + n) a thread reads or writes (``how``), tracked
    (:func:`track`); 0 when they are not aligned to ``align`` (a power of two) or not mapped (then ``status`` says
    so for PTX line ``line`` and thread ``t``).  One call instead of an alignment check, find, track and a failure
    record: each jitted call, and each generated line, costs numba's compile time."""
    if addr & np.uint64(align - 1):
        return fail(status, MISALIGNED, line, t, addr) - 1
    k = find(bases, sizes, addr, n)
    if k < 0:
        return fail(status, BAD_ADDRESS, line, t, addr) - 1
    off = np.int64(addr - bases[k])
    track(trk, toff, k, off, n, how)
    return ptrs[k] + off


@njit(cache=True, nogil=True, _nrt=False)
def shared_at(status, line, t, smemp, smem_bytes, addr, n, align=1):
    """The host address of the CTA's shared bytes [addr, addr + n); 0 as :func:`global_at`."""
    if addr & np.uint64(align - 1):
        return fail(status, MISALIGNED, line, t, addr) - 1
    if addr + np.uint64(n) > np.uint64(smem_bytes):
        return fail(status, BAD_ADDRESS, line, t, addr) - 1
    return smemp + np.int64(addr)


@njit(cache=True, nogil=True, _nrt=False)
def local_at(status, line, t, lmemp, stride, size, addr, n, align=1):
    """The host address of thread t's local bytes [addr, addr + n) (``size`` bytes each, ``stride`` apart);
    0 as :func:`global_at` (status[4]: n, which the interpreter's message names)."""
    if addr & np.uint64(align - 1):
        return fail(status, MISALIGNED, line, t, addr) - 1
    if n > size or addr > np.uint64(size - n):
        status[4] = n
        return fail(status, BAD_LOCAL, line, t, addr) - 1
    return lmemp + t * stride + np.int64(addr)


@njit(cache=True, nogil=True, _nrt=False)
def local_copy(base, src, dst, n):
    """Bytes [src, src + n) of the local area at host address ``base`` to [dst, dst + n)."""
    for i in range(n):
        poke1(base + dst + i, peek1(base + src + i))


def _settle(spc, srpc, smask, depth, w):
    """Pop warp w's finished entries (at their reconvergence block, or with no lane left); False
    when the warp has nothing left to run."""
    d = depth[w]
    while d >= 0:
        if spc[w, d] != srpc[w, d]:
            some = False
            for l in range(32):
                if smask[w, d, l]:
                    some = True
                    break
            if some:
                break
        d -= 1
    depth[w] = d
    return d >= 0


settle = njit(cache=True, nogil=True, _nrt=False)(_settle)
#: settle inlined by numba into the dispatch's calls (goto, branch_on): their code is cached whole, not a call to
#: another cached function (whether numba links a callee's code or calls it depends on whether it was compiled or
#: loaded from the cache in that process)
_settle_inlined = njit(nogil=True, _nrt=False, inline="always")(_settle)


@njit(nogil=True, inline="always")
def _split(spc, srpc, smask, depth, w, taken, target, fall, reconv):
    """The warp's top entry reaches a conditional branch (``taken``: its guard per lane): all active lanes one way,
    or a split, as the interpreter's: the top entry waits at ``reconv`` (the branch's immediate post-dominator; an
    entry that already reconverges there is popped instead), then the taken lanes, then the not-taken ones on top
    (they run first); no entry starts at ``reconv``.  :func:`settle` follows (branch_on)."""
    d = depth[w]
    act = np.empty(32, np.bool_)
    nt = 0
    na = 0
    for l in range(32):
        act[l] = smask[w, d, l]
        if act[l]:
            na += 1
            if taken[l]:
                nt += 1
    if nt == na:
        spc[w, d] = target
    elif nt == 0:
        spc[w, d] = fall
    else:
        if d + 2 >= spc.shape[1]:
            raise RuntimeError("warpsim.ptx.native: the reconvergence stack is full (nested divergence deeper than "
                               "the translator allows)")
        if reconv == srpc[w, d]:
            d -= 1
        else:
            spc[w, d] = reconv
        for blk, want in ((target, True), (fall, False)):
            if blk == reconv:
                continue
            d += 1
            spc[w, d] = blk
            srpc[w, d] = reconv
            for l in range(32):
                smask[w, d, l] = act[l] and (taken[l] == want)
        depth[w] = d


@njit(cache=True, nogil=True, _nrt=False)
def goto(spc, srpc, smask, depth, state, w, target):
    """The warp's top entry goes on at block ``target`` (a branch every lane takes, or the next block), then
    :func:`settle`; a warp with nothing left to run is done (state 2).  One call in the kernel's block dispatch
    instead of its lines: LLVM's function passes on the kernel's one function grow faster than linearly with its
    size (a CUTLASS 3 kernel's: 361 blocks)."""
    spc[w, depth[w]] = target
    if not _settle_inlined(spc, srpc, smask, depth, w):
        state[w] = 2


@njit(cache=True, nogil=True)
def branch_on(spc, srpc, smask, depth, state, w, taken, ap, T, base, k, neg, target, fall, reconv):
    """A conditional branch on predicate register ``k`` (``neg``: its negation) of warp w's lanes (``taken``: the
    lanes' scratch): :func:`_split`, then :func:`settle`; a warp with nothing left to run is done (state 2).  See
    :func:`goto`."""
    for l in range(32):
        taken[l] = get1(ap, T, k, base + l) != (neg != 0)
    _split(spc, srpc, smask, depth, w, taken, target, fall, reconv)
    if not _settle_inlined(spc, srpc, smask, depth, w):
        state[w] = 2


@njit(cache=True, nogil=True, _nrt=False)
def leave(spc, srpc, smask, depth, live, w, lanes):
    """ret / exit of the kernel: the lanes leave every entry of the warp."""
    for d in range(depth[w] + 1):
        for l in range(32):
            if lanes[l]:
                smask[w, d, l] = False
    for l in range(32):
        if lanes[l]:
            live[w, l] = False


@njit(cache=True, nogil=True)
def _key32(w):
    """An ordering key of an f32 word (-0 < +0); NaN excluded by the caller."""
    mag = np.int64(w & _U32(0x7FFFFFFF))
    return -mag - 1 if w >> _U32(31) else mag


@njit(cache=True, nogil=True)
def fminmax32(a, b, is_max, nan=False):
    """min.f32 / max.f32 on words: a NaN loses to a number (.NaN: wins), two NaNs give the canonical NaN,
    -0 < +0 (float_ops.minmax)."""
    a, b = _U32(a), _U32(b)
    na = (a & _U32(0x7FFFFFFF)) > _U32(0x7F800000)
    nb = (b & _U32(0x7FFFFFFF)) > _U32(0x7F800000)
    if (na and nb) or (nan and (na or nb)):
        return _U32(0x7FFFFFFF)
    if na:
        return b
    if nb:
        return a
    ka, kb = _key32(a), _key32(b)
    if is_max:
        return a if ka >= kb else b
    return a if ka <= kb else b


@njit(cache=True, nogil=True)
def bfe(a, pos, ln, bits, signed):
    """bfe.{u,s}{32,64}: bit i of the result is a[pos + i] for i < len inside a, else the sign bit
    a[min(pos + len - 1, msb)] (signed, len > 0) or 0."""
    x = np.uint64(a)
    pos = np.int64(pos & np.uint64(0xFF))
    ln = np.int64(ln & np.uint64(0xFF))
    eff = min(ln, bits - pos)
    eff = max(0, min(eff, bits))
    field = np.uint64(0) if pos >= bits else x >> np.uint64(min(pos, bits - 1))
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if eff >= 64 else (np.uint64(1) << np.uint64(eff)) - np.uint64(1)
    v = field & mask
    if signed and ln != 0:
        sb = (x >> np.uint64(max(0, min(pos + ln - 1, bits - 1)))) & np.uint64(1)
        if sb == np.uint64(1):
            v = v | ~mask
    if bits < 64:
        v = v & ((np.uint64(1) << np.uint64(bits)) - np.uint64(1))
    return v


@njit(cache=True, nogil=True, _nrt=False)
def round16(sign, full, lsb, eb, mb):
    """full * 2^lsb (full > 0; ``sign``: the sign bit in place) rounded to nearest even in a 16-bit float of ``eb``
    exponent and ``mb`` mantissa bits, overflow to infinity: the conversions' and reductions' one rounding."""
    if full == 0:
        return np.uint64(sign)
    top = lsb + 63
    while not (full >> (top - lsb)) & 1:               # the exponent of the leading bit
        top -= 1
    bias = (np.int64(1) << (eb - 1)) - 1
    te = max(top, 1 - bias)
    shift = te - mb - lsb
    if shift > 62:                                      # below half the smallest subnormal: zero
        return np.uint64(sign)
    r = full >> shift if shift > 0 else full << -shift
    rem = full - (r << shift) if shift > 0 else np.int64(0)
    if shift > 0:
        half = np.int64(1) << (shift - 1)
        if rem > half or (rem == half and (r & 1) == 1):
            r += 1
    if r == 0:
        return np.uint64(sign)
    if r >= np.int64(1) << (mb + 1):                    # the rounding carried into a new binade
        r >>= 1
        te += 1
    if r < np.int64(1) << mb:                           # subnormal
        return np.uint64(sign | r)
    biased = te + bias
    if biased >= (np.int64(1) << eb) - 1:
        return np.uint64(sign | (((np.int64(1) << eb) - 1) << mb))
    return np.uint64(sign | (biased << mb) | (r - (np.int64(1) << mb)))


@njit(cache=True, nogil=True, _nrt=False)
def fail(status, code, line, where, value):
    """Record why a kernel stopped (status code, PTX line, thread or CTA, address or count)."""
    status[0] = code
    status[1] = line
    status[2] = where
    status[3] = np.int64(value)
    return 1


@njit(cache=True, nogil=True, _nrt=False)
def all_lanes(act):
    for l in range(32):
        if not act[l]:
            return False
    return True



@njit(cache=True, nogil=True)
def div_contracted(a, b, c, full, op, d):
    """``contracted.div.{full,approx}.f32.{add,sub,rsub}.f32`` (not .ftz): the division's operand scaling and
    MUFU.RCP of the jitted unit (:mod:`warpsim.engine.sfu`), then one FFMA of the reciprocal, the dividend
    and the addend (op 1: sub negates the addend, 2: rsub the dividend), as ``sfu_ops.div_contracted``."""
    a, b, c = _U32(a), _U32(b), _U32(c)
    big = full and _sfu._big(b)
    small = (not big) and _sfu._small(b)
    if big:
        a = _sfu._fmul(a, _sfu._QUARTER, False)
        b = _sfu._fmul(b, _sfu._QUARTER, False)
    elif small:
        a = _sfu._fmul(a, _sfu._TWO24, False)
        b = _sfu._fmul(b, _sfu._TWO24, False)
    r = _sfu._mufu_rcp(b, d)
    if op == 1:
        c = c ^ _U32(0x80000000)
    elif op == 2:
        a = a ^ _U32(0x80000000)
    return w32(fma_native(f32(r), f32(a), f32(c)))


@njit(cache=True, nogil=True)
def divrem(a, b, bits, signed, rem):
    """div / rem of ``bits``-bit words: truncating (on magnitudes, as the interpreter's int_ops); by zero all
    ones; MIN / -1 wraps to MIN."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if bits == 64 else (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    a, b = np.uint64(a) & mask, np.uint64(b) & mask
    if b == np.uint64(0):
        return mask
    top = np.uint64(1) << np.uint64(bits - 1)
    sa = signed and (a & top) != np.uint64(0)
    sb = signed and (b & top) != np.uint64(0)
    ma = ((~a + np.uint64(1)) & mask) if sa else a
    mb = ((~b + np.uint64(1)) & mask) if sb else b
    if rem:
        r = ma % mb
        return ((~r + np.uint64(1)) & mask) if sa else r
    q = ma // mb
    return ((~q + np.uint64(1)) & mask) if sa != sb else q


#: the compiled kernels call the large, once-a-launch set-up by its symbol (engine/linking.py): its code is not
#: optimised and compiled again inside every kernel
launch_state_by_symbol = _unlinked(launch_state, literal=True)
branch_on_by_symbol = _unlinked(branch_on, literal=True)
