"""Replay captured corpora of the scalar-chain forms (f16x4, f64) through ``chain_dot``.

For every corpus entry whose family has a chain recipe, each output element is
recomputed from the captured A, B, C words with ``warpsim.numerics.chain.chain_dot``
and the predicted D is packed back into register words; the script prints, per
opcode and input distribution, how many D words differ from the hardware's.

    PYTHONPATH=. python3 warpsim/hw/offline/fit_chain.py                 # both default corpora
    PYTHONPATH=. python3 warpsim/hw/offline/fit_chain.py --alternatives  # also score rejected recipes
    PYTHONPATH=. python3 warpsim/hw/offline/fit_chain.py some/corpus.npz --arch sm_90

Exit status 1 when any word differs (for the recipes of record).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from numba import njit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from warpsim.numerics import chain as ac  # noqa: E402
from warpsim.isa.bits import elements_to_words, words_to_elements  # noqa: E402
from warpsim.isa.catalog import BY_OPCODE  # noqa: E402
from warpsim.isa.layouts import layout  # noqa: E402
from warpsim.hw import Corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = [
    os.path.join(ROOT, ".cap", "h100", "corpus.npz"),
    os.path.join(ROOT, ".cap", "h200", "deep_f16x4_f64.npz"),
]

#: Rejected variants, as (label, recipe fields to override), scored with --alternatives.
ALTERNATIVES = {
    "f16x4": [
        ("one chain k0..k3, then + C", dict(group=0, first="fmul", combine="c_last")),
        ("pairs, (S01 + S23) + C", dict(group=2, combine="c_last")),
        ("pairs, FFMA(k0, RZ) instead of FMUL", dict(group=2, first="ffma_zero")),
        ("one chain from C", dict(group=0, first="from_c")),
        ("pairs, descending k", dict(group=2, korder="desc")),
    ],
    "f64": [
        ("chain from C, descending k", dict(korder="desc")),
        ("chain from +0, then + C", dict(first="ffma_zero", combine="c_last")),
        ("chains of 4 from +0, C added first", dict(group=4, first="ffma_zero", combine="c_first")),
        ("NaN priority a, b, c", dict(nan="abc")),
        ("NaN priority c, b, a", dict(nan="cba")),
        ("invalid operation gives 0x7fffffffffffffff", dict(nan_bits=0x7FFFFFFFFFFFFFFF)),
    ],
}


def matrices(ins, item, by_product=True):
    """Raw element bits of A, B, C, D as (warps, products, rows, cols) uint64; by_product False:
    (warps, rows, cols), every product's elements on one matrix."""
    out = {}
    for role in "abcd":
        t = ins.elem(role)
        el = words_to_elements(item[role], t.bits)
        tab = layout(ins.opcode, role)
        rows, cols = ins.matrix_shape(role)
        lead = (ins.products,) if by_product else ()
        m = np.zeros((el.shape[0],) + lead + (rows, cols), dtype=np.uint64)
        m[(slice(None),) + ((tab[..., 0],) if by_product else ()) + (tab[..., 1], tab[..., 2])] = el
        out[role] = m
    return out


@njit(cache=False)
def _replay(A, B, C, p):
    W, P, M, K = A.shape
    N = B.shape[3]
    D = np.zeros((W, P, M, N), dtype=np.uint64)
    col = np.empty(K, dtype=np.uint64)
    for w in range(W):
        for q in range(P):
            for j in range(N):
                for k in range(K):
                    col[k] = B[w, q, k, j]
                for i in range(M):
                    D[w, q, i, j] = ac.chain_dot(A[w, q, i, :], col, K, C[w, q, i, j], p)
    return D


def predict_words(ins, m, p):
    """Predicted D register words, shape (warps, 32, words)."""
    D = _replay(m["a"], m["b"], m["c"], p)
    tab = layout(ins.opcode, "d")
    el = D[:, tab[..., 0], tab[..., 1], tab[..., 2]]
    return elements_to_words(el, ins.elem("d").bits)


def params_with(ins, arch, overrides):
    key = (ins.family, ins.dtype, ins.ctype)
    saved = ac.CHAIN_RECIPES[arch][key]
    try:
        ac.CHAIN_RECIPES[arch][key] = {**saved, **overrides}
        return ac.chain_params(ins, arch)
    finally:
        ac.CHAIN_RECIPES[arch][key] = saved


def score(ins, item, m, p):
    got = predict_words(ins, m, p)
    bad = got != item["d"]
    return [(name, int(bad[first:first + n].sum()), int(bad[first:first + n].size))
            for name, first, n in item["distributions"]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="*", default=DEFAULT)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--alternatives", action="store_true", help="also score the rejected recipes")
    a = ap.parse_args(argv)
    total_bad = total = 0
    for path in a.corpora:
        corpus = Corpus(path)
        print(f"== {os.path.relpath(path, ROOT)} ({corpus.manifest.get('gpu', '?')})")
        for idx in range(len(corpus)):
            item = corpus.entry(idx)
            ins = BY_OPCODE[item["opcode"]]
            try:
                p = ac.chain_params(ins, a.arch)
            except NotImplementedError:
                continue
            m = matrices(ins, item)
            res = score(ins, item, m, p)
            bad = sum(r[1] for r in res)
            words = sum(r[2] for r in res)
            total_bad += bad
            total += words
            dist = " ".join(f"{name}={nb}" for name, nb, _ in res)
            print(f"  {ins.opcode:50s} {bad:6d}/{words} words differ  [{dist}]")
            if a.alternatives:
                for label, over in ALTERNATIVES.get(ins.family, []):
                    alt = score(ins, item, m, params_with(ins, a.arch, over))
                    dist = " ".join(f"{name}={nb}" for name, nb, _ in alt)
                    print(f"      alt {label:44s} {sum(r[1] for r in alt):6d}  [{dist}]")
    print(f"total: {total_bad} of {total} D words differ")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
