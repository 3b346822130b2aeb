"""Rows of the native translator for Hopper's synchronisation and cluster statements: mbarriers,
``barrier.cluster``, ``elect.sync``, ``mapa``, ``setmaxnreg``, the fences and no-op hints, traps.

Their semantics are :mod:`.rt_sync`'s (the interpreter's rules of ``cluster.py`` and ``mbarrier.py``
restated); these rows only read operands and call it.  A statement that may have to wait
(``mbarrier.try_wait``, ``barrier.cluster.wait``, ``setmaxnreg``) is a block of its own (kind ``wait``):
when it cannot complete, its warp parks (``PARK[w]``) and runs it again once woken.
"""

from __future__ import annotations

from ..cluster import _MB_SEM, _MB_SPACE, _TENSOR_REF, _split_operands
from ..memory import PARAM_WINDOW
from .. import tma
from ..syntax import immediate_bits
from . import rt_tma
from .lower import _sx, row
from .rt import (ASSERT_FAILED, BRKPT, BULK_COPY, DIVERGED_BARRIER, PARTIAL_WARP, READ, SYNC_ERROR, TMA_DESCRIPTOR,
                 WRITTEN)
from .rt_sync import SPACE_CLUSTER, SPACE_CTA, SPACE_GENERIC

_SPACE, _SEM = _MB_SPACE, _MB_SEM         # the interpreter's spellings of the mbarrier state spaces and semantics


def _space(m):
    s = m["space"]
    return SPACE_GENERIC if s is None else (SPACE_CLUSTER if s == "shared::cluster" else SPACE_CTA)


def _target(o, where, space):
    """Lines setting ``_rk`` (rank << 32 | shared offset) of one lane's mbarrier operand ``[...]`` (a shared
    symbol's: its offset, whatever the space)."""
    if o.address(where)[1] == "symbol" and space == SPACE_GENERIC:
        space = SPACE_CTA
    return [f"_rk = rt_sync.target(status, {o.st.line}, t, {o.shared_address(where)}, {space}, CRANK, CS)",
            "if _rk < 0:", "    return 1"]


def _int(o, op, typ="u32"):
    return f"np.int64({o.src(op, typ)})"


@row(r"mbarrier\.init" + _SPACE + r"\.b64")
def _mb_init(o, m):
    a, count = o.need(2)
    return _target(o, a, _space(m)) + [
        f"if rt_sync.mb_init(status, {o.st.line}, t, MBO, MBS, SMEM_BYTES, _rk, {_int(o, count)}):", "    return 1"]


@row(r"mbarrier\.inval" + _SPACE + r"\.b64")
def _mb_inval(o, m):
    (a,) = o.need(1)
    return _target(o, a, _space(m)) + [
        f"if rt_sync.mb_inval(status, {o.st.line}, t, MBO, MBS, SMEM_BYTES, _rk):", "    return 1"]


@row(r"mbarrier\.(?P<op>arrive|arrive_drop)(?P<nc>\.noComplete)?(?P<tx>\.expect_tx)?" + _SEM + _SPACE + r"\.b64")
def _mb_arrive(o, m):
    ops = o.st.operands
    tx = bool(m["tx"])
    nmin, nmax = (3, 4) if tx else ((3, 3) if m["nc"] else (2, 3))
    if not nmin <= len(ops) <= nmax:
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    if _space(m) == SPACE_CLUSTER and ops[0] != "_":
        o.fail("mbarrier.arrive on a .shared::cluster address with a state destination")
    count = ops[3] if tx and len(ops) == 4 else (ops[2] if not tx and len(ops) == 3 else None)
    lines = _target(o, ops[1], _space(m)) + [
        f"_tok = rt_sync.mb_arrive(status, {o.st.line}, t, MBO, MBS, SMEM_BYTES, _rk, "
        f"{_int(o, count) if count is not None else 1}, {_int(o, ops[2]) if tx else -1}, "
        f"{m['op'] == 'arrive_drop'}, {bool(m['nc'])})", "if _tok < 0:", "    return 1"]
    if ops[0] != "_":
        lines.append(f"{o.dst(ops[0], 'b64')} = np.uint64(_tok)")
    return lines


