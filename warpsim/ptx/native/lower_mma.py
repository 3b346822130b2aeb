"""The native translator's rows of the warp-level tensor-core path (issue 32): ``mma.sync``, ``ldmatrix`` /
``stmatrix`` of shared memory, ``cp.async``, the byte permute of the 8-bit GEMMs (``prmt.b32``), and what the
attention kernels around them need (``cvt.rn.{f16,bf16}[x2].f32``, ``fma.rn.ftz.f32``).

They register into :data:`warpsim.ptx.native.lower.ROWS`.  Each is the interpreter's row restated:

* ``mma.sync`` (dense, unscaled, 32-bit registers) is a warp statement calling the engine's own jitted kernel
  for its plan (:mod:`warpsim.engine.warp_mma_jit`): the path (integer, tensor-core, generic) is fixed when the
  kernel is generated, the plan's tables are a kernel argument of each launch, chosen by the launch's arch
  (``Lowered.launch_args``); an arch whose plan takes another path runs on the interpreter, but for the generic
  path (the exact kernel gives any plan's words), which tf32 ``mma.sp`` always takes (metadata that splices B's
  halves is the exact kernel's);
* ``ldmatrix`` / ``stmatrix``: lanes 8i..8i+7 give matrix i's row addresses (16-byte aligned, inside the CTA's
  shared memory); lane l holds row l/4, columns 2(l%4) and 2(l%4)+1 of each matrix (``.trans``: of its
  transpose), as ``instructions._frag_from_matrix``;
* ``cp.async`` completes at issue and ``commit_group`` / ``wait_group`` / ``wait_all`` do nothing: the
  interpreter's model (``instructions._cp_async``; reading the destination before the wait is undefined in
  PTX, so no program can tell), hence its words.  The source is read only where src-size is not zero, byte by
  byte when partial; the rest of the cp-size bytes are zeros.
"""

from __future__ import annotations

import hashlib
import os

from ..syntax import parse_int
from .lower import Untranslatable, int_tuple, row, sparse_operands
from .rt import PARTIAL_WARP

_IMPORTS = ("from warpsim.ptx.native.rt_tc import (cp_async as rt_cp_async, ldmatrix as rt_ldmatrix, "
            "mma_generic as rt_mma_generic,\n    mma64_generic as rt_mma64_generic, mma_int as rt_mma_int, "
            "mma_int_sparse as rt_mma_int_sparse,\n    mma_tc as rt_mma_tc, mma_tc_sparse as rt_mma_tc_sparse, "
            "mma_generic_sparse as rt_mma_generic_sparse, scratch_generic_sparse as rt_scratch_generic_sparse,\n    "
            "mma_generic_scaled as rt_mma_generic_scaled, scratch_generic_scaled as rt_scratch_generic_scaled,\n    "
            "scratch_generic as rt_scratch_generic, scratch_int as rt_scratch_int,\n    scratch_int_sparse as "
            "rt_scratch_int_sparse, scratch_tc_by_symbol as rt_scratch_tc, scratch_tc_sparse as rt_scratch_tc_sparse,\n    "
            "stmatrix as rt_stmatrix)")
#: the archs tried, in order, for the path a kernel is generated for (every one with a recipe takes the same
#: path for the forms of the captured kernels; another launch arch is checked at launch)
_PATH_ARCHS = ("sm_90", "sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a")
_DIGEST: list = []


def _engine_digest():
    """A comment line with the digest of the engine sources the kernel's mma calls compile in: numba's cache
    of a generated kernel does not see its callees change, its source (the cache key) then does."""
    if not _DIGEST:
        pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        h = hashlib.sha256()
        for sub in ("engine", os.path.join("engine", "tc"), "numerics"):
            d = os.path.join(pkg, sub)
            for f in sorted(x for x in os.listdir(d) if x.endswith(".py")):
                with open(os.path.join(d, f), "rb") as fh:
                    h.update(fh.read())
        _DIGEST.append(f"# engine sources: {h.hexdigest()[:16]}")
    return _DIGEST[0]


def _plan(opcode, arch, selector=0):
    """The engine's plan of ``opcode`` (sparse: with its sparsity ``selector``) launched for ``arch`` (as
    warp_mma.validate resolves it)."""
    from ...engine import kernel
    from ...isa.archs import as_assembled
    from ...isa.parse import parse
    from ...numerics.arch import check_arch

    a = check_arch(arch)
    return kernel.plan(as_assembled(parse(opcode, arch=arch), arch).opcode, selector, a)


