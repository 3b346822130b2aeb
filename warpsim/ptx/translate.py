"""Which engine runs a kernel, and why: the front end of the PTX-to-native translator (issue 32).

``launch(..., engine=)`` takes ``None`` (the compiled kernel when the entry translates and its kernel is
built -- in this process or in the disk cache for this host -- else the interpreter; the environment
variable ``WARPSIM_PTX_ENGINE`` sets another default), ``"interpret"`` (the statement interpreter of
:mod:`warpsim.ptx.module`, the reference) or ``"compiled"`` (native code from :mod:`warpsim.ptx.native`,
built on its first launch: numba takes seconds to a minute per kernel, then the disk cache loads it).

**What is compiled** (:mod:`warpsim.ptx.native.lower` has the rows): integer add / sub / mul.lo /
mad.lo / mul.wide / mad.wide / and / or / xor / not / shl / shr / min / max / neg / abs / bfe on 16-,
32- and 64-bit types, predicate logic; f32 add / sub / mul (``.rn``), ``fma.rn`` / ``mad.rn``, min / max,
neg / abs, the ``mul`` / ``div.full`` / ``div.approx`` that ptxas contracts into the ``add`` / ``sub``
reading them (:mod:`warpsim.ptx.contraction`; not ``.ftz``); ``setp`` (every comparison, ``.and`` / ``.or`` / ``.xor``, ``p|q``) on integers and f32,
``selp``, scalar ``mov`` of registers, immediates, shared symbols and ``%tid`` / ``%ntid`` / ``%ctaid`` /
``%nctaid`` / ``%laneid`` / ``%warpid`` / ``%lanemask_*`` / ``%smid`` / ``%nsmid`` / ``%gridid`` and the shared sizes
(``%dynamic_smem_size``, ``%total_smem_size``, ``%aggr_smem_size``; not the clocks: the interpreter's count its
steps); integer ``cvt`` without ``.sat``, ``cvt.rn.f32`` of integers;
``ld.param`` of kernel parameters, ``ld`` / ``st`` (scalar, ``.v2``, ``.v4``) of the global and shared
spaces; ``bra`` with divergence, ``ret`` / ``exit``, ``bar.sync`` / ``barrier.sync`` with a barrier number;
``shfl.sync`` (up, down, bfly, idx) with the whole warp's membermask; the f32 special-function forms
``ex2`` / ``rcp`` / ``rsqrt`` / ``sqrt`` ``.approx``, ``div.full`` / ``div.approx`` (``.ftz`` or not); integer
``div`` / ``rem``; vector pack / unpack ``mov``; ``bfi``; ``ld`` / ``st`` of a type narrower than the register
(zero- / sign-extended); generic addresses (shared memory's window, else global), ``cvta.shared``; ``ld.param``
through a ``mov`` of a parameter's name; ``shfl.sync`` with a predicate destination or a register membermask,
``bar.warp.sync``, ``vote.sync``, ``redux.sync``; integer ``atom`` / ``red`` ``add`` / ``min`` / ``max`` / ``and`` /
``or`` / ``xor`` of the global, shared and generic spaces (the lanes in order, as the interpreter's), and ``exch`` /
``cas`` / ``inc`` / ``dec`` whose operands are immediates or constant registers (every lane the same update); calls of
``.func`` functions, inlined at each call site, and recursive ones (a body each, a stack of frames per warp of
at most ``rt.FRAME_DEPTH`` calls; not with ``.local`` variables) (:mod:`warpsim.ptx.native.inline`; not externs); local
memory: ``ld`` / ``st`` ``.local``, ``cvta.local`` / ``cvta.to.local`` and the local window of generic addresses (the
interpreter's layout of every function's ``.local`` variables, a callee's saved and restored around its calls);
``mul.hi`` of 16- and 32-bit integers.
f64 and conversions (:mod:`warpsim.ptx.native.lower_float`): ``add`` / ``sub`` / ``mul`` / ``fma`` (every rounding),
``div`` / ``rcp`` / ``sqrt`` ``.rn``, ``neg`` / ``abs``, ``setp``, ``rcp.approx.ftz`` / ``rsqrt.approx`` of f64; f32
``add`` / ``sub`` / ``mul`` / ``fma`` with ``.rz`` / ``.rm`` / ``.rp``, ``.ftz``, ``.sat`` (the soft-float core);
``cvt`` between f32 and f64 (narrowing ``.rn``), to the same float type (``.sat``, ``.ftz``, ``.rni`` ...), floats to
integers, integers to f64, f16 / bf16 to f32 / f64; f16 / bf16 / f16x2 / bf16x2 ``add`` / ``sub`` / ``mul`` / ``fma``
``.rn`` (``.ftz``, ``.sat``, ``.relu``), ``min`` / ``max`` (``.NaN``, ``.xorsign.abs``, ``.ftz``; f32 too) and ``neg`` /
``abs``.
The warp-level tensor-core path (:mod:`warpsim.ptx.native.lower_mma`): dense ``mma.sync`` of 32-bit
registers (and of 64-bit ones: f64, two words each) through the engine's own jitted kernels (:mod:`warpsim.engine.warp_mma_jit`, the plan of the
launch's arch), ``ldmatrix`` / ``stmatrix`` of shared memory, ``cp.async`` (completing at issue, as the
interpreter models it) with its ``commit_group`` / ``wait_group`` / ``wait_all``, ``prmt.b32``, 8-bit
``ld`` / ``st``, ``cvt.rn.{f16,bf16}[x2].f32``, ``fma.rn.ftz.f32``.
The warpgroup path (:mod:`warpsim.ptx.native.lower_wgmma`): dense ``wgmma.mma_async`` of f16 / bf16 (A from
registers or a descriptor), tf32, fp8 and 8-bit integer types (A from a descriptor), with ``wgmma.fence`` /
``commit_group`` / ``wait_group`` and ``fence.proxy.async``: each warp computes its 16 rows of D at issue; the
hazard checks stay the interpreter's, so ``wgmma_strict=True`` launches run there.
``wmma.load`` / ``wmma.store`` (global, shared) and ``wmma.mma`` with 32-bit C and D
(:mod:`warpsim.ptx.native.lower_wmma`): the captured fragment layouts, the engine's ``mma.sync`` tiles.
Hopper's kernel-level statements (:mod:`warpsim.ptx.native.lower_sync` over ``rt_sync`` / ``rt_tma``): clusters
(a cluster's CTAs run together; ``mapa``, ``.shared::cluster`` loads and stores, ``barrier.cluster``), named
barriers with thread counts (``bar.sync`` / ``bar.arrive``), mbarriers (``init`` / ``inval``, ``arrive`` with
``expect_tx`` / ``drop`` / ``noComplete``, ``expect_tx`` / ``complete_tx``, the blocking ``try_wait``, ``test_wait``),
``cp.async.bulk.tensor`` tile loads (multicast too) and stores, im2col loads, plain ``cp.async.bulk`` copies (global or shared
to shared, multicast too, and shared to global), ``cp.reduce.async.bulk`` and ``.tensor`` reductions (every op and
type the interpreter takes), bulk-copy groups and prefetches, ``elect.sync``,
``setmaxnreg``, fences and prefetches, ``brkpt`` and CUDA's ``__assertfail``.

**What falls back to the interpreter**, with a :class:`TranslationFallbackWarning` when
``engine="compiled"`` was asked for and the reason in ``Module.last_engine``: any other form (the reason
names the first statement and its class: other rounding / ``.ftz`` ALU forms, other conversions, the generic addresses of the parameter window, the
order-dependent atomics (``exch`` / ``cas`` / ``inc`` / ``dec`` with lane-varying operands, float adds), sparse /
block-scaled ``mma``, ``wmma`` with f16 C and f32 D or the reverse, other ``wgmma`` forms, ``tensormap.replace`` (descriptors the kernel writes), recursive functions with ``.local`` variables, ...), a
launch arch whose ``mma`` plan
takes another engine path than the kernel was generated for, and hosts whose FPU is not in round-to-nearest
with subnormals kept.  Words
never depend on the engine: tests/test_ptx_native.py compares them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ENGINES = (None, "interpret", "compiled")

#: statement classes of which the native code generator translates forms (warpsim.ptx.native.lower)
NATIVE_CLASSES: frozenset = frozenset({"alu", "compare-select", "move", "convert", "memory", "branch", "barrier",
                                       "warp", "special-function", "tensor-core", "async-copy"})

#: (class, opcode pattern), first match wins
_CLASSES = (
    ("branch", r"bra\b|brx\.|call\b|ret\b|exit\b"),
    ("barrier", r"bar\b|bar\.|barrier\b|barrier\."),
    ("mbarrier", r"mbarrier\.|fence\.|elect\.|setmaxnreg\.|griddepcontrol\."),
    ("tensor-core", r"mma\.|wmma\.|wgmma\.|tcgen05\.|ldmatrix\.|stmatrix\.|movmatrix\."),
    ("async-copy", r"cp\.|prefetch|discard\.|applypriority\.|createpolicy\."),
    ("memory", r"ld\.|st\.|ldu\.|atom\.|red\.|multimem\.|mapa\b|mapa\.|cvta\.|isspacep\."),
    ("warp", r"shfl\.|vote\.|match\.|redux\.|activemask\b"),
    ("special-function", r"(ex2|lg2|sin|cos|tanh|rsqrt|rcp|sqrt|div)\.(approx|full|rn|rz|rm|rp)"),
    ("convert", r"cvt\.|cvt\b"),
    ("compare-select", r"setp\.|selp\.|set\.|slct\."),
    ("move", r"mov\.|mov\b"),
)
_MATCHERS = tuple((name, re.compile(pat)) for name, pat in _CLASSES)


def statement_class(opcode: str) -> str:
    """The class of a statement's opcode (the unit the code generator takes); "alu" for the rest."""
    for name, rx in _MATCHERS:
        if rx.match(opcode):
            return name
    return "alu"