@row(r"mbarrier\.(?P<op>expect_tx|complete_tx)" + _SEM + _SPACE + r"\.b64")
def _mb_tx(o, m):
    a, n = o.need(2)
    sign = 1 if m["op"] == "expect_tx" else -1
    return _target(o, a, _space(m)) + [
        f"if rt_sync.mb_tx(status, {o.st.line}, t, MBO, MBS, SMEM_BYTES, _rk, {_int(o, n)}, {sign}):", "    return 1"]


@row(r"mbarrier\.(?P<op>test_wait|try_wait)(?P<parity>\.parity)?" + _SEM + _SPACE + r"\.b64")
def _mb_wait(o, m):
    """A warp whose lanes' phases are not all complete parks on the first lane's barrier that is not: try_wait
    runs the statement again once that barrier's phase moves on (the interpreter's blocking try_wait);
    test_wait has written false and goes on from the next statement then (the interpreter parks a warp spinning
    on it, so that the others run)."""
    ops = o.st.operands
    try_ = m["op"] == "try_wait"
    if not 3 <= len(ops) <= 3 + try_:
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    if _space(m) == SPACE_CLUSTER:
        o.fail(f"{o.st.opcode} on a .shared::cluster barrier")
    value = o.src(ops[2], "u32" if m["parity"] else "b64")
    lines = ["PARK[w] = 0", "for l in range(32):", "    if act[l]:", "        t = w * 32 + l"]
    body = _target(o, ops[1], _space(m)) + [
        f"_ok = rt_sync.mb_test(status, {o.st.line}, t, MBO, MBS, SMEM_BYTES, _rk, np.int64({value}), "
        f"{bool(m['parity'])}, PARK, PSLOT, PPH, w)", "if _ok < 0:", "    return 1",
        f"{o.dst(ops[0], 'pred')} = _ok == 1"]
    if len(ops) == 4:
        o.src(ops[3], "u32")            # suspendTimeHint: read (a register must be declared), no effect
    return "wait" if try_ else "park", lines + ["        " + x for x in body]


def _whole_warp(o, aligned):
    """Lines failing like the interpreter's barrier.cluster when the executing lanes are not the warp's live
    lanes (.aligned; or some lanes only), and skipping a warp none of whose lanes executes it."""
    return ["_n = 0", "_bad = False", "for l in range(32):", "    _n += act[l]", "    _bad = _bad or act[l] != live[w, l]",
            f"if _bad and ({aligned} or _n > 0):",
            f"    return fail(status, {DIVERGED_BARRIER}, {o.st.line}, w * 32, np.uint64(0))"]


@row(r"barrier\.cluster\.(?P<op>arrive|wait)(?:\.(?:relaxed|release|acquire))?(?P<aligned>\.aligned)?")
def _cluster_barrier(o, m):
    o.need(0)
    wait = m["op"] == "wait"
    lines = (["PARK[w] = 0"] if wait else []) + _whole_warp(o, bool(m["aligned"])) + [
        "if not _bad:", f"    if rt_sync.cluster_barrier(status, {o.st.line}, CLA, CLS, PARK, w, {int(wait)}):",
        "        return 1"]
    return ("wait" if wait else "warp"), lines


@row(r"elect\.sync")
def _elect(o, m):
    """The lowest executing lane of the membermask leads (cluster._elect)."""
    d, mask = o.need(2)
    if not isinstance(d, str) or "|" not in d:
        o.fail(f"elect.sync destination {d!r}")
    d, p = (x.strip() for x in d.split("|"))
    lines = ["_lead = -1", "for l in range(32):", "    t = w * 32 + l",
             f"    if act[l] and _lead < 0 and (np.uint64({o.src(mask, 'b32')}) >> np.uint64(l)) & np.uint64(1):",
             "        _lead = l"]
    out = []
    if d != "_":
        out.append(f"{o.dst(d, 'b32')} = np.uint64(max(_lead, 0))")
    out.append(f"{o.dst(p, 'pred')} = l == _lead")
    return "warp", lines + ["for l in range(32):", "    if act[l]:", "        t = w * 32 + l"] + \
        ["        " + x for x in out]