def engine_path(o, op):
    """The engine path (warp_mma_jit.path: integer, tensor-core, generic) the kernel is generated for: the first
    arch of _PATH_ARCHS with a recipe for mma opcode ``op``."""
    from ...engine import warp_mma_jit

    for arch in _PATH_ARCHS:
        try:
            return warp_mma_jit.path(_plan(op, arch))
        except (ValueError, KeyError):
            continue
    o.fail(f"{op} has no recipe")


def mma_values(opcode, path, arch, registers=False, selector=0):
    """The launch argument of an mma statement: its plan's constant arguments for ``arch`` (``registers``: for
    rt_tc's mma_<path>, which gathers the registers itself: of the float tensor-core path's, the ones it takes;
    ``selector``: an mma.sp's sparsity selector)."""
    from ...engine import warp_mma_jit

    try:
        pl = _plan(opcode, arch, selector)
    except (ValueError, KeyError) as exc:
        raise Untranslatable(f"{opcode} on {arch}: {exc}") from None
    if path != "generic" and warp_mma_jit.path(pl) != path:
        raise Untranslatable(f"{opcode} takes the engine's {warp_mma_jit.path(pl)} path on {arch}; the compiled "
                             f"kernel calls its {path} path")
    args = warp_mma_jit.call_args(pl, generic=path == "generic")      # (the exact kernel: any plan's words)
    return args[:warp_mma_jit.TC_REGISTER_ITEMS] if registers and path == "tc" else args


class _Values:
    """values(arch) of one mma.sync / mma.sp opcode's launch argument (a named callable: the IR keeps it)."""

    def __init__(self, opcode, path, selector=0):
        self.opcode, self.path, self.selector = opcode, path, selector

    def __call__(self, arch):
        return mma_values(self.opcode, self.path, arch, registers=True, selector=self.selector)


def _checked(call, line):
    """Lines running a helper of :mod:`.rt_tc` that returns 0 or a status word (code << 8 | lane)."""
    return [f"_e = {call}", "if _e:",
            f"    return fail(status, _e >> 8, {line}, base + (_e & 255), SHV[_e & 255] if _e >> 8 != {PARTIAL_WARP} "
            "else np.uint64(0))"]


def _register_rows(o, regs, write, bits=32):
    """The tuple of register rows (rt_tc's ``regs``, in the file of ``bits``) of a register list, read or written."""
    for r in regs:
        o.dst(r, f"b{bits}") if write else o.src(r, f"b{bits}")
        if r not in o.ir.index:
            o.fail(f"operand {r!r} (a register list of registers only is translated)")
    return int_tuple(o.ir.index[r] for r in regs)


def _lanes(body, n=32):
    return [f"for l in range({n}):", "    t = base + l", *("    " + x for x in body)]


@row(r"mma\.(?:sync|sp(?:::ordered_metadata)?\.sync)\.aligned\.m\d+n\d+k\d+\.row\.col(?:\.[\w:]+)+")
def _mma(o, m):
    from ...isa.parse import parse

    op = o.st.opcode
    try:
        ins = parse(op)
    except ValueError as exc:
        o.fail(str(exc))
    wide = all(ins.elem(r).bits == 64 for r in "abcd")
    if not wide and any(ins.elem(r).bits == 64 for r in "abcd"):
        o.fail(f"{op}: a form mixing 64-bit and narrower operands")
    path = engine_path(o, op)
    # metadata that splices B's halves takes the exact kernel: all of tf32's; block-scaled forms: the exact kernel
    # with the warp's scale bits (the interpreter's fast path, where it applies, gives its words)
    if (ins.is_sparse and ins.atype == "tf32") or ins.block_scaled:
        path = "generic"
    if wide and path != "generic":
        o.fail(f"{op}: a 64-bit form on the engine's {path} path")
    nops = 6 if ins.is_sparse else 4
    ops = o.need(nops + (4 if ins.block_scaled else 0))
    sel, erow = sparse_operands(o, ins, ops[4], ops[5]) if ins.is_sparse else (0, None)
    regs = {}
    for role, x in zip("dabc", ops[:4]):
        regs[role] = x if isinstance(x, list) else [x]
        if len(regs[role]) != ins.registers(role):
            o.fail(f"operand {role.upper()} of {op} needs {ins.registers(role)} registers")
    rows = {r: _register_rows(o, regs[r], r == "d", 64 if wide else 32) for r in "abcd"}
    name = f"MMA_{hashlib.sha256(f'{op} {sel}'.encode()).hexdigest()[:10]}"
    o.prelude += [_IMPORTS, _engine_digest()]
    o.launch_args.append((name, _Values(op, path, sel)))
    words = ", ".join(str(len(regs[r]) * (2 if wide else 1)) for r in "abcd")
    kind = "generic_scaled" if ins.block_scaled else f"{path}_sparse" if ins.is_sparse else path
    o.scratch.append((f"{name}_S", f"rt_scratch_{kind}({name}, {words}{f', {ins.nscale}' if ins.block_scaled else ''})"))
    call, file = ("rt_mma64_", "R64") if wide else ("rt_mma_", "R32")
    more = f", np.int64({erow})" if ins.is_sparse else ""
    if ins.block_scaled:
        more = (more or ", np.int64(-1)") + _scale_operands(o, ins, ops[nops:])
    return "warp", _checked(f"{call}{kind}({name}, {name}_S, {file}, base, act, {rows['a']}, {rows['b']}, "
                            f"{rows['c']}, {rows['d']}{more})", o.st.line)


