"""Which targets have a PTX-layer instruction form: the lowest sm per family and qualifier, as data.

A canonical form (``warpsim.ptx.spellings.canonical``) of the families the PTX table implements
beyond ``mma`` / ``wgmma`` (wmma, ldmatrix / stmatrix / movmatrix, cvt, atom / red, mbarrier, the
bulk and tensor copies, cp.async, fence / membar, elect, mapa, barrier.cluster, setmaxnreg) exists
on a target when the target's sm is at least the family's lowest sm and every qualifier's, with the
few cvt pairs and setmaxnreg's arch-specific targets below.  Checked against ptxas 12.9 (sm_70) and
13.0 for every modelled target on all 33,592 forms: ``tests/golden/ptxas/ptx_targets.json.xz``
(``python -m warpsim.hw.ptxas_grammar targets``), ``tests/test_ptx_targets.py``.
"""

from __future__ import annotations

#: the modelled targets and their sm numbers (the ``a`` targets add setmaxnreg)
TARGET_SM = {"sm_70": 70, "sm_75": 75, "sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90": 90, "sm_90a": 90,
             "sm_100": 100, "sm_100a": 100, "sm_103a": 103, "sm_110a": 110, "sm_120": 120, "sm_120a": 120,
             "sm_121a": 121}
#: targets with the arch-specific forms (setmaxnreg): ptxas refuses them for sm_90, sm_100 and sm_120
ARCH_SPECIFIC = ("sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")

#: family -> lowest sm
FAMILY_SM = {"wmma.load": 70, "wmma.store": 70, "wmma.mma": 70, "ldmatrix": 75, "stmatrix": 90, "movmatrix": 75,
             "cvt": 70, "atom": 70, "red": 70, "mbarrier": 80, "cp.async.bulk.tensor": 90,
             "cp.reduce.async.bulk.tensor": 90, "cp.async.bulk": 90, "cp.reduce.async.bulk": 90, "cp.async": 80,
             "fence": 70, "membar": 70, "elect": 90, "mapa": 90, "barrier.cluster": 90, "setmaxnreg": 90}
_WMMA = {"bf16": 80, "tf32": 80, "m16n16k8": 80, "s8": 75, "u8": 75, "s32": 75, "satfinite": 75}
_ATOM = {"bf16": 90, "bf16x2": 90, "shared::cluster": 90, "cluster": 90, "L2::cache_hint": 80}
#: family -> qualifier -> lowest sm (qualifiers not listed: the family's)
QUALIFIER_SM = {
    "wmma.load": _WMMA, "wmma.store": _WMMA, "wmma.mma": _WMMA,
    "cvt": {"bf16": 80, "tf32": 80, "relu": 80, "rna": 80, "f16x2": 80, "bf16x2": 80, "e4m3x2": 89, "e5m2x2": 89},
    "atom": _ATOM, "red": _ATOM,
    "cp.async.bulk.tensor": {"im2col::w": 100, "im2col::w::128": 100},     # ptxas 13.0: sm_100a on
    "mbarrier": {"cluster": 90, "relaxed": 90, "expect_tx": 90, "complete_tx": 90, "try_wait": 90,
                 "shared::cluster": 90},
    "fence": {"cluster": 90, "async": 90, "global": 90, "shared::cta": 90, "shared::cluster": 90,
              "tensormap::generic": 90, "mbarrier_init": 90},
}
_INT_OR_HALF = ("f16", "f64", "bf16", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")


def _cvt_sm(qualifiers) -> int:
    """cvt's pair rules beyond the qualifier table: bf16 with anything but f32 (or bf16 -> f32 with
    .ftz) needs sm_90; tf32 rounded .rn / .rz needs sm_90, and with .satfinite sm_100."""
    dst, src, mods = qualifiers[-2], qualifiers[-1], set(qualifiers[:-2])
    sm = 0
    if "bf16" in (dst, src):
        other = src if dst == "bf16" else dst
        if other in _INT_OR_HALF or (src == "bf16" and dst == "f32" and "ftz" in mods):
            sm = 90
    if dst == "tf32" and mods & {"rn", "rz"}:
        sm = max(sm, 100 if "satfinite" in mods else 90)
    return sm


def family_of(form: str) -> str | None:
    """The family a canonical form belongs to (the longest family name it starts with), or None."""
    best = None
    for fam in FAMILY_SM:
        if (form == fam or form.startswith(fam + ".")) and (best is None or len(fam) > len(best)):
            best = fam
    return best


def lowest_sm(family: str, form: str) -> int:
    """The lowest sm that has the canonical ``form`` of ``family``."""
    qualifiers = form[len(family) + 1:].split(".") if form != family else []
    table = QUALIFIER_SM.get(family, {})
    sm = max([FAMILY_SM[family]] + [table.get(q, 0) for q in qualifiers])
    if family == "cvt" and len(qualifiers) >= 2:
        sm = max(sm, _cvt_sm(qualifiers))
    return sm


def available(family: str, form: str, target: str) -> bool:
    """Whether ptxas assembles the canonical ``form`` for ``target`` (a key of :data:`TARGET_SM`)."""
    if family == "setmaxnreg" and target not in ARCH_SPECIFIC:
        return False
    return TARGET_SM[target] >= lowest_sm(family, form)


def require(family: str, form: str, target: str | None) -> None:
    """ValueError naming the target and the lowest one that has the form, when ``target`` lacks it
    (a target warpsim does not model, or None, is not checked)."""
    if target not in TARGET_SM or available(family, form, target):
        return
    low = lowest_sm(family, form)
    extra = " (an arch-specific 'a' target)" if family == "setmaxnreg" else ""
    raise ValueError(f"{form} is not available on .target {target}: ptxas needs sm_{low} or later{extra}")


def check_module_target(code, target):
    """PTXError for a statement ptxas refuses on the module's ``.target`` (a modelled target): the PTX-layer
    families by :mod:`warpsim.ptx.targets`, ``mma`` / ``wgmma`` by the catalog's per-target sets."""
    from ..isa.parse import parse as parse_mma
    from .spellings import canonical
    from .syntax import PTXError

    tgt = (target or "").split(",")[0].strip().lower()
    if tgt not in TARGET_SM:
        return
    seen = set()
    for st in code:
        op = st.opcode
        if op in seen:
            continue
        seen.add(op)
        try:
            if op.startswith(("mma.", "wgmma.mma_async")):
                parse_mma(op, arch=tgt)
                continue
            form = canonical(op)
        except ValueError as exc:
            if op.startswith(("mma.", "wgmma.mma_async")) and "not available on" in str(exc):
                raise PTXError(str(exc), line=st.line, statement=st.text, token=op) from None
            continue                        # a spelling ptxas refuses: the statement's own error, when it runs
        fam = family_of(form)
        if fam is not None:
            try:
                require(fam, form, tgt)
            except ValueError as exc:
                raise PTXError(str(exc), line=st.line, statement=st.text, token=op) from None
