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
}


def check_arch(arch) -> None:
    if not isinstance(arch, str) or arch not in ARCHS:
        raise ValueError(f"arch {arch!r} is not modelled; modelled architectures: {sorted(ARCHS)}")


def recipe(ins: Instruction, arch: str):
    """(kind, int64 parameter vector) for an instruction on an architecture."""
    check_arch(arch)
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