@row(r"mapa(?:\.(?P<space>shared::cluster))?\.(?P<t>u32|u64)")
def _mapa(o, m):
    """(rank + 1) << 24 | offset (cluster._mapa's encoding); a generic address keeps its window."""
    d, a, b = o.need(3)
    t = m["t"]
    lines = [f"_r = np.int64({o.src(b, 'u32')})", "if _r >= CS:",
             "    status[4] = 19", f"    return fail(status, {SYNC_ERROR}, {o.st.line}, t, np.uint64(_r))",
             f"_a = np.uint64({o.src(a, t)})"]
    if m["space"] is None:
        lines += ["if _a < np.uint64(rt_sync.SHARED_WINDOW) or _a >= np.uint64(rt_sync.SHARED_WINDOW + 2**32):",
                  "    status[4] = 10", f"    return fail(status, {SYNC_ERROR}, {o.st.line}, t, _a)",
                  "_a = _a - np.uint64(rt_sync.SHARED_WINDOW)"]
    value = "(_a & np.uint64(0xFFFFFF)) | (np.uint64(_r + 1) << np.uint64(24))"
    if m["space"] is None:
        value = f"({value}) + np.uint64(rt_sync.SHARED_WINDOW)"
    return lines + [f"{o.dst(d, t)} = {value}"]


@row(r"setmaxnreg\.(?P<dir>inc|dec)\.sync\.aligned\.u32")
def _setmaxnreg(o, m):
    (n,) = o.need(1)
    v = immediate_bits(n, "u32", 32) if isinstance(n, str) and not n.startswith("%") else None
    if v is None or not 24 <= v <= 256 or v % 8:
        o.fail(f"setmaxnreg with {n!r} (an immediate register count in 24 .. 256, a multiple of 8)")
    return "wait", ["PARK[w] = 0", "if not rt_all(act):",
                    f"    return fail(status, {PARTIAL_WARP}, {o.st.line}, w * 32, np.uint64(0))",
                    f"if rt_sync.setmaxnreg(status, {o.st.line}, NREG, NRV, PARK, PPH, w, W, {v}, "
                    f"{m['dir'] == 'inc'}, NREG0):", "    return 1"]


#: statements with no effect on the words a kernel computes here: fences (the compiled engine runs a
#: cluster's warps one at a time, each memory access complete when it returns), bulk-copy groups (copies
#: complete when issued, as the interpreter's), prefetches and cache hints
_NO_EFFECT = (r"fence\.(?:proxy\.async(?:\.shared::(?:cta|cluster)|\.global)?|mbarrier_init\.release\.cluster|"
              r"(?:acq_rel|sc)\.(?:cta|cluster|gpu|sys))|membar\.(?:cta|gl|sys)|"
              r"cp\.async\.bulk\.commit_group|cp\.async\.bulk\.wait_group(?:\.read)?|"
              r"prefetch\.tensormap|prefetch(?:\.global|\.local)?\.L[12](?:::evict_\w+)?|griddepcontrol\.\w+|"
              r"cp\.async\.bulk\.prefetch(?:\.tensor\.[1-5]d\.L2\.global(?:\.tile)?|\.L2\.global)(?:\.L2::cache_hint)?")


@row(_NO_EFFECT)
def _no_effect(o, m):
    for op in o.st.operands:          # read what a register operand names (it must be declared)
        if isinstance(op, str) and op.startswith("%"):
            o.src(op, "u32" if o.ir.regs.get(op) == 32 else "u64")
    return []


@row(r"brkpt")
def _brkpt(o, m):
    o.need(0)
    return [f"return fail(status, {BRKPT}, {o.st.line}, t, np.uint64(0))"]


