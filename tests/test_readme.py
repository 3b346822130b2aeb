"""The README's examples run as written, it stays a short front door, and the generated tables it links
to (docs/status.md: catalog, per-architecture status) are the ones the code generates."""

import importlib.util
import re
import runpy
from pathlib import Path

import pytest

from warpsim.cli import docs as _docs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
STATUS = ROOT / _docs.STATUS_DOC
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)

#: the optional extras an example needs, by the module it imports (CI installs them all with `.[test]`)
EXTRAS = {"triton": "triton", "warpsim.cuda": "numba_cuda"}


def test_catalog_table_is_current():
    text = STATUS.read_text()
    block = text.split(_docs.BEGIN, 1)[1].split(_docs.END, 1)[0]
    assert block.strip() == _docs.catalog_markdown().strip(), "run `python -m warpsim.cli.docs` to regenerate"


def test_arch_table_is_current():
    text = STATUS.read_text()
    block = text.split(_docs.ARCH_BEGIN, 1)[1].split(_docs.ARCH_END, 1)[0]
    assert block.strip() == _docs.arch_markdown().strip(), "run `python -m warpsim.cli.docs` to regenerate"


def test_readme_is_a_front_door():
    """At most about 120 lines; the two set-up commands CI runs; a link to every page it moved out."""
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    assert "python3 -m pip install . && python3 -m warpsim run mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in text
    assert 'python3 -m pip install -e ".[test]" && python3 -m pytest -q' in text
    for page in ("docs/status.md", "docs/speed.md", "docs/guide.md", "docs/architecture.md", "docs/triton.md",
                 "docs/cuda.md"):
        assert f"]({page})" in text and (ROOT / page).exists(), page
    assert len(BLOCKS) == 5        # register words, matrices, a PTX file, a Triton kernel, a CUDA source


@pytest.mark.parametrize("code", BLOCKS, ids=["words", "matrices", "ptx", "triton", "cuda"][:len(BLOCKS)])
def test_python_examples_run(code, tmp_path):
    """Each block runs as a script of its own (a file, so that Triton can read the kernel's source)."""
    for mod, dist in EXTRAS.items():
        if re.search(rf"^import .*\b{re.escape(mod)}\b|^from {re.escape(mod)} ", code, re.M):
            if importlib.util.find_spec(dist) is None:
                pytest.skip(f"needs the optional extra providing {dist}")
    path = tmp_path / "readme_example.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="__main__")
