"""Pictures of fragment layouts, drawn like the PTX ISA figures: the operand's matrix as a grid,
each cell labelled with the lane and element that hold it (``T5: a3``) and coloured by lane
(or by lane group).  :func:`svg` writes a standalone SVG (no dependencies); :func:`text_grid`
renders the same for a terminal.

The m8n8k4 quad-pair form draws its four products side by side; sparse A draws the compressed
matrix plus, for the chosen sparsity selector, which metadata lane and bits hold each element's
index and which lanes the selector reads.
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..isa.layouts import OPERANDS, layout
from ..isa.parse import parse

__all__ = ["svg", "text_grid", "cells", "label", "lane_color", "wmma_svg", "wmma_text_grid", "wmma_form",
           "tma_box_svg", "tma_box_cells"]


def label(lane: int, operand: str, element: int, sep: str = " ") -> str:
    """The cell label the PTX ISA figures use: ``T5: a3``."""
    return f"T{lane}:{sep}{operand}{element}"


def _check(instruction, operand, selector):
    ins = parse(instruction)
    op = str(operand).lower()
    if op not in OPERANDS:
        raise ValueError(f"operand must be one of {', '.join(OPERANDS)} (case-insensitive), not {operand!r}")
    if isinstance(selector, bool) or not isinstance(selector, (int, np.integer)):
        raise TypeError(f"selector must be an integer, not {type(selector).__name__}")
    if selector not in ins.selectors:
        what = "sparsity selector" if ins.is_sparse else "selector (dense MMAs have none; leave it 0)"
        raise ValueError(f"{what} {selector} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}")
    return ins, op


def cells(instruction, operand: str, selector: int = 0) -> dict:
    """{(product, row, col): (lane, element)} for every element of the operand's matrices."""
    ins, op = _check(instruction, operand, selector)
    tab = layout(ins.opcode, op)
    out = {}
    for lane in range(tab.shape[0]):   # 32 lanes (mma) or 128 threads (wgmma)
        for j in range(tab.shape[1]):
            p, r, c = (int(x) for x in tab[lane, j])
            out[(p, r, c)] = (lane, j)
    return out


def _metadata_cells(ins, selector):
    """{(row, col) of the compressed A: (metadata lane, low bit, width)}."""
    from ..isa.sparse import metadata_table

    tab = layout(ins.opcode, "a")
    meta = metadata_table(ins.opcode, selector)
    width = 4 if ins.atype == "tf32" else 2
    out = {}
    for lane in range(tab.shape[0]):   # 32 lanes (mma.sp) or 128 threads (wgmma.mma_async.sp)
        for j in range(tab.shape[1]):
            _, r, c = (int(x) for x in tab[lane, j])
            out[(r, c)] = (int(meta[lane, j, 0]), int(meta[lane, j, 1]), width)
    return out


def _hex(hue: float, light: float, sat: float = 0.70) -> str:
    """An sRGB hex colour (SVG 1.1 renderers do not all read CSS hsl())."""
    import colorsys

    r, g, b = colorsys.hls_to_rgb((hue % 360) / 360, light, sat)
    return "#{:02x}{:02x}{:02x}".format(round(r * 255), round(g * 255), round(b * 255))


def lane_color(lane: int, by: str = "lane") -> str:
    """A light fill colour per lane (``by="lane"``) or per group of four lanes (``by="group"``)."""
    if by == "group":
        g, t = divmod(lane, 4)
        return _hex(g * 45, 0.72 + 0.05 * t)
    if by != "lane":
        raise ValueError(f"colour by 'lane' or 'group', not {by!r}")
    return _hex(lane * 101.25, 0.78)


# --- SVG ----------------------------------------------------------------------

CELL_W, CELL_H, PAD, HEAD = 58, 22, 28, 18