@row(r"inline\.assertfail")
def _assertfail(o, m):
    """A call of CUDA's __assertfail (inline.Flat turns it into this): the kernel stops, as the device's
    assert does; the interpreter reads the assertion's message and file."""
    return [f"return fail(status, {ASSERT_FAILED}, {o.st.line}, t, np.uint64(0))"]


# --- TMA: cp.async.bulk.tensor (rt_tma; the launch finds and decodes the descriptors: TMRAW, TMF) ---------



_REDUCE_OP = r"(?P<op>add|min|max|inc|dec|and|or|xor)"


def _whole(o):
    """The statement's operands with ``[map, {coords}]`` kept whole (cluster._split_operands)."""
    return _split_operands(o.st.text)


def _descriptor(o, ref, im2col=False):
    """Lines setting ``_d`` (the row of the launch's descriptor table) and TMC (the coordinates) of one lane's
    ``[tensorMap, {c0, ...}]`` (a tile tensormap, or an im2col one for ``im2col``)."""
    m = _TENSOR_REF.match(ref)
    if not m:
        o.fail(f"tensor operand {ref!r}")
    name, coords = m.group(1), [c.strip() for c in m.group(2).split(",")]
    if not 1 <= len(coords) <= 5:
        o.fail(f"{len(coords)} tensor coordinates")
    base, kind, off = o.address(f"[{name}]")
    if kind != "reg":
        o.fail(f"tensormap operand {name!r}")
    line = o.st.line
    return [f"_ta = np.uint64({base}) + np.uint64({off & 0xFFFFFFFFFFFFFFFF})",
            f"if np.uint64({PARAM_WINDOW}) <= _ta and _ta - np.uint64({PARAM_WINDOW}) + np.uint64(128) <= "
            "np.uint64(PARAMS.size):",
            f"    _tp = PARAMS.ctypes.data + np.int64(_ta - np.uint64({PARAM_WINDOW}))",
            "else:",
            f"    _tp = rt_global_at(status, {line}, t, BASES, SIZES, PTRS, TRK, TOFF, _ta, 128, {READ})",
            "    if _tp == 0:", "        return 1",
            "_d = rt_tma.find_descriptor(TMRAW, _tp)",
            "if _d < 0:", "    status[4] = 1", f"    return fail(status, {TMA_DESCRIPTOR}, {line}, t, _ta)",
            f"if TMF[_d, rt_tma.RANK] != {len(coords)}:", "    status[4] = 2",
            f"    return fail(status, {TMA_DESCRIPTOR}, {line}, t, np.uint64(TMF[_d, rt_tma.RANK]))",
            f"if TMF[_d, rt_tma.IM2COL] != {int(im2col)}:", f"    status[4] = {5 if im2col else 4}",
            f"    return fail(status, {TMA_DESCRIPTOR}, {line}, t, _ta)"] + \
        [f"TMC[{i}] = {_sx(o.src(c, 's32'), 32)}" for i, c in enumerate(coords)]


def _tma_scratch(o):
    o.scratch.append(("TMC", "np.zeros(5, np.int64)"))


@row(r"cp\.async\.bulk\.tensor\.(?P<dim>[1-5])d\.(?P<space>shared::cluster|shared::cta)\.global(?:\.tile)?"
     r"\.mbarrier::complete_tx::bytes(?P<mc>\.multicast::cluster)?(?P<hint>\.L2::cache_hint)?")
def _tma_load(o, m):
    """A box lands in the destination CTA's shared memory -- in each CTA of the ctaMask with .multicast::cluster,
    completing bytes on the mbarrier at the same offset there -- when issued (cluster._load_box)."""
    ops = _whole(o)
    if len(ops) != 3 + bool(m["mc"]) + bool(m["hint"]):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    _tma_scratch(o)
    space = SPACE_CLUSTER if m["space"] == "shared::cluster" else SPACE_CTA
    lines = _descriptor(o, ops[1])
    lines += [x.replace("_rk", "_rkd") for x in _target(o, ops[0], space)]
    lines += [x.replace("_rk", "_rkb") for x in _target(o, ops[2], space)]
    if m["hint"]:
        o.src(ops[-1], "b64")
    return lines + _land(o, "rt_tma.tile_load(status, {line}, t, TMF[_d], TMC, SMEM0 + {rank} * SMEM_BYTES, "
                         "SMEM_BYTES, _rkd & 0xFFFFFFFF, BASES, SIZES, PTRS, TRK, TOFF)", ops[3] if m["mc"] else None)