@dataclass(frozen=True)
class Translation:
    """What the translator makes of one entry: native (True: compiled code runs it), the reason
    when not, the number of statements of each class (entry and every .func it may call), and the
    IR the code generator takes (:class:`warpsim.ptx.native.ir.KernelIR`; None when not native)."""

    entry: str
    native: bool
    reason: str | None
    classes: dict = field(default_factory=dict)
    ir: object = field(default=None, repr=False, compare=False)

    def ready(self, threads=None) -> bool:
        """Whether the compiled kernel is at hand: built in this process, or in the disk cache for this
        host (engine=None runs it then; building it is engine="compiled"'s first launch), for runs of
        ``threads`` threads (a block's, times the CTAs of a cluster; None: for some launch shape -- a
        kernel is compiled once per shape)."""
        if self.ir is None:
            return False
        from .native.kernel import is_built

        return is_built(self.ir, threads)


def translate(prog) -> Translation:
    """The translation of a decoded program (``Module.program(entry)``)."""
    from .native.ir import translate_ir

    classes: dict = {}
    for st in prog.code:
        c = statement_class(st.opcode)
        classes[c] = classes.get(c, 0) + 1
    ir, why = translate_ir(prog)
    if ir is not None:
        return Translation(prog.entry.name, True, None, classes, ir)
    reason, st = why
    where = (f" (line {st.line}, {st.text.strip()!r}, a {statement_class(st.opcode)!r} statement)"
             if st is not None else "")
    return Translation(prog.entry.name, False, f"{prog.entry.name}: the native translator does not take it{where}: "
                       f"{reason} (warpsim.ptx.translate)", classes)


class TranslationFallbackWarning(UserWarning):
    """engine="compiled" was asked for, and the kernel runs on the interpreter (the reason says why)."""


def check_engine(engine):
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