def _grid_svg(out, x0, y0, rows, cols, content, title):
    """content(r, c) -> (fill, text).  Returns the grid's (width, height) including labels."""
    out.append(f'<text x="{x0}" y="{y0 + 12}" class="t">{escape(title)}</text>')
    gy = y0 + HEAD + 14
    gx = x0 + PAD
    for c in range(cols):
        out.append(f'<text x="{gx + c * CELL_W + CELL_W / 2}" y="{gy - 4}" class="h">{c}</text>')
    for r in range(rows):
        y = gy + r * CELL_H
        out.append(f'<text x="{x0 + PAD - 4}" y="{y + CELL_H / 2 + 4}" class="hr">{r}</text>')
        for c in range(cols):
            fill, txt = content(r, c)
            x = gx + c * CELL_W
            out.append(f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" fill="{fill}"/>'
                       f'<text x="{x + CELL_W / 2}" y="{y + CELL_H / 2 + 4}">{escape(txt)}</text>')
    return PAD + cols * CELL_W, HEAD + 14 + rows * CELL_H


def svg(instruction, operand: str, selector: int = 0, *, color_by: str = "lane") -> str:
    """A standalone SVG picture of one operand's fragment layout."""
    ins, op = _check(instruction, operand, selector)
    lane_color(0, color_by)
    cmap = cells(ins, op, selector)
    rows, cols = ins.matrix_shape(op)
    name = op.upper()
    out = []
    x, y = 10, 40
    total_w, total_h = 0, 0
    for p in range(ins.products):
        lanes = sorted({ln for (pp, _, _), (ln, _) in cmap.items() if pp == p})
        if ins.products > 1:
            title = f"product {p}: lanes {_ranges(lanes)}"
        else:
            title = f"{name}: {rows}x{cols}" + (" (compressed; logical {}x{})".format(ins.m, ins.k) if ins.is_sparse and op == "a" else "")

        def content(r, c, p=p):
            lane, j = cmap[(p, r, c)]
            return lane_color(lane, color_by), label(lane, op, j)

        w, h = _grid_svg(out, x, y, rows, cols, content, title)
        x += w + 30
        total_w, total_h = x, max(total_h, y + h)
    if ins.is_sparse and op == "a":
        meta = _metadata_cells(ins, selector)
        lanes = sorted({m[0] for m in meta.values()})
        y = total_h + 30

        def mcontent(r, c):
            ml, bit, wd = meta[(r, c)]
            return lane_color(ml, color_by), f"T{ml}:{bit}"

        w, h = _grid_svg(out, 10, y, rows, cols, mcontent,
                         f"metadata of each element, selector {selector}: T<lane>:<lowest bit> of its "
                         f"{meta[(0, 0)][2]}-bit index (lanes read: {_ranges(lanes)})")
        total_h = y + h + 10
        y = total_h + 10
        out.append(f'<text x="10" y="{y + 12}" class="t">metadata lanes read with selector {selector}</text>')
        for ln in range(32):
            xx = 10 + PAD + ln * 26
            used = ln in lanes
            fill = lane_color(ln, color_by) if used else "#ffffff"
            dash = "" if used else ' stroke-dasharray="2,2"'
            out.append(f'<rect x="{xx}" y="{y + 18}" width="26" height="{CELL_H}" fill="{fill}"'
                       f'{dash}/><text x="{xx + 13}" y="{y + 18 + CELL_H / 2 + 4}">{ln}</text>')
        total_h = y + 18 + CELL_H
        total_w = max(total_w, 10 + PAD + 32 * 26 + 10)
    return _svg(f"{total_w:.0f}", f"{total_h + 10:.0f}", [f"<title>{escape(ins.opcode)} operand {name}</title>",
                f'<text x="10" y="20" class="t">{escape(ins.opcode)}: operand {name}</text>'], out)


_STYLE = ('<style>rect{stroke:#555;stroke-width:0.5} text{text-anchor:middle;dominant-baseline:auto} '
          '.t{text-anchor:start;font-size:13px;font-weight:bold} .h{fill:#666} .hr{text-anchor:end;fill:#666}</style>')


def _svg(width, height, head, body) -> str:
    """An SVG document of the figures: its size, the shared style, ``head`` (title, caption), ``body``."""
    header = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
              f'font-family="monospace" font-size="10">')
    return "\n".join([header, _STYLE] + head + body + ["</svg>", ""])


def _ranges(nums) -> str:
    nums = sorted(nums)
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)


# --- terminal -------------------------------------------------------------------

