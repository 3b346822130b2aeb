import re
from collections import Counter

import numpy as np
import pytest

import warpsim
from warpsim.isa.catalog import CATALOG
from warpsim.isa.layouts import layout
from warpsim.isa.sparse import metadata_table
from warpsim.cli.svg import cells, lane_color, svg, text_grid

LABEL = re.compile(r">T(\d+): ([abcd])(\d+)<")


def _expected_order(ins, op):
    """(lane, element) of every cell in the drawing order: product, row, column."""
    tab = layout(ins.opcode, op)
    where = {tuple(int(v) for v in tab[ln, j]): (ln, j) for ln in range(32) for j in range(tab.shape[1])}
    rows, cols = ins.matrix_shape(op)
    return [where[(p, r, c)] for p in range(ins.products) for r in range(rows) for c in range(cols)]


@pytest.mark.parametrize("ins", CATALOG, ids=lambda i: i.opcode)
def test_svg_of_every_operand_matches_the_layout_table(ins):
    for op in "abcd":
        doc = svg(ins, op)
        assert doc.startswith("<svg ") and doc.rstrip().endswith("</svg>")
        found = [(int(ln), int(j)) for ln, o, j in LABEL.findall(doc) if o == op]
        assert all(o == op for _, o, _ in LABEL.findall(doc))
        counts = Counter(found)
        assert max(counts.values()) == 1                         # each lane/element label exactly once
        assert len(found) == 32 * ins.elements_per_lane(op)      # ... and every one of them appears
        assert found == _expected_order(ins, op)                 # ... at its (product, row, col)


@pytest.mark.parametrize("ins", [i for i in CATALOG if i.is_sparse and i.sparse == "sp"], ids=lambda i: i.opcode)
def test_sparse_a_shows_metadata_lanes_for_every_selector(ins):
    for s in ins.selectors:
        doc = svg(ins, "a", s)
        meta = metadata_table(ins.opcode, s)
        lanes = sorted(set(meta[..., 0].ravel().tolist()))
        tags = re.findall(r">T(\d+):(\d+)<", doc)
        assert len(tags) == 32 * ins.elements_per_lane("a")
        assert sorted({int(t[0]) for t in tags}) == lanes
        assert sorted((int(a), int(b)) for a, b in tags) == sorted(zip(meta[..., 0].ravel().tolist(), meta[..., 1].ravel().tolist()))
        assert "hsl(" not in doc   # SVG 1.1 colours only
        assert f"metadata lanes read with selector {s}" in doc
        txt = text_grid(ins, "a", s)
        assert f"selector {s}: lanes read" in txt


def test_text_grid_cells_match_layout():
    op = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    txt = text_grid(op, "a", width=1000)
    rows = [ln for ln in txt.splitlines() if re.match(r"\s*\d+ \|", ln)]
    assert len(rows) == 16
    tab = warpsim.fragment_map(op, "a")
    for r, line in enumerate(rows):
        labels = line.split("|", 1)[1].split()
        for c, lab in enumerate(labels):
            ln, j = map(int, re.fullmatch(r"T(\d+):a(\d+)", lab).groups())
            assert tuple(tab[ln, j]) == (0, r, c)


def test_text_grid_wraps_wide_matrices_and_shows_products():
    b1 = "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc"
    txt = text_grid(b1, "a", width=100)
    assert max(len(x) for x in txt.splitlines()[1:]) <= 100
    labels = re.findall(r"T\d+:a\d+", txt)
    assert len(labels) == len(set(labels)) == 16 * 256
    q = text_grid("mma.sync.aligned.m8n8k4.col.row.f16.f16.f16.f16", "b")
    assert all(f"product {p}" in q for p in range(4))
    assert len(set(re.findall(r"T\d+:b\d+", q))) == 4 * 4 * 8


def test_cells_and_colours():
    c = cells("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32", "C")
    assert c[(0, 0, 0)] == (0, 0) and c[(0, 7, 7)] == (31, 1)
    assert len({lane_color(i) for i in range(32)}) == 32
    assert len({lane_color(i, "group") for i in range(0, 32, 4)}) == 8
    doc = svg("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32", "c", color_by="group")
    assert lane_color(5, "group") in doc
    with pytest.raises(ValueError, match="colour"):
        lane_color(0, "rainbow")


def test_svg_errors():
    with pytest.raises(ValueError, match="operand must be one of"):
        svg("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32", "e")
    with pytest.raises(ValueError, match="out of range"):
        svg("mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "a", 2)
    with pytest.raises(ValueError, match="unknown shape"):
        text_grid("mma.sync.aligned.m9n8k16.row.col.s32.s8.s8.s32", "a")