def _scale_operands(o, ins, ops):
    """A block-scaled form's scale-a register, {byte-id-a, thread-id-a}, scale-b register, {byte-id-b, thread-id-b},
    as the interpreter reads them (engine.warp_mma.validate_scales): the call's arguments after the metadata row."""
    rows, sels = [], []
    bytes_ok, ta, tb = ins.scale_selectors()
    for (reg, pair), who, tids in zip((ops[0:2], ops[2:4]), "ab", (ta, tb)):
        if not isinstance(reg, str) or reg not in o.ir.index or o.ir.regs.get(reg) != 32:
            o.fail(f"the scale-{who} operand {reg!r} of {ins.opcode} (a 32-bit register is translated)")
        o.src(reg, "b32")
        rows.append(o.ir.index[reg])
        vals = [parse_int(x) if isinstance(x, str) else None for x in pair] if isinstance(pair, list) else []
        if len(vals) != 2 or vals[0] not in bytes_ok or vals[1] not in tids:
            o.fail(f"the scale selectors {pair!r} of {who.upper()} in {ins.opcode}: {{byte-id-{who}, thread-id-{who}}}, "
                   f"immediates in {list(bytes_ok)} and {list(tids)} (the interpreter reports others)")
        sels += vals
    return f", np.int64({rows[0]}), np.int64({rows[1]}), ({', '.join(f'np.int64({v})' for v in sels)})"


def _row_addresses(o, where, n):
    """Lines putting the 8n row addresses of an ldmatrix / stmatrix (lanes 0..8n-1) into SHV."""
    return _lanes([f"SHV[l] = {o.shared_address(where)}"], 8 * n)


_MATRIX = r"(?P<op>ldmatrix|stmatrix)\.sync\.aligned(?P<quals>(?:\.(?:m8n8|x[124]|trans)){2,3})\.shared(?:::cta)?\.b16"


@row(_MATRIX)
def _matrix(o, m):
    q = m["quals"].split(".")[1:]
    xs = [x for x in q if x.startswith("x")]
    if q.count("m8n8") != 1 or len(xs) != 1 or q.count("trans") > 1:
        o.fail(f"{o.st.opcode}: the qualifiers are .m8n8, one of .x1/.x2/.x4 and optionally .trans, each once")
    n, trans, load = int(xs[0][1:]), "trans" in q, m["op"] == "ldmatrix"
    ops = o.need(2)
    regs, where = (ops[0], ops[1]) if load else (ops[1], ops[0])
    regs = regs if isinstance(regs, list) else [regs]
    if len(regs) != n:
        o.fail(f"{o.st.opcode} moves {n} matrices: it lists {n} registers")
    o.prelude.append(_IMPORTS)
    return "warp", _row_addresses(o, where, n) + _checked(
        f"rt_{m['op']}(R32, base, act, {_register_rows(o, regs, load)}, SMEMP, SMEM_BYTES, SHV, {trans})", o.st.line)