def _grid_text(rows, cols, content, width):
    cw = max(len(content(r, c)) for r in range(rows) for c in range(cols)) + 1
    rw = len(str(rows - 1)) + 2
    per = max(1, (width - rw) // cw)
    out = []
    for c0 in range(0, cols, per):
        cs = range(c0, min(cols, c0 + per))
        out.append(" " * rw + "".join(str(c).rjust(cw) for c in cs))
        for r in range(rows):
            out.append(f"{r:>{rw - 2}} |" + "".join(content(r, c).rjust(cw) for c in cs))
        out.append("")
    return out


def text_grid(instruction, operand: str, selector: int = 0, *, width: int = 120) -> str:
    """The layout as text: one cell per matrix element, ``T5:a3``; wide matrices wrap in column blocks."""
    ins, op = _check(instruction, operand, selector)
    cmap = cells(ins, op, selector)
    rows, cols = ins.matrix_shape(op)
    name = op.upper()
    out = [f"{ins.opcode}: operand {name}, {rows}x{cols}"
           + (f" per product, {ins.products} products" if ins.products > 1 else "")
           + (f" (compressed; logical {ins.m}x{ins.k})" if ins.is_sparse and op == "a" else ""), ""]
    for p in range(ins.products):
        if ins.products > 1:
            lanes = sorted({ln for (pp, _, _), (ln, _) in cmap.items() if pp == p})
            out += [f"product {p} (lanes {_ranges(lanes)})", ""]
        out += _grid_text(rows, cols, lambda r, c, p=p: label(cmap[(p, r, c)][0], op, cmap[(p, r, c)][1], sep=""), width)
    if ins.is_sparse and op == "a":
        meta = _metadata_cells(ins, selector)
        lanes = sorted({m[0] for m in meta.values()})
        out += [f"metadata, selector {selector}: lanes read {_ranges(lanes)}; each element's index sits in "
                "e of lane T at bits [hi:lo]", ""]
        out += _grid_text(rows, cols, lambda r, c: "T{0}[{2}:{1}]".format(meta[(r, c)][0], meta[(r, c)][1],
                                                                          meta[(r, c)][1] + meta[(r, c)][2] - 1), width)
    return "\n".join(out).rstrip() + "\n"


# --- wmma fragments (captured layouts, warpsim.ptx.wmma) ------------------------------------

def wmma_form(text: str, operand: str):
    """(fragment, shape, type) from a wmma opcode or a short form: ``wmma.m16n16k16.f16`` or any
    ``wmma.load/.store`` opcode, and the operand a/b/c/d (D is drawn with C's layout)."""
    import re

    from ..ptx import wmma

    toks = text.split(".")
    shape = next((t for t in toks if re.fullmatch(r"m\d+n\d+k\d+", t)), None)
    typ = toks[-1]
    op = str(operand).lower()
    if not text.startswith("wmma") or shape not in wmma.SHAPES or op not in OPERANDS:
        raise ValueError(f"a wmma layout needs a shape ({', '.join(wmma.SHAPES)}), an element type and an operand "
                         f"a/b/c/d, e.g. 'wmma.m16n16k16.f16 a'; got {text!r} {operand!r}")
    wmma.fragment(op, shape, typ)     # raises for a form that does not exist
    return op, shape, typ


def _wmma_cells(op, shape, typ):
    from ..ptx import wmma

    tab = wmma.fragment(op, shape, typ)
    out = {}
    for lane in range(32):
        for j in range(tab.shape[1]):
            out.setdefault((int(tab[lane, j, 0]), int(tab[lane, j, 1])), []).append((lane, j))
    return out


def _wmma_label(holders, op, sep):
    lane, j = holders[0]
    return label(lane, op, j, sep) + ("*" if len(holders) > 1 else "")


def wmma_svg(text: str, operand: str, *, color_by: str = "lane") -> str:
    """SVG of a wmma fragment layout (``*``: the element is held twice, the first holder shown)."""
    from ..ptx import wmma

    op, shape, typ = wmma_form(text, operand)
    lane_color(0, color_by)
    cmap = _wmma_cells(op, shape, typ)
    rows, cols = wmma._dims(op, shape)
    out = []
    dup = any(len(v) > 1 for v in cmap.values())
    title = f"{op.upper()}: {rows}x{cols}, .{typ}" + (" (* = held twice; first holder shown)" if dup else "")

    def content(r, c):
        h = cmap[(r, c)]
        return lane_color(h[0][0], color_by), _wmma_label(h, op, " ")

    w, h = _grid_svg(out, 10, 40, rows, cols, content, title)
    name = f"wmma {shape} .{typ} fragment {op.upper()} (captured on an H100; .row and .col hold the same elements)"
    return _svg(f"{w + 40:.0f}", f"{40 + h + 10:.0f}",
                [f"<title>{escape(name)}</title>", f'<text x="10" y="20" class="t">{escape(name)}</text>'], out)


def wmma_text_grid(text: str, operand: str, *, width: int = 120) -> str:
    from ..ptx import wmma

    op, shape, typ = wmma_form(text, operand)
    cmap = _wmma_cells(op, shape, typ)
    rows, cols = wmma._dims(op, shape)
    dup = any(len(v) > 1 for v in cmap.values())
    out = [f"wmma {shape} .{typ}: fragment {op.upper()}, {rows}x{cols} (captured on an H100)"
           + ("; * = held twice, first holder shown" if dup else ""), ""]
    out += _grid_text(rows, cols, lambda r, c: _wmma_label(cmap[(r, c)], op, ""), width)
    return "\n".join(out).rstrip() + "\n"


# --- wgmma shared-memory operands ------------------------------------------------

def smem_chunks(instruction, operand: str, desc, *, trans: int = 0) -> dict:
    """{16-byte chunk address: (label, colour key)} of a wgmma operand read through a descriptor.

    K-major chunks hold 16 bytes of one matrix row (label ``r5 k8-15``); MN-major chunks hold
    eight rows of one k (``k3 r8-15``).  Rows are A's rows (M) or B's columns (N).
    """
    from ..isa import smem as S

    ins = parse(instruction)
    if not ins.is_wgmma or operand not in ("a", "b"):
        raise ValueError("shared-memory pictures are for the A or B operand of a wgmma opcode")
    rows = ins.m if operand == "a" else ins.n
    bits = ins.elem(operand).bits
    major = "MN" if trans else "K"
    addr, _ = S.operand_addresses(desc, rows, ins.k, bits, major)
    chunks: dict = {}
    for r in range(rows):
        for k in range(ins.k):
            chunks.setdefault(int(addr[r, k]) // 16 * 16, []).append((r, k))
    out = {}
    for a, els in chunks.items():
        rs = sorted({r for r, _ in els})
        ks = sorted({k for _, k in els})
        if major == "K":
            out[a] = (f"r{rs[0]} k{_ranges(ks)}", rs[0] // 8)
        else:
            out[a] = (f"k{ks[0]} r{_ranges(rs)}", ks[0])
    return out


def _smem_grid(instruction, operand, desc, trans):
    from ..isa import smem as S

    d = S.decode_descriptor(desc) if not isinstance(desc, S.Descriptor) else desc
    ch = smem_chunks(instruction, operand, d, trans=trans)
    lo = min(ch) // 128 * 128
    hi = (max(ch) // 128 + 1) * 128
    title = (f"operand {operand.upper()} through descriptor {d.encode():#018x}: start {d.start}, LBO {d.lbo}, "
             f"SBO {d.sbo}, swizzle {d.swizzle}, {'MN' if trans else 'K'}-major")
    return d, ch, lo, hi, title


def smem_text(instruction, operand: str, desc, *, trans: int = 0) -> str:
    """Shared memory as 128-byte lines of eight 16-byte chunks, each labelled with the elements it holds."""
    d, ch, lo, hi, title = _smem_grid(instruction, operand, desc, trans)
    cw = max(len(v[0]) for v in ch.values()) + 2
    out = [title, "", "address " + "".join(f"+{c * 16}".rjust(cw) for c in range(8))]
    for line in range(lo, hi, 128):
        cells_ = [ch.get(line + 16 * c, ("-", None))[0] for c in range(8)]
        if all(x == "-" for x in cells_):
            continue
        out.append(f"{line:#07x} " + "".join(x.rjust(cw) for x in cells_))
    return "\n".join(out) + "\n"


def smem_svg(instruction, operand: str, desc, *, trans: int = 0) -> str:
    """An SVG of the same picture; chunks coloured by row group (K-major) or by k (MN-major)."""
    d, ch, lo, hi, title = _smem_grid(instruction, operand, desc, trans)
    W, H = 78, 20
    lines = [ln for ln in range(lo, hi, 128) if any(ln + 16 * c in ch for c in range(8))]
    out = []
    y = 50
    for c in range(8):
        out.append(f'<text x="{70 + c * W + W / 2}" y="{y - 4}" class="h">+{c * 16}</text>')
    for i, ln in enumerate(lines):
        yy = y + i * H
        out.append(f'<text x="64" y="{yy + H / 2 + 4}" class="hr">{ln:#06x}</text>')
        for c in range(8):
            v = ch.get(ln + 16 * c)
            fill = lane_color(v[1] * 4, "group") if v else "#ffffff"
            txt = v[0] if v else ""
            out.append(f'<rect x="{70 + c * W}" y="{yy}" width="{W}" height="{H}" fill="{fill}"/>'
                       f'<text x="{70 + c * W + W / 2}" y="{yy + H / 2 + 4}">{escape(txt)}</text>')
    width = 70 + 8 * W + 20
    height = y + len(lines) * H + 20
    header = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
              f'font-family="monospace" font-size="10">')
    style = ('<style>rect{stroke:#555;stroke-width:0.5} text{text-anchor:middle} '
             '.t{text-anchor:start;font-size:12px;font-weight:bold} .h{fill:#666} .hr{text-anchor:end;fill:#666}</style>')
    cap = f'<text x="10" y="20" class="t">{escape(parse(instruction).opcode)}</text>' \
          f'<text x="10" y="36" class="t">{escape(title)}</text>'
    return "\n".join([header, style, cap] + out + ["</svg>", ""])


def tmem_accumulator_svg(n: int = 16, *, column: int = 0, dtype: str = "f32") -> str:
    """An SVG of where a cta_group::1, M = 128 ``tcgen05.mma`` accumulator sits in tensor memory.

    Rows are tensor-memory lanes, columns are 32-bit columns from ``column`` on; each cell names the
    D element it holds, coloured by the warp (of a warpgroup) allowed to ``tcgen05.ld`` that lane.
    The layout (row i in lane i, column j in column ``column + j``, one element per 32-bit cell) is
    the modelled one of :mod:`warpsim.ptx.tmem`, not verified on a B200."""
    if not isinstance(n, int) or not 8 <= n <= 256 or n % 8:
        raise ValueError(f"n must be a multiple of 8 in 8..256, got {n!r}")
    if not isinstance(column, int) or not 0 <= column <= 512 - n:
        raise ValueError(f"column must leave room for {n} columns in 0..511, got {column!r}")
    if dtype not in ("f32", "f16", "s32"):
        raise ValueError(f"dtype must be 'f32', 's32' or 'f16' (in the low half of a cell), got {dtype!r}")
    out = []

    def content(r, c):
        return _hex((r // 32) * 90 + 20, 0.80), f"D{r},{c}"

    title = (f"tensor memory: lanes 0-127 x columns {column}-{column + n - 1}; D[row, col] ({dtype}, M=128, N={n}); "
             "colour = warp w % 4 that may tcgen05.ld the lane (32 lanes each)")
    w, h = _grid_svg(out, 10, 40, 128, n, content, title)
    for c in range(n):   # label columns with their tensor-memory column numbers
        out.append(f'<text x="{10 + PAD + c * CELL_W + CELL_W / 2}" y="{40 + HEAD + 2}" class="h">col {column + c}</text>')
    total_w, total_h = max(w + 20, 900), 40 + h + 10
    return _svg(total_w, total_h, ["<title>tcgen05 accumulator layout</title>",
                '<text x="10" y="20" class="t">tcgen05.mma accumulator in tensor memory (modelled)</text>'], out)


def tma_box_cells(tm, smem_addr: int = 0) -> dict:
    """{(128-byte shared row, 16-byte chunk): (box row, chunk of that row)} of a TMA box landing at ``smem_addr``."""
    from ..ptx.tma import smem_addresses

    tm_addrs = smem_addresses(tm, smem_addr)
    row_bytes = tm.inner_box_bytes()
    out = {}
    for o in range(0, len(tm_addrs), 16):
        a = int(tm_addrs[o]) - smem_addr
        out[(a // 128, (a % 128) // 16)] = (o // row_bytes, (o % row_bytes) // 16)
    return out


def tma_box_svg(tm, smem_addr: int = 0) -> str:
    """A picture of a TMA box in shared memory: 128-byte rows of 16-byte chunks, each labelled
    ``r<box row>.c<chunk>`` and coloured by box row (the swizzle shows as the chunks' order)."""
    cmap = tma_box_cells(tm, smem_addr)
    rows = 1 + max(r for r, _ in cmap)
    out = []

    def content(r, c):
        if (r, c) not in cmap:
            return "#ffffff", ""
        br, bc = cmap[(r, c)]
        return lane_color(br % 32), f"r{br}.c{bc}"

    title = (f"{tm.dtype} box {'x'.join(map(str, tm.box_dim))}, swizzle {tm.swizzle}, shared address {smem_addr:#x}: "
             "16-byte chunk (column) of each 128-byte row")
    w, h = _grid_svg(out, 10, 30, rows, 8, content, title)
    return _svg(f"{max(w + 20, 620):.0f}", f"{h + 50:.0f}",
                [f"<title>TMA box in shared memory, swizzle {escape(tm.swizzle)}</title>"], out)


# --- line chart (benchmark history) -------------------------------------------------------------

def line_chart(series: dict, labels: list, title: str, y_label: str) -> str:
    """One polyline per named series over the x labels (commits), on a log10 y axis; None values
    are gaps.  Used by ``warpsim bench --plot``."""
    import math

    vals = [v for ys in series.values() for v in ys if v is not None and v > 0]
    if not vals or not labels:
        raise ValueError("nothing to plot: no positive values")
    lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
    hi = max(hi, lo + 1)
    W, H, L, T, B = 900, 420, 70, 40, 70
    R = 260                                   # legend column
    pw, ph = W - L - R, H - T - B
    nx = len(labels)

    def x(i):
        return L + (pw * i / (nx - 1) if nx > 1 else pw / 2)

    def y(v):
        return T + ph * (hi - math.log10(v)) / (hi - lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{max(H, T + 16 * len(series) + 20)}" '
           'font-family="monospace" font-size="11">',
           f'<text x="{L}" y="20" font-size="14">{escape(title)}</text>',
           f'<text x="12" y="{T + ph / 2}" transform="rotate(-90 12 {T + ph / 2})">{escape(y_label)}</text>']
    for e in range(lo, hi + 1):
        yy = y(10.0 ** e)
        out.append(f'<line x1="{L}" y1="{yy:.1f}" x2="{L + pw}" y2="{yy:.1f}" stroke="#ddd"/>'
                   f'<text x="{L - 6}" y="{yy + 4:.1f}" text-anchor="end">1e{e}</text>')
    for i, lab in enumerate(labels):
        out.append(f'<text x="{x(i):.1f}" y="{T + ph + 14}" text-anchor="end" '
                   f'transform="rotate(-45 {x(i):.1f} {T + ph + 14})">{escape(str(lab))}</text>')
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    for k, (name, ys) in enumerate(series.items()):
        col = _hex(k * 137.5, 0.42, 0.75)
        run = []
        for i, v in enumerate(list(ys) + [None]):
            if v is not None and v > 0:
                run.append(f"{x(i):.1f},{y(v):.1f}")
                out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{col}"/>')
            elif run:
                out.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{col}" stroke-width="1.5"/>')
                run = []
        ly = T + 8 + 16 * k
        out.append(f'<line x1="{L + pw + 14}" y1="{ly}" x2="{L + pw + 34}" y2="{ly}" stroke="{col}" stroke-width="3"/>'
                   f'<text x="{L + pw + 40}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
