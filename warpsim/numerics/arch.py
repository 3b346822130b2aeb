"""Per-architecture registry: which dot-product kind and parameters each catalog family uses.

An architecture is a table from catalog family to a recipe source; the recipe
sources themselves are data tables in :mod:`warpsim.numerics.recipes` (tensor-core
path), :mod:`warpsim.numerics.chain` (compiler-emulated FMA chains and DMMA) and
:mod:`warpsim.numerics.integer` (integer and b1).  Adding an architecture is adding
a row here and its parameter tables there.
"""

from __future__ import annotations

from ..isa.catalog import Instruction

#: arch -> family -> dot-product kind ("int", "tc", "chain").  A family an architecture lacks
#: is simply absent (the catalog, :mod:`warpsim.isa.archs`, refuses its opcodes first).
_INT = {"int8": "int", "int4": "int", "b1": "int"}
_HMMA = {"f16": "tc", "bf16": "tc", "tf32": "tc"}
ARCHS: dict[str, dict[str, str]] = {
    "sm_90": {
        "int8": "int", "int4": "int", "b1": "int",
        "f16": "tc", "bf16": "tc", "tf32": "tc", "fp8": "tc",
        "f64": "chain", "f16x4": "chain",
    },
    # m8n8k4 f16 is native HMMA.884 on sm_70 / sm_75 (a tensor-core recipe), emulated with
    # FFMA chains from sm_80 on (the sm_90 chain recipe); integer and b1 results are the PTX
    # ISA's exact semantics (wrap, or clamp with .satfinite) whatever the lowering.
    "sm_70": {"f16x4": "tc"},
    "sm_75": {"f16x4": "tc", "f16": "tc", **_INT},
    "sm_80": {**_HMMA, **_INT, "f64": "chain", "f16x4": "chain"},
    "sm_86": {**_HMMA, **_INT, "f64": "chain", "f16x4": "chain"},
    "sm_89": {**_HMMA, **_INT, "fp8": "tc", "f64": "chain", "f16x4": "chain"},
    "sm_100": {**_HMMA, **_INT, "fp8": "tc", "f64": "chain", "f16x4": "chain"},
    "sm_120": {**_HMMA, **_INT, "fp8": "tc", "f64": "chain", "f16x4": "chain"},
    # sm_120a: sm_120 plus the RTX Blackwell kind:: families (modelled from MMA-Sim's published model,
    # see warpsim.numerics.recipes); sm_121a names the same target (ptxas accepts the same forms)
    "sm_120a": {**_HMMA, **_INT, "fp8": "tc", "f64": "chain", "f16x4": "chain",
                "f8f6f4": "tc", "mxf8f6f4": "tc", "mxf4": "tc"},
}

#: How far each architecture's model is checked.
VERIFIED = "verified on hardware"
MODELLED = "modelled from published measurements"
STATUS: dict[str, str] = {a: (VERIFIED if a == "sm_90" else MODELLED) for a in ARCHS}
#: The hardware each verified architecture was captured on.
CAPTURED_ON = {"sm_90": "H100 (golden corpus tests/golden/corpus_sm90*.npz; deep checks on H200)"}

#: Rules no source measured on the modelled (not captured) architectures; each is the nearest
#: measured rule, chosen explicitly (recipe rows add their own ``unmeasured`` notes).
UNMEASURED_FLOAT = (
    "subnormal inputs/outputs, signed zeros, infinities and NaN words: MMA-Sim's rules (exact subnormal "
    "products, +0 for a zero sum, canonical NaN 0x7fffffff / 0x7fff), which are also what the H100 captures "
    "show; no capture on this architecture",
    "overflow of a truncated (RZ) sum: infinity, as on sm_90 (no source tested it here)",
)
UNMEASURED_INT = (
    "integer and b1: the PTX ISA's exact result (wrap, or clamp with .satfinite); sm_90 captures confirm it "
    "through that target's emulations, none on this architecture",
)


def check_arch(arch) -> str:
    """The canonical modelled target for ``arch`` (``"sm_90a"`` -> ``"sm_90"``); ValueError otherwise."""
    from ..isa.archs import TARGETS, canonical

    try:
        a = canonical(arch)
    except ValueError:
        a = None
    if a not in ARCHS:
        raise ValueError(f"arch {arch!r} is not modelled; modelled architectures: {', '.join(t for t in TARGETS if t in ARCHS)} "
                         f"(\"sm_90a\", \"sm_100a\" name the same targets; \"sm_103a\", \"sm_110a\" are sm_100; \"sm_121a\" is sm_120a)")
    return a


def status(arch) -> str:
    """``"verified on hardware"`` or ``"modelled from published measurements"``."""
    return STATUS[check_arch(arch)]


def describe(ins: Instruction, arch) -> str:
    """Where an instruction's model on a target comes from, and what nobody measured."""
    arch = check_arch(arch)
    kind = ARCHS[arch].get(ins.family)
    lines = [f"{arch}: {STATUS[arch]}" + (f" ({CAPTURED_ON[arch]})" if arch in CAPTURED_ON else "")]
    src = unm = ""
    if kind == "tc":
        from .recipes import find_recipe

        r = find_recipe(ins, arch)
        src, unm = r.source, r.unmeasured
    elif kind == "chain":
        from .recipes import CHAIN_RECIPES

        row = CHAIN_RECIPES[arch].get((ins.family, ins.dtype, ins.ctype), {})
        src = row.get("source", "")
    elif kind == "int":
        src = "PTX ISA integer semantics (exact sum; wrap, or clamp with .satfinite)"
    if arch in CAPTURED_ON:
        src = src or "fitted on and compared with every captured word (docs/numerics.md)"
    if src:
        lines.append(f"  source: {src}")
    if arch not in CAPTURED_ON:
        for u in ([unm] if unm else []) + list(UNMEASURED_INT if kind == "int" else UNMEASURED_FLOAT):
            lines.append(f"  unmeasured: {u}")
    return "\n".join(lines)


def recipe(ins: Instruction, arch: str):
    """(kind, int64 parameter vector) for an instruction on an architecture."""
    arch = check_arch(arch)
    kind = ARCHS[arch].get(ins.family)
    if kind is None:
        raise NotImplementedError(f"{ins.opcode} has no recipe for {arch}")
    if kind == "int":
        from .integer import int_params

        return kind, int_params(ins)
    try:
        if kind == "tc":
            from .recipes import recipe_params

            return kind, recipe_params(ins, arch)
        from .chain import chain_params

        return kind, chain_params(ins, arch)
    except ImportError as exc:  # a family whose arithmetic is not in this build
        raise NotImplementedError(f"{ins.opcode}: no {arch} recipe available ({exc})") from exc