@row(r"cp\.async\.(?P<cache>ca|cg)\.shared(?:::cta)?\.global(?:\.L2::(?:64|128|256)B)?")
def _cp_async(o, m):
    ops = o.st.operands
    if len(ops) not in (3, 4):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    n = parse_int(str(ops[2]))
    if n not in (4, 8, 16) or (m["cache"] == "cg" and n != 16):
        o.fail(f"{o.st.opcode} with cp-size {ops[2]!r}")
    if len(ops) == 3:
        size = f"np.uint64({n})"
    elif isinstance(ops[3], str) and o.ir.regs.get(ops[3].lstrip("!")) == 1:       # ignore-src predicate
        size = f"np.uint64(0) if {o.src(ops[3], 'pred')} else np.uint64({n})"
    else:
        size = f"np.uint64({o.src(ops[3], 'u32')})"
    dst, dkind, doff = o.address(ops[0])
    src, skind, soff = o.address(ops[1])
    if skind != "reg":
        o.fail(f"source address {ops[1]!r}")
    if dkind == "symbol":
        if dst not in o.ir.shared_symbols:
            o.fail(f"address {ops[0]!r}")
        dst = f"np.uint64({o.ir.shared_symbols[dst]})"
    o.prelude.append(_IMPORTS)
    return "warp", _lanes([f"SHV[l] = np.uint64({dst}) + np.uint64({doff & 0xFFFFFFFFFFFFFFFF})",
                           f"SHJ[l] = np.int64(np.uint64({src}) + np.uint64({soff & 0xFFFFFFFFFFFFFFFF}))",
                           f"SO[l] = {size}"]) + \
        _checked(f"rt_cp_async(act, SHV, SHJ, SO, {n}, SMEMP, SMEM_BYTES, BASES, SIZES, PTRS, TRK, TOFF)", o.st.line)


@row(r"cp\.async\.(?:commit_group|wait_group|wait_all)")
def _cp_async_group(o, m):
    """Copies complete at issue (the module docstring): nothing to wait for."""
    return "warp", []


@row(r"prmt\.b32")
def _prmt(o, m):
    """Default mode: byte i of d is byte c[4i+2:4i] of {b, a} (a the low word), or its sign replicated when
    bit 4i+3 of c is set."""
    d, a, b, c = o.need(4)
    lines = [f"_x = {o.src(a, 'b32')} | ({o.src(b, 'b32')} << np.uint64(32))", f"_c = {o.src(c, 'b32')}",
             "_o = np.uint64(0)"]
    for i in range(4):
        lines += [f"_s = (_c >> np.uint64({4 * i})) & np.uint64(15)",
                  "_y = (_x >> ((_s & np.uint64(7)) * np.uint64(8))) & np.uint64(255)",
                  "if _s & np.uint64(8):",
                  "    _y = np.uint64(255) if _y & np.uint64(128) else np.uint64(0)",
                  f"_o |= _y << np.uint64({8 * i})"]
    return lines + [f"{o.dst(d, 'b32')} = _o"]


_HALF = {"f16": (5, 10), "bf16": (8, 7)}
_CVT_IMPORT = "from warpsim.ptx.native.rt_tc import f32_to_half as rt_f32_to_half, flush32 as rt_flush32"


@row(r"cvt\.rn\.(?P<dt>f16|bf16)(?P<x2>x2)?\.f32")
def _cvt_half(o, m):
    """f32 -> f16 / bf16 rounded to nearest even (NaN: the canonical 0x7fff); the x2 forms pack the first
    source in the upper half (the operands of an mma built from f32 values)."""
    eb, mb = _HALF[m["dt"]]
    o.prelude.append(_CVT_IMPORT)
    if m["x2"]:
        d, a, b = o.need(3)
        hi, lo = (f"rt_f32_to_half({o.src(x, 'f32')}, {eb}, {mb}, 32767)" for x in (a, b))
        return [f"{o.dst(d, 'b32')} = ({hi} << np.uint64(16)) | {lo}"]
    d, a = o.need(2)
    return [f"{o.dst(d, 'b16')} = rt_f32_to_half({o.src(a, 'f32')}, {eb}, {mb}, 32767)"]


@row(r"(?:fma|mad)\.rn\.ftz\.f32")
def _fma_ftz(o, m):
    """The host's fma on the flushed operands, its result flushed (the interpreter's float_ops.fma, .ftz)."""
    d, a, b, c = o.need(4)
    x, y, z = (f"rt_f32(rt_flush32({o.src(v, 'f32')}))" for v in (a, b, c))
    o.prelude.append(_CVT_IMPORT)
    return [f"{o.dst(d, 'f32')} = rt_flush32(rt_w32(fma_native({x}, {y}, {z})))"]