def _land(o, load, mask):
    """The lines of a box landing (``load``: the jitted call, {line} and {rank} to fill; it returns the bytes or
    -1) in the CTA at ``_rkd`` with its bytes completed on the mbarrier at ``_rkb`` -- or, with the ctaMask
    operand ``mask`` (.multicast::cluster), in each CTA of the mask at the same offsets."""
    line = o.st.line
    done = "rt_sync.mb_tx(status, {line}, t, MBO, MBS, SMEM_BYTES, {bar}, _n, -1)"
    if mask is None:
        return ["_n = " + load.format(line=line, rank="(_rkd >> 32)"), "if _n < 0:", "    return 1",
                "if " + done.format(line=line, bar="_rkb") + ":", "    return 1"]
    return [f"_mask = np.int64({o.src(mask, 'u16')}) & 0xFFFF",
            "if _mask == 0 or _mask >> CS:", "    status[4] = 3",
            f"    return fail(status, {TMA_DESCRIPTOR}, {line}, t, np.uint64(_mask))",
            "for _q in range(CS):", "    if (_mask >> _q) & 1:",
            "        _n = " + load.format(line=line, rank="_q"), "        if _n < 0:", "            return 1",
            "        if " + done.format(line=line, bar="(_q << 32) | (_rkb & 0xFFFFFFFF)") + ":",
            "            return 1"]


@row(r"cp\.(?P<red>reduce\.)?async\.bulk\.tensor\.(?P<dim>[1-5])d\.global\.shared::cta(?:\." + _REDUCE_OP + r")?"
     r"(?:\.tile)?\.bulk_group(?P<hint>\.L2::cache_hint)?")
def _tma_store(o, m):
    """The box of the CTA's shared memory to global memory when issued (cluster._tma_store); with cp.reduce,
    each element there becomes itself (op) the box's (tma.tile_reduce; the element type the tensormap's)."""
    ops = _whole(o)
    if len(ops) != 2 + bool(m["hint"]):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    if bool(m["red"]) != bool(m["op"]):
        o.fail(f"{o.st.opcode}: a reduction named without cp.reduce, or cp.reduce without one")
    _tma_scratch(o)
    if m["hint"]:
        o.src(ops[-1], "b64")
    lines = _descriptor(o, ops[0]) + [x.replace("_rk", "_rks") for x in _target(o, ops[1], SPACE_CTA)]
    call = "tile_store" if not m["op"] else "tile_reduce"
    op = f", {rt_tma.REDUCE_OPS.index(m['op'])}" if m["op"] else ""
    return lines + [f"if rt_tma.{call}(status, {o.st.line}, t, TMF[_d], TMC, SMEM0 + (_rks >> 32) * SMEM_BYTES, "
                    f"SMEM_BYTES, _rks & 0xFFFFFFFF, BASES, SIZES, PTRS, TRK, TOFF{op}) < 0:", "    return 1"]


# --- plain bulk copies: cp.async.bulk (rt_tma.bulk_check / bulk_copy; cluster._bulk_to_shared / _bulk_to_global) ---

def _global_address(o, where):
    """The uint64 expression of a ``[reg+imm]`` / ``[module variable+imm]`` global address."""
    base, kind, off = o.address(where)
    if kind == "symbol":
        if base not in o.ir.module_variables:
            o.fail(f"global address {where!r}")
        base = f"GSYM[{o.ir.module_variables.index(base)}]"
    return f"np.uint64({base}) + np.uint64({off & 0xFFFFFFFFFFFFFFFF})"


def _bulk_past(line, end):
    return [f"if {end} > SMEM_BYTES:", "    status[4] = 4", f"    return fail(status, {BULK_COPY}, {line}, t, np.uint64({end}))"]


