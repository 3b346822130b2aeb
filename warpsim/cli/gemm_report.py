"""Numerics report of a whole GEMM: how far the tensor-core result is from the exactly rounded product.

The reference for every output is the exact value S = sum_k A[i,k] B[k,j] + C[i,j], rounded once to
nearest even into D's format.  S is held exactly as a non-overlapping expansion of float64 values
(Shewchuk's algorithm; every product of two elements is split into two float64 values with an fma,
so f64 inputs are exact too), rounded correctly to float64, and a tie of D's format is resolved with
the sign of the residual.  ``warpsim gemm`` prints the table; :func:`report` returns it as data.
"""

from __future__ import annotations

import numpy as np

def _to_format(x, r, dt):
    """Round float64 x (with the sign r of the exact value's residual) once into numpy float dtype dt."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(dt)
        lo = np.where(y.astype(np.float64) > x, np.nextafter(y, dt.type(-np.inf)), y)
        hi = np.where(y.astype(np.float64) > x, y, np.nextafter(y, dt.type(np.inf)))
        mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
    tie = np.isfinite(mid) & (x == mid) & (r != 0)
    return np.where(tie & (r > 0), hi, np.where(tie & (r < 0), lo, y))


def _ordered(bits, width):
    """Sign-magnitude float bits -> integers in value order (adjacent floats differ by 1)."""
    b = bits.astype(np.int64)
    sign = (b >> (width - 1)) & 1
    mag = b & ((1 << (width - 1)) - 1)
    return np.where(sign == 1, -mag, mag)


PERCENTILES = (50, 90, 99, 99.9, 100)


def report(A, B, C, D, ins):
    """Statistics of D (what warpsim.gemm returned) against the exactly rounded A @ B + C."""
    from ..isa.codec import to_bits

    td = ins.elem("d")
    out = {"outputs": int(D.size)}
    if not td.is_float:
        exact = np.asarray(A, np.int64) @ np.asarray(B, np.int64) + np.asarray(C, np.int64)
        diff = np.abs(exact - np.asarray(D, np.int64)).astype(np.float64).ravel()
        nz = exact.ravel() != 0
        out.update(finite=int(D.size), ulp=diff, rel=diff[nz] / np.abs(exact.ravel()[nz].astype(np.float64)),
                   equal=float(np.mean(diff == 0)), precision_bits=31, nonfinite_equal=0, nonfinite=0)
        return out
    a = np.asarray(A, dtype=np.float64)
    b = np.asarray(B, dtype=np.float64)
    c = np.asarray(C, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.isfinite(a).all(axis=1)[:, None] & np.isfinite(b).all(axis=0)[None, :] & np.isfinite(c))
    a0, b0, c0 = np.where(np.isfinite(a), a, 0), np.where(np.isfinite(b), b, 0), np.where(np.isfinite(c), c, 0)
    X = np.empty(D.shape, np.float64)
    R = np.empty(D.shape, np.int8)
    from ..engine.gemm import exact_products

    exact_products(np.ascontiguousarray(a0), np.ascontiguousarray(b0.T), np.ascontiguousarray(c0), X, R)
    dt = np.dtype(td.numpy_dtype)
    ref = _to_format(X, R, dt)
    dbits = to_bits(np.asarray(D), td)
    rbits = to_bits(ref, td)
    df = np.asarray(D, dtype=np.float64)
    fin = ok & np.isfinite(df) & np.isfinite(ref.astype(np.float64))
    ulp = np.abs(_ordered(dbits, td.bits) - _ordered(rbits, td.bits))[fin]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(df - X) / np.abs(X)
    rel = rel[fin & (X != 0)]
    out.update(finite=int(fin.sum()), ulp=ulp.astype(np.float64), rel=rel, equal=float(np.mean(ulp == 0)) if ulp.size else 1.0,
               precision_bits=td.man_bits + 1, nonfinite=int((~fin).sum()),
               nonfinite_equal=int(((dbits == rbits) & ~fin).sum()))
    return out


def table(st) -> str:
    lines = [f"{'':<16}" + "".join(f"{('p' + format(p, 'g')) if p < 100 else 'max':>11}" for p in PERCENTILES)]
    for name, key, fmt in (("ulp distance", "ulp", "{:>11.0f}"), ("relative error", "rel", "{:>11.2e}")):
        v = st[key]
        vals = np.percentile(v, PERCENTILES) if v.size else [np.nan] * len(PERCENTILES)
        lines.append(f"{name:<16}" + "".join(fmt.format(x) for x in vals))
    bl = np.log2(1 + st["ulp"]) if st["ulp"].size else np.zeros(1)
    lines.append(f"equal to the exactly rounded result: {100 * st['equal']:.2f}% of {st['finite']} finite outputs")
    lines.append(f"bits lost, log2(1 + ulps): mean {bl.mean():.2f}, p99 {np.percentile(bl, 99):.2f}, "
                 f"max {bl.max():.2f} (of {st['precision_bits']} significant bits)")
    if st["nonfinite"]:
        lines.append(f"non-finite outputs or inputs: {st['nonfinite']} ({st['nonfinite_equal']} with the exactly "
                     "rounded result's bits)")
    return "\n".join(lines)


def histogram_svg(st, title: str) -> str:
    """Bar chart of the ulp distances: 0, 1, 2, 3-4, 5-8, ... (powers of two)."""
    u = st["ulp"].astype(np.int64)
    edges = [(0, 0), (1, 1), (2, 2)]
    lo = 3
    top = int(u.max()) if u.size else 0
    while lo <= max(top, 4):
        hi = 2 * (lo - 1)
        edges.append((lo, hi))
        lo = hi + 1
    counts = [int(((u >= a) & (u <= b)).sum()) for a, b in edges]
    total = max(1, sum(counts))
    W, H, L, T, B = 40 * len(edges) + 90, 320, 60, 50, 70
    ph = H - T - B
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="13">{_esc(title)}</text>',
           f'<text x="{W / 2}" y="36" text-anchor="middle">ulp distance from the exactly rounded A@B+C '
           f'({st["finite"]} finite outputs)</text>',
           f'<line x1="{L}" y1="{T + ph}" x2="{W - 20}" y2="{T + ph}" stroke="#000000"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{T + ph}" stroke="#000000"/>']
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        y = T + ph * (1 - frac)
        out.append(f'<text x="{L - 6}" y="{y + 4}" text-anchor="end">{100 * frac:.0f}%</text>')
        out.append(f'<line x1="{L}" y1="{y}" x2="{W - 20}" y2="{y}" stroke="#dddddd"/>')
    for n, ((a, b), c) in enumerate(zip(edges, counts)):
        x = L + 10 + 40 * n
        h = ph * c / total
        lab = f"{a}" if a == b else (f"&#8804;{b}" if b < 1024 else f"&#8804;2^{b.bit_length() - 1}")
        out.append(f'<rect x="{x}" y="{T + ph - h:.1f}" width="30" height="{h:.1f}" fill="#3a78c2"/>')
        out.append(f'<text x="{x + 15}" y="{T + ph - h - 4:.1f}" text-anchor="middle" font-size="9">{c}</text>')
        out.append(f'<text x="{x + 15}" y="{T + ph + 14}" text-anchor="middle" font-size="9">{lab}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 20}" text-anchor="middle">ulps</text>')
    out.append("</svg>")
    return "\n".join(out)


def _esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def inputs(ins, M, N, K, dist, seed):
    """Seeded matrices of the operand types from one of the corpus distributions (raw bits -> values)."""
    from ..hw.inputs import BIT_DISTS, FLOAT_DISTS, INT_DISTS, float_elements, int_elements
    from ..isa.codec import to_values

    rng = np.random.default_rng(seed)
    out = []
    for role, shape in (("a", (M, K)), ("b", (K, N)), ("c", (M, N))):
        t = ins.elem(role)
        allowed = FLOAT_DISTS if t.is_float else (BIT_DISTS if t.kind == "bits" else INT_DISTS)
        if role == "c" and t.name == "s32":
            allowed = INT_DISTS
        if dist not in allowed and role != "c":
            raise ValueError(f"distribution {dist!r} does not apply to {t.name}; allowed: {', '.join(allowed)}")
        d = dist if dist in allowed else allowed[0]
        gen = float_elements if t.is_float else int_elements
        bits = gen(t, d, role, rng, int(np.prod(shape))).reshape(shape)
        out.append(to_values(bits, t))
    if ins.is_sparse:             # keep the first two of every four (tf32: one of two)
        a = out[0].copy()
        per, keep = (2, 1) if ins.atype == "tf32" else (4, 2)
        us = 2 if ins.elem("a").bits == 4 else 1
        g = a.reshape(M, K // (per * us), per, us)
        g[:, :, keep:] = 0
        out[0] = a
    return out
