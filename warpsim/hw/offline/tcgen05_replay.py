"""Compare a tcgen05 capture (``warpsim/hw/tcgen05_capture.py`` on a B200) with warpsim's model.

    python warpsim/hw/offline/tcgen05_replay.py DIR/tcgen05_sm100a.npz

For every case the same shared-memory bytes, descriptors, C words and scale cells go through
:func:`warpsim.tcgen05_mma`; prints the differing D words per case and exits 1 if any differ.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

from warpsim.hw.tcgen05_capture import META_COL, NCOLS, SF_COL_A, SF_COL_B  # noqa: E402


def model_d(case, inp, enable_d=True):
    """D words (128, N) as warpsim models them, from the bytes and words one capture kernel used (a CTA pair's:
    (2, 128, N), each CTA's tensor memory)."""
    import warpsim
    from warpsim.ptx.tmem import TensorMemory

    sp, _, _, _, n, *rest = case
    pair = "pair" in rest
    tms = []
    for p in range(2 if pair else 1):       # a pair's arrays have a leading CTA axis
        tm = TensorMemory()
        tm.alloc(NCOLS)
        tm.cells[:, :n] = inp["c"][p] if pair else inp["c"]
        tm.cells[:, SF_COL_A:SF_COL_A + 16] = inp["sf"][p] if pair else inp["sf"]
        tms.append(tm)
    tm = tms[0]
    kw = dict(scale_a_taddr=SF_COL_A, scale_b_taddr=SF_COL_B) if ".block_scale" in sp else {}
    adesc = int(inp["adesc"])
    if "atmem" in rest:           # A from tensor memory (its cells where the scale cells go)
        kw, adesc = dict(a_taddr=SF_COL_A), None
    if ".sp." in sp:
        kw["meta_taddr"] = META_COL
    if pair:
        kw["peer"] = (tms[1], inp["img"][1])
    warpsim.tcgen05_mma(sp, tm, 0, adesc, int(inp["bdesc"]), int(inp["idesc"]), smem=inp["img"][0] if pair else inp["img"],
                        enable_input_d=enable_d, **kw)
    d = np.stack([t.cells[:, :n] for t in tms])
    return d if pair else d[0]


def replay(path) -> list[dict]:
    z = np.load(path)
    out = []
    for i, text in enumerate(z["cases"]):
        case = tuple(json.loads(str(text)))
        desc = z[f"{i}.desc"]
        inp = dict(img=z[f"{i}.img"], c=z[f"{i}.c"], sf=z[f"{i}.sf"], adesc=desc[0], bdesc=desc[1], idesc=desc[2])
        gpu = z[f"{i}.gpu"]
        model = model_d(case, inp)
        out.append({"case": case, "words": int(gpu.size), "differing_words": int((gpu != model).sum())})
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    res = replay(argv[0])
    for r in res:
        print(f"{r['differing_words']:6d} of {r['words']:6d} words differ: {' '.join(map(str, r['case']))}")
    return 1 if any(r["differing_words"] for r in res) else 0


if __name__ == "__main__":
    sys.exit(main())
