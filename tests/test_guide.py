"""Every ```python block of docs/guide.md runs, in order, in one namespace (like a reader would)."""

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), flags=re.S | re.M)


def test_guide_has_python_blocks():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("upto", range(len(BLOCKS)), ids=lambda i: f"block{i}")
def test_guide_block_runs(upto, tmp_path, monkeypatch, capsys):
    """Block ``upto`` runs after all blocks before it; pytest-style test functions it defines are called."""
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "guide"}
    for i in range(upto + 1):
        before = set(ns)
        code = compile(BLOCKS[i], f"{GUIDE.name}:block{i}", "exec")
        exec(code, ns)
        if i == upto:
            for name in sorted(set(ns) - before):
                if name.startswith("test_") and callable(ns[name]):
                    ns[name]()