@row(r"cp\.async\.bulk\.(?P<dst>shared::cluster|shared::cta)\.(?P<src>global|shared::cta)"
     r"\.mbarrier::complete_tx::bytes(?P<mc>\.multicast::cluster)?(?P<hint>\.L2::cache_hint)?")
def _bulk_to_shared(o, m):
    """``size`` bytes from global memory (or the CTA's shared memory) to the destination CTA's shared memory --
    each CTA of the ctaMask with .multicast::cluster -- completing them on the mbarrier at the same offset there,
    when issued."""
    ops = o.st.operands
    if len(ops) != 4 + bool(m["mc"]) + bool(m["hint"]):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    space = SPACE_CLUSTER if m["dst"] == "shared::cluster" else SPACE_CTA
    line = o.st.line
    lines = [f"_sz = {_int(o, ops[2])}"]
    lines += [x.replace("_rk", "_rkd") for x in _target(o, ops[0], space)]
    lines += [x.replace("_rk", "_rkb") for x in _target(o, ops[3], space)]
    if m["src"] == "global":
        lines += [f"_sa = {_global_address(o, ops[1])}",
                  f"if rt_tma.bulk_check(status, {line}, t, _rkd & 0xFFFFFFFF, _sa, _sz) < 0:", "    return 1",
                  f"_sp = rt_global_at(status, {line}, t, BASES, SIZES, PTRS, TRK, TOFF, _sa, _sz, {READ})",
                  "if _sp == 0:", "    return 1"]
    else:
        lines += [x.replace("_rk", "_rks") for x in _target(o, ops[1], SPACE_CTA)]
        lines += [f"if rt_tma.bulk_check(status, {line}, t, _rkd & 0xFFFFFFFF, _rks & 0xFFFFFFFF, _sz) < 0:",
                  "    return 1"] + _bulk_past(line, "(_rks & 0xFFFFFFFF) + _sz")
        lines.append("_sp = SMEM0 + (_rks >> 32) * SMEM_BYTES + (_rks & 0xFFFFFFFF)")
    if m["hint"]:
        o.src(ops[-1], "b64")
    land = ["rt_tma.bulk_copy(SMEM0 + {rank} * SMEM_BYTES + (_rkd & 0xFFFFFFFF), _sp, _sz)",
            f"if rt_sync.mb_tx(status, {line}, t, MBO, MBS, SMEM_BYTES, {{bar}}, _sz, -1):", "    return 1"]
    if not m["mc"]:
        return lines + _bulk_past(line, "(_rkd & 0xFFFFFFFF) + _sz") + \
            [x.format(rank="(_rkd >> 32)", bar="_rkb") for x in land]
    return lines + [f"_mask = np.int64({o.src(ops[4], 'u16')}) & 0xFFFF",
                    "if _mask == 0 or _mask >> CS:", "    status[4] = 3",
                    f"    return fail(status, {TMA_DESCRIPTOR}, {line}, t, np.uint64(_mask))"] + \
        _bulk_past(line, "(_rkd & 0xFFFFFFFF) + _sz") + \
        ["for _q in range(CS):", "    if (_mask >> _q) & 1:"] + \
        ["        " + x.format(rank="_q", bar="(_q << 32) | (_rkb & 0xFFFFFFFF)") for x in land]


#: cp.reduce.async.bulk's type suffixes (the interpreter's reading of them)
_BULK_TYPES = {"u32": "uint32", "s32": "int32", "u64": "uint64", "s64": "int64", "f32": "float32", "f16": "float16",
               "bf16": "bfloat16", "b32": "uint32", "b64": "uint64", "f64": "float64"}


@row(r"cp\.(?P<red>reduce\.)?async\.bulk\.global\.shared::cta\.bulk_group(?P<hint>\.L2::cache_hint)?"
     r"(?:\." + _REDUCE_OP + r"(?:\.noftz)?\.(?P<t>\w+))?")
