"""Which wgmma.mma_async forms ptxas accepts for sm_90a: the evidence behind the catalog's wgmma rows.

    python3 warpsim/hw/offline/wgmma_enumerate.py [--sparse]

Stage 1 tries every k in {8, 16, 32, 64, 128, 256}, D type in {f16, f32, s32} and A/B type pair
(with and without .satfinite, b1 with .and/.xor.popc) at N = 64; stage 2 tries every N = 8..256
(step 8) for the combinations stage 1 accepted, each with descriptor A and register A.  Prints
the accepted opcodes' count and whether they equal the catalog.
"""

import itertools
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from warpsim.hw.wgmma_capture import ptx_source  # noqa: E402
from warpsim.isa.catalog import WGMMA_CATALOG, WGMMA_SP_CATALOG  # noqa: E402

FL = ("f16", "bf16", "tf32", "e4m3", "e5m2")
IN = ("s8", "u8")


def imms(a, reg, sparse):
    out = ["sel=0"] if sparse else []
    if a in ("f16", "bf16"):
        return out + ["1", "1"] + (["0"] if reg else ["0", "0"])
    if a in ("tf32", "e4m3", "e5m2"):
        return out + ["1", "1"]
    return out


def accepted(op, a, reg, sparse):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "w.ptx"), "w") as f:
            f.write(ptx_source([(op, "reg" if reg else "desc", imms(a, reg, sparse))], version="8.7"))
        r = subprocess.run(["ptxas", "-arch=sm_90a", "-o", os.devnull, os.path.join(d, "w.ptx")], capture_output=True)
    return r.returncode == 0


def main(sparse=False):
    head = "wgmma.mma_async." + ("sp." if sparse else "") + "sync.aligned."
    cands = []
    for k in (8, 16, 32, 64, 128, 256):
        for dt in ("f16", "f32", "s32"):
            for a, b in itertools.product(FL + IN + ("b1",), repeat=2):
                if (a in FL) != (b in FL) or (("b1" in (a, b)) and a != b):
                    continue
                tails = [f".{dt}.b1.b1.and.popc", f".{dt}.b1.b1.xor.popc"] if a == "b1" else \
                    [f"{'.satfinite' if s else ''}.{dt}.{a}.{b}" for s in ((False, True) if a in IN else (False,))]
                cands += [(f"k{k}{t}", a) for t in tails]
    with ThreadPoolExecutor(4) as ex:
        ok1 = list(ex.map(lambda c: accepted(f"{head}m64n64{c[0]}", c[1], False, sparse)
                          or accepted(f"{head}m64n64{c[0]}", c[1], True, sparse), cands))
    combos = [c for c, ok in zip(cands, ok1) if ok]
    jobs = [(f"{head}m64n{n}{c}", a) for c, a in combos for n in range(8, 257, 8)]
    with ThreadPoolExecutor(4) as ex:
        res = list(ex.map(lambda j: (accepted(j[0], j[1], False, sparse), accepted(j[0], j[1], True, sparse)), jobs))
    desc = {j[0] for j, r in zip(jobs, res) if r[0]}
    reg = {j[0] for j, r in zip(jobs, res) if r[1]}
    cat = {i.opcode for i in (WGMMA_SP_CATALOG if sparse else WGMMA_CATALOG)}
    print(f"{len(cands)} combinations tried at N = 64, {len(combos)} accepted; {len(jobs)} opcodes tried")
    print(f"accepted with descriptor A: {len(desc)}, with register A: {len(reg)}; equal to the catalog: "
          f"{desc == reg == cat}")
    return 0 if desc == reg == cat else 1


if __name__ == "__main__":
    sys.exit(main("--sparse" in sys.argv))
