"""The instruction table itself: counts, derived fields, and agreement with ptxas."""

import collections
import dataclasses
import os
import shutil
import subprocess

import pytest

import warpsim
from warpsim.isa import catalog as C
from warpsim import hw

from fixtures import REJECTED


#: the sm_90 catalog (the sm_120a-only kind:: forms are tested in test_blackwell.py)
SM90 = [i for i in C.CATALOG if not i.targets]


def test_counts_match_the_design():
    dense = [i for i in SM90 if not i.is_sparse]
    sp = [i for i in SM90 if i.sparse == "sp"]
    ordered = [i for i in SM90 if i.sparse == "sp::ordered_metadata"]
    assert (len(dense), len(sp), len(ordered)) == (94, 44, 44)
    assert len(SM90) == 182
    assert sum(len(i.selectors) for i in SM90) == 246
    assert len({i.opcode for i in C.CATALOG}) == len(C.CATALOG) == 182 + 288 + 4   # + sm_120a's sparse fp8 f16-accumulate forms (issue 33)


def test_family_counts():
    fam = collections.Counter(i.family for i in SM90 if not i.is_sparse)
    assert fam == {"f16x4": 12, "f16": 4, "bf16": 2, "tf32": 2, "f64": 4, "fp8": 16, "int8": 24, "int4": 24, "b1": 6}
    assert sum(fam[f] for f in ("int8", "int4", "b1")) == 54


@pytest.mark.parametrize("ins", C.CATALOG, ids=lambda i: i.opcode)
def test_derived_fields(ins):
    assert C.BY_OPCODE[ins.opcode] is ins
    assert warpsim.parse(ins.opcode) is ins
    for role in "abcd":
        rows, cols = ins.matrix_shape(role)
        bits = ins.elem(role).bits
        assert ins.words(role) * 32 == ins.products * rows * cols * bits // 32
    if ins.is_sparse:
        assert ins.words("e") == 1 and len(ins.selectors) in (1, 2, 4)
    else:
        assert ins.selectors == (0,)
    assert ins.min_sm <= 90 or ins.targets == ("sm_120a", "sm_121a")


NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc/ptxas not on PATH: the ptxas cross-check needs the CUDA toolkit")


def _compile(entries, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(hw.kernel_source(entries))
    return subprocess.run([NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o", str(tmp_path / "k.cubin"), str(src)],
                          capture_output=True, text=True)


@needs_nvcc
def test_ptxas_accepts_every_catalog_entry(tmp_path):
    r = _compile([(i, s) for i, s in C.entries() if not i.targets], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


@needs_nvcc
@pytest.mark.parametrize("bad", sorted(REJECTED))
def test_ptxas_rejects_forbidden_forms(bad, tmp_path):
    base = C.BY_OPCODE[REJECTED[bad][0]]
    r = _compile([(dataclasses.replace(base, opcode=bad), 0)], tmp_path)
    assert r.returncode != 0 and "error" in r.stderr
