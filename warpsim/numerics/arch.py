"""Per-architecture registry: which dot-product kind and parameters each catalog family uses.

An architecture is a table from catalog family to a recipe source; the recipe
sources themselves are data tables in :mod:`warpsim.numerics.recipes` (tensor-core
path), :mod:`warpsim.numerics.chain` (compiler-emulated FMA chains and DMMA) and
:mod:`warpsim.numerics.integer` (integer and b1).  Adding an architecture is adding
a row here and its parameter tables there.
"""

from __future__ import annotations

from ..isa.catalog import Instruction

#: arch -> family -> dot-product kind ("int", "tc", "chain")
ARCHS: dict[str, dict[str, str]] = {
    "sm_90": {
        "int8": "int", "int4": "int", "b1": "int",
        "f16": "tc", "bf16": "tc", "tf32": "tc", "fp8": "tc",
        "f64": "chain", "f16x4": "chain",
    },
    # RTX Blackwell, arch-specific target: only the sm_120a kind:: families are modelled here (from
    # MMA-Sim's published model; see warpsim.numerics.recipes); sm_121a: ptxas accepts the same forms
    "sm_120a": {"f8f6f4": "tc", "mxf8f6f4": "tc", "mxf4": "tc"},
    "sm_121a": {"f8f6f4": "tc", "mxf8f6f4": "tc", "mxf4": "tc"},
}


def check_target(ins: Instruction, arch: str) -> None:
    """Refuse an instruction on an architecture that does not have it (clear message)."""
    if ins.targets and arch not in ins.targets:
        raise ValueError(f"{ins.opcode} exists only on {' and '.join(ins.targets)} (ptxas 13.0 rejects it "
                         f"for sm_120, sm_100a and sm_90a); pass arch='sm_120a', not {arch!r}")
    if not ins.targets and arch in ("sm_120a", "sm_121a"):
        raise NotImplementedError(f"{ins.opcode} is not modelled on {arch}: warpsim models only the "
                                  "sm_120a kind:: forms there; use arch='sm_90'")


def check_arch(arch) -> None:
    if not isinstance(arch, str) or arch not in ARCHS:
        raise ValueError(f"arch {arch!r} is not modelled; modelled architectures: {sorted(ARCHS)}")


def recipe(ins: Instruction, arch: str):
    """(kind, int64 parameter vector) for an instruction on an architecture."""
    check_arch(arch)
    check_target(ins, arch)
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
