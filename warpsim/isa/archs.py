"""Which catalog opcodes each target architecture has, derived from the one catalog.

An opcode is available on a target when the catalog's lowest-sm column
(:attr:`Instruction.min_sm`) is at most the target's sm number, unless the
target is listed in :data:`EXCEPTIONS` for that opcode (a form removed or
restricted on a later target).  Nothing here lists opcodes per architecture by
hand.

Cross-checked against ptxas for every target (``warpsim/hw/offline/ptxas_archs.py`` writes
``tests/golden/ptxas_archs.json.xz``; ``tests/test_archs.py`` compares it with this
derivation, and with a live ptxas where one is installed): ptxas 13.0 for sm_75
to sm_120 (with and without the ``a`` suffix), the CUDA 12.9 ptxas for sm_70
(ptxas 13 no longer targets it).  Every ``mma``/``mma.sp`` opcode of the catalog
is accepted by every target at or above its lowest sm, and rejected below it;
no target needs the ``a`` suffix for any of them, so :data:`EXCEPTIONS` is empty.
Two things do depend on the suffix: ``wgmma.mma_async`` exists on sm_90a only, and
sm_100a / sm_103a / sm_110a also assemble 80 sm_120a ``.kind::`` spellings as their legacy
fp8 twins (:func:`ptxas_also_accepts`).  tests/golden/ptxas/spellings.json.xz has ptxas's
verdict on every catalog opcode for every target.
"""

from __future__ import annotations

from .catalog import CATALOG, Instruction

#: The modelled targets, oldest first, with the GPUs people know them by.
TARGETS: dict[str, str] = {
    "sm_70": "Volta (V100)",
    "sm_75": "Turing (T4, RTX 20xx)",
    "sm_80": "Ampere (A100, A30)",
    "sm_86": "Ampere (RTX 30xx, A10, A40)",
    "sm_89": "Ada Lovelace (L4, L40, RTX 40xx)",
    "sm_90": "Hopper (H100, H200)",
    "sm_100": "Blackwell (B200)",
    "sm_120": "Blackwell (RTX 50xx, RTX PRO)",
    # the arch-specific target: sm_120 plus the kind:: forms (f8f6f4, mxf8f6f4, mxf4, mxf4nvf4) that
    # ptxas 13.0 accepts only for sm_120a / sm_121a (catalog rows with ``targets``)
    "sm_120a": "Blackwell (RTX 50xx, RTX PRO), arch-specific: + kind:: fp4/fp6/fp8 and block-scaled mma",
}

#: Spellings accepted as another target: sm_90a and sm_100a run the same ``mma``/``mma.sp``
#: opcodes as sm_90 / sm_100 (ptxas accepts exactly the same set of catalog opcodes); sm_121a
#: (GB10) accepts exactly sm_120a's set.  sm_120a itself is a target of its own (the kind:: forms).
#: sm_103a (B300) and sm_110a (Thor) accept exactly sm_100a's set (ptxas 13.0, tests/golden/ptxas_archs.json.xz).
ALIASES: dict[str, str] = {"sm_90a": "sm_90", "sm_100a": "sm_100", "sm_103a": "sm_100", "sm_110a": "sm_100",
                           "sm_121a": "sm_120a"}

#: the datacenter-Blackwell arch-specific targets (see :func:`ptxas_also_accepts`)
LENIENT_KIND_TARGETS = ("sm_100a", "sm_103a", "sm_110a")
#: the only target with ``wgmma.mma_async`` (ptxas refuses it for sm_90 and every later target)
WGMMA_TARGET = "sm_90a"

#: opcode -> targets (at or above its lowest sm) that nevertheless do not have it.
#: Empty: ptxas 13.0 / 12.9 accept every catalog opcode on every target from its lowest sm up.
EXCEPTIONS: dict[str, frozenset] = {}


def sm_number(arch: str) -> int:
    return int(arch[3:].rstrip("af"))


def canonical(arch) -> str:
    """The modelled target an ``arch`` string names (``"sm_90a"`` -> ``"sm_90"``); ValueError otherwise."""
    if isinstance(arch, str):
        a = arch.strip().lower()
        a = ALIASES.get(a, a)
        if a in TARGETS:
            return a
    raise ValueError(f"arch {arch!r} is not a modelled target; targets: {', '.join(TARGETS)} "
                     f"(also {', '.join(ALIASES)})")


def available(ins: Instruction, arch: str) -> bool:
    """Whether ptxas accepts this opcode for the target."""
    if ins.is_wgmma:
        canonical(arch)   # a known target name
        return arch.strip().lower() == WGMMA_TARGET
    if ptxas_also_accepts(ins, arch):
        return True
    arch = canonical(arch)
    if ins.targets:   # arch-specific forms (sm_120a kind::): only on the targets the row names
        return arch in ins.targets
    return ins.min_sm <= sm_number(arch) and arch not in EXCEPTIONS.get(ins.opcode, ())


def ptxas_also_accepts(ins: Instruction, arch: str) -> bool:
    """sm_120a catalog opcodes that ptxas 13.0 also assembles for a datacenter-Blackwell target.

    sm_100a (not sm_100; also sm_103a and sm_110a) accepts the sm_120a kind:: spellings on e4m3/e5m2
    operands without ``.block_scale`` (except sparse f16 accumulate): ptxas ignores the ``.kind`` and
    emits the target's legacy fp8 ``mma`` -- the cubin is byte for byte the legacy opcode's (checked for
    all 80 on the three targets).  warpsim accepts them there and runs them as that twin
    (:func:`as_assembled`); tests/golden/ptxas_archs.json.xz records them.
    """
    canonical(arch)   # a known target name
    return (arch.strip().lower() in LENIENT_KIND_TARGETS and bool(ins.targets) and not ins.block_scaled
            and {ins.atype, ins.btype} <= {"e4m3", "e5m2"} and not (ins.is_sparse and ins.dtype == "f16"))


def as_assembled(ins: Instruction, arch: str) -> Instruction:
    """The catalog entry ptxas actually emits for ``ins`` on ``arch``: on sm_100a / sm_103a / sm_110a a
    ``.kind::`` spelling of :func:`ptxas_also_accepts` assembles to the same cubin as its legacy fp8
    twin (the opcode without ``.kind``; checked for all 80 such opcodes on the three targets), so it
    runs as that twin there; anything else is ``ins`` itself."""
    if isinstance(arch, str) and ptxas_also_accepts(ins, arch):
        import re

        from .catalog import BY_OPCODE

        return BY_OPCODE[re.sub(r"\.kind::\w+", "", ins.opcode)]
    return ins


def lowest_target(ins: Instruction) -> str | None:
    """The oldest modelled target that has the opcode."""
    for t in TARGETS:
        if available(ins, t):
            return t
    return None


def catalog_for(arch: str) -> tuple[Instruction, ...]:
    """Every catalog opcode the target has, in catalog order."""
    return tuple(ins for ins in CATALOG if available(ins, arch))


def require(ins: Instruction, arch: str) -> str:
    """The canonical target name; ValueError naming the lowest target that has ``ins`` if ``arch`` lacks it."""
    a = canonical(arch)
    if ins.is_wgmma and not available(ins, arch):
        raise ValueError(f"{ins.opcode} is not available on {arch}: ptxas accepts wgmma.mma_async for "
                         f"{WGMMA_TARGET} only")
    if not ins.is_wgmma and not available(ins, arch):
        low = lowest_target(ins)
        raise ValueError(f"{ins.opcode} is not available on {a} ({TARGETS[a]}): ptxas rejects it there; "
                         f"the lowest target that has it is {low} ({TARGETS[low]})")
    return a
