"""Replay captured corpora of the float tensor-core families through warpsim.numerics.fused.tc_dot.

Prints, per opcode (and selector) and per input distribution, how many D words
differ from the captured ones.

    PYTHONPATH=. python3 warpsim/hw/offline/fit_float.py                       # committed + deep corpora, dense
    PYTHONPATH=. python3 warpsim/hw/offline/fit_float.py --sparse              # also sparse entries
    PYTHONPATH=. python3 warpsim/hw/offline/fit_float.py --set frac=24 --match bf16   # try a variant
    PYTHONPATH=. python3 warpsim/hw/offline/fit_float.py --show 5              # print the first differing elements
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from warpsim.numerics import fused as _arith, recipes as _recipes  # noqa: E402
from warpsim.isa.catalog import BY_OPCODE  # noqa: E402
from warpsim.isa.layouts import layout  # noqa: E402
from warpsim.hw import Corpus  # noqa: E402
from warpsim.hw.offline.fit_chain import matrices as _chain_matrices  # noqa: E402

FAMILIES = ("f16", "bf16", "tf32", "fp8")
DEFAULT_CORPORA = (
    "tests/golden/corpus_sm90.npz",
    ".cap/h200/deep_f16_bf16_tf32.npz",
    ".cap/h200/deep_fp8.npz",
)
#: sparse shapes replayed with --sparse
SPARSE_OK = {("f16", "m16n8k16"), ("f16", "m16n8k32"), ("bf16", "m16n8k16"), ("bf16", "m16n8k32"),
             ("tf32", "m16n8k8"), ("tf32", "m16n8k16"), ("fp8", "m16n8k64")}


def tf32_sparse_b(ins, ent, M):
    """B operand a tf32 sparse A element meets, per (warp, row, col, compressed element).

    Fitted on the captures (valid and arbitrary metadata): a tf32 group of two
    logical columns is four 16-bit halves h = 0..3 (row base + h // 2, low half
    when h is even); the element's two 2-bit metadata fields i0, i1 pick the
    halves that form the low and the high 16 bits of the B value it multiplies.
    Valid metadata (0b0100, 0b1110) thus selects B rows base and base + 1.
    """
    from warpsim.isa.sparse import metadata_table
    W = M["a"].shape[0]
    m, n, k = ins.mnk
    kk = M["a"].shape[2]
    t = metadata_table(ins.opcode, ent["selector"])
    tab = layout(ins.opcode, "a")
    e = ent["e"]
    f0 = ((e[:, t[..., 0]] >> t[..., 1].astype(np.uint32)) & np.uint32(3)).astype(np.int64)
    f1 = ((e[:, t[..., 0]] >> (t[..., 1] + 2).astype(np.uint32)) & np.uint32(3)).astype(np.int64)
    I0 = np.zeros((W, m, kk), np.int64)
    I1 = np.zeros((W, m, kk), np.int64)
    BASE = np.zeros((W, m, kk), np.int64)
    I0[:, tab[..., 1], tab[..., 2]] = f0
    I1[:, tab[..., 1], tab[..., 2]] = f1
    BASE[:, tab[..., 1], tab[..., 2]] = np.broadcast_to(t[..., 2], f0.shape)
    Bt = np.transpose(M["b"], (0, 2, 1))
    wi = np.arange(W)[:, None, None, None]
    ji = np.arange(n)[None, None, :, None]

    def half(h):
        v = Bt[wi, ji, BASE[:, :, None, :] + h[:, :, None, :] // 2]
        return np.where(h[:, :, None, :] % 2 == 1, v >> np.uint64(16), v & np.uint64(0xFFFF))

    return ((half(I1) << np.uint64(16)) | half(I0)).reshape(-1, kk)


def matrices(ins, ent):
    """Raw element bits of A, B, C, D as (warps, rows, cols) uint64."""
    return _chain_matrices(ins, ent, by_product=False)


def rows_for(ins, ent):
    """(A rows, B columns, C, D, distribution name) per output element."""
    M = matrices(ins, ent)
    W = M["a"].shape[0]
    m, n, k = ins.mnk
    kk = M["a"].shape[2]
    A = np.repeat(M["a"][:, :, None, :], n, axis=2).reshape(-1, kk)
    Bt = np.transpose(M["b"], (0, 2, 1))          # (W, n, k)
    if ins.is_sparse and ins.atype == "tf32":
        B = tf32_sparse_b(ins, ent, M)
    elif ins.is_sparse:
        from warpsim.isa.sparse import logical_columns
        lc = logical_columns(ins, ent["selector"], ent["e"])   # (W, 32, elems)
        tab = layout(ins.opcode, "a")
        LC = np.zeros((W, m, kk), dtype=np.int64)
        LC[:, tab[..., 1], tab[..., 2]] = lc
        # B[w, LC[w,i,c], j] for every (w, i, j, c)
        wi = np.arange(W)[:, None, None, None]
        ji = np.arange(n)[None, None, :, None]
        B = Bt[wi, ji, LC[:, :, None, :]].reshape(-1, kk)
    else:
        B = np.repeat(Bt[:, None, :, :], m, axis=1).reshape(-1, kk)
    C = M["c"].reshape(-1)
    D = M["d"].reshape(-1)
    dist = np.empty(W, dtype=object)
    for name, first, nw in ent["distributions"]:
        dist[first:first + nw] = name
    return (np.ascontiguousarray(A), np.ascontiguousarray(B), C, D, np.repeat(dist, m * n))


def params(ins, overrides):
    if not overrides:
        return _recipes.recipe_params(ins)
    r = _recipes.find_recipe(ins)
    fields = {f.name: f.type for f in dataclasses.fields(r)}
    kw = {}
    for key, val in overrides.items():
        if key not in fields:
            raise SystemExit(f"unknown recipe field {key!r}; fields: {sorted(fields)}")
        kw[key] = int(val) if val.lstrip("-").isdigit() else (None if val == "None" else val)
    saved = _recipes.find_recipe
    new = dataclasses.replace(r, **kw)
    try:
        _recipes.find_recipe = lambda i, arch="sm_90": new
        return _recipes.recipe_params(ins)
    finally:
        _recipes.find_recipe = saved


def replay(path, *, sparse=False, match=(), overrides=None, show=0, quiet=False):
    corpus = Corpus(path)
    totals = [0, 0]
    for idx in range(len(corpus)):
        item = corpus.manifest["entries"][idx]
        ins = BY_OPCODE[item["opcode"]]
        if ins.family not in FAMILIES:
            continue
        if ins.is_sparse and not sparse:
            continue
        if ins.is_sparse and (ins.family, ins.shape) not in SPARSE_OK:
            continue
        if not all(mm in ins.opcode for mm in match):
            continue
        ent = corpus.entry(idx)
        A, B, C, D, dist = rows_for(ins, ent)
        p = params(ins, overrides)
        out = np.zeros(len(D), dtype=np.uint64)
        _arith.tc_dot_rows(A, B, C, A.shape[1], p, out)
        bad = out != D
        per = collections.OrderedDict()
        for dn in dict.fromkeys(dist):
            sel = dist == dn
            per[dn] = (int(bad[sel].sum()), int(sel.sum()))
        nb = int(bad.sum())
        totals[0] += nb
        totals[1] += len(D)
        if not quiet or nb:
            tag = f" sel {item['selector']}" if ins.is_sparse else ""
            print(f"{nb:6d}/{len(D):6d}  {ins.opcode}{tag}  " +
                  " ".join(f"{k}:{v[0]}" for k, v in per.items()))
        for i in np.flatnonzero(bad)[:show]:
            w = ins.elem("d").bits // 4
            print(f"      elem {i} ({dist[i]}): got {int(out[i]):0{w}x} want {int(D[i]):0{w}x}  "
                  f"C {int(C[i]):x}  A {[hex(int(x)) for x in A[i]]}  B {[hex(int(x)) for x in B[i]]}")
    return totals


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="*", default=None)
    ap.add_argument("--sparse", action="store_true", help="also replay sparse entries (known metadata shapes)")
    ap.add_argument("--match", action="append", default=[], help="only opcodes containing this text")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Recipe field for every replayed entry (e.g. frac=24)")
    ap.add_argument("--show", type=int, default=0, help="print this many differing elements per entry")
    ap.add_argument("--quiet", action="store_true", help="print only entries with differences")
    a = ap.parse_args(argv)
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    paths = a.corpora or [p for p in DEFAULT_CORPORA if os.path.exists(p)]
    overrides = dict(s.split("=", 1) for s in a.set)
    grand = [0, 0]
    for path in paths:
        print(f"== {path}")
        t = replay(path, sparse=a.sparse, match=a.match, overrides=overrides, show=a.show, quiet=a.quiet)
        print(f"   {t[0]} of {t[1]} D words differ")
        grand[0] += t[0]
        grand[1] += t[1]
    print(f"TOTAL: {grand[0]} of {grand[1]} D words differ")
    return 0 if grand[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