def _bulk_to_global(o, m):
    """``size`` bytes of the CTA's shared memory to global memory when issued; with cp.reduce, each element of
    global memory becomes itself (op) the shared one's (tma.reduce_elements)."""
    ops = o.st.operands
    if len(ops) != 3 + bool(m["hint"]):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    if bool(m["red"]) != bool(m["op"]):
        o.fail(f"{o.st.opcode}: a reduction named without cp.reduce, or cp.reduce without one")
    if m["op"]:
        dtype = _BULK_TYPES.get(m["t"])
        if dtype not in rt_tma.REDUCE_DTYPES or dtype not in tma.REDUCE_TYPES[m["op"]]:
            o.fail(f"{o.st.opcode}: .{m['op']} of .{m['t']} (the interpreter refuses it when it runs)")
    line = o.st.line
    if m["hint"]:
        o.src(ops[-1], "b64")
    src = "SMEM0 + (_rks >> 32) * SMEM_BYTES + (_rks & 0xFFFFFFFF)"
    move = [f"rt_tma.bulk_copy(_gp, {src}, _sz)"] if not m["op"] else \
        [f"rt_tma.reduce_bytes({rt_tma.REDUCE_OPS.index(m['op'])}, {rt_tma.REDUCE_DTYPES.index(dtype)}, _gp, {src}, _sz)"]
    return [f"_sz = {_int(o, ops[2])}", f"_ga = {_global_address(o, ops[0])}"] + \
        [x.replace("_rk", "_rks") for x in _target(o, ops[1], SPACE_CTA)] + \
        [f"if rt_tma.bulk_check(status, {line}, t, _ga, _rks & 0xFFFFFFFF, _sz) < 0:", "    return 1"] + \
        _bulk_past(line, "(_rks & 0xFFFFFFFF) + _sz") + \
        [f"_gp = rt_global_at(status, {line}, t, BASES, SIZES, PTRS, TRK, TOFF, _ga, _sz, "
         f"{WRITTEN if not m['op'] else READ | WRITTEN})", "if _gp == 0:", "    return 1"] + move


@row(r"cp\.async\.bulk\.tensor\.(?P<dim>[3-5])d\.(?P<space>shared::cluster|shared::cta)\.global\.im2col"
     r"\.mbarrier::complete_tx::bytes(?P<mc>\.multicast::cluster)?(?P<hint>\.L2::cache_hint)?")
def _tma_im2col(o, m):
    """An im2col load (rt_tma.im2col_load; cluster._tma_im2col): the pixels land in the destination CTA's shared
    memory -- each CTA of the ctaMask with .multicast::cluster -- completing their bytes on the mbarrier."""
    ops = _whole(o)
    if len(ops) != 4 + bool(m["mc"]) + bool(m["hint"]):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    rank = int(m["dim"])
    offs = ops[3] if isinstance(ops[3], list) else [x.strip() for x in str(ops[3]).strip("{}").split(",") if x.strip()]
    if len(offs) != rank - 2:
        o.fail(f"a {rank}D im2col load with {len(offs)} offsets")
    _tma_scratch(o)
    o.scratch.append(("TMO", "np.zeros(3, np.int64)"))       # the offsets
    space = SPACE_CLUSTER if m["space"] == "shared::cluster" else SPACE_CTA
    lines = _descriptor(o, ops[1], im2col=True)
    lines += [f"TMO[{j}] = np.int64({o.src(x, 'u16')}) & 0xFFFF" for j, x in enumerate(offs)]
    lines += [x.replace("_rk", "_rkd") for x in _target(o, ops[0], space)]
    lines += [x.replace("_rk", "_rkb") for x in _target(o, ops[2], space)]
    if m["hint"]:
        o.src(ops[-1], "b64")
    return lines + _land(o, "rt_tma.im2col_load(status, {line}, t, TMF[_d], TMC, TMO, SMEM0 + {rank} * SMEM_BYTES, "
                         "SMEM_BYTES, _rkd & 0xFFFFFFFF, BASES, SIZES, PTRS, TRK, TOFF)", ops[4] if m["mc"] else None)
