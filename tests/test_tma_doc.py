"""docs/tma.md: its python block runs, and the committed picture is what tma_box_svg draws."""

import os
import re

import numpy as np

from warpsim.cli.svg import tma_box_cells, tma_box_svg
from warpsim.isa.tensormap import make_tensormap

DOCS = os.path.join(os.path.dirname(__file__), "..", "docs")


def test_worked_example_runs():
    with open(os.path.join(DOCS, "tma.md")) as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/tma.md", "exec"), {})


def test_picture_is_current_and_swizzled():
    tm = make_tensormap("float16", 2, 0x7F0000000000, (100, 40), (208,), (64, 8), (1, 1), swizzle="128B")
    with open(os.path.join(DOCS, "tma_box_128B.svg")) as f:
        assert f.read() == tma_box_svg(tm, smem_addr=0x400)
    cells = tma_box_cells(tm, 0x400)
    assert cells[(3, 0)] == (3, 3) and cells[(3, 3)] == (3, 0) and cells[(0, 5)] == (0, 5)
    plain = tma_box_cells(make_tensormap("float16", 2, 0, (100, 40), (208,), (64, 8), (1, 1)), 0)
    assert all(plain[(r, c)] == (r, c) for r in range(8) for c in range(8))
