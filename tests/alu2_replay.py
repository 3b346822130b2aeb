"""Replay of the gen_alu2 capture plan in warpsim: one small PTX kernel per form."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CAPTURE_DIR = HERE / "ptx" / "capture"
sys.path.insert(0, str(CAPTURE_DIR))
import gen_alu2 as G  # noqa: E402

CAPTURE = Path(os.environ.get("WARPSIM_ALU2_CAPTURE", CAPTURE_DIR / "cap_alu2.npz"))
_PRE = {16: "h", 32: "r", 64: "l"}
_UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def kernel_ptx(f: G.Form) -> str:
    """A PTX module running form ``f`` once per thread over its input arrays."""
    subs = {f"o{j}": f"%o{_PRE[w]}{j}" for j, w in enumerate(f.outs)}
    subs.update({f"i{j}": f"%i{_PRE[G._width(k)]}{j}" for j, k in enumerate(f.ins)})
    subs.update({f"q{j}": f"%q{j}" for j in range(4)})
    params = [f".param .u64 in{j}" for j in range(len(f.ins))] + [f".param .u64 out{j}" for j in range(len(f.outs))]
    lines = [".version 8.0", ".target sm_90a", ".address_size 64",
             f".visible .entry k({', '.join(params)})", "{",
             ".reg .b16 %ih<8>;", ".reg .b32 %ir<8>;", ".reg .b64 %il<8>;",
             ".reg .b16 %oh<8>;", ".reg .b32 %or<8>;", ".reg .b64 %ol<8>;", ".reg .pred %q<4>;",
             ".reg .b32 %t<4>;", ".reg .b64 %a<40>;",
             "mov.u32 %t1, %ctaid.x;", "mov.u32 %t2, %ntid.x;", "mov.u32 %t3, %tid.x;", "mad.lo.s32 %t0, %t1, %t2, %t3;"]
    n = 0
    for j, k in enumerate(f.ins):
        w = G._width(k)
        lines += [f"ld.param.u64 %a{n}, [in{j}];", f"mul.wide.u32 %a{n + 1}, %t0, {w // 8};",
                  f"add.s64 %a{n + 2}, %a{n}, %a{n + 1};", f"ld.global.b{w} %i{_PRE[w]}{j}, [%a{n + 2}];"]
        n += 3
    lines.append(f.body.format(**subs))
    for j, w in enumerate(f.outs):
        lines += [f"ld.param.u64 %a{n}, [out{j}];", f"mul.wide.u32 %a{n + 1}, %t0, {w // 8};",
                  f"add.s64 %a{n + 2}, %a{n}, %a{n + 1};", f"st.global.b{w} [%a{n + 2}], %o{_PRE[w]}{j};"]
        n += 3
    lines += ["ret;", "}"]
    return "\n".join(lines)


def run_form(f: G.Form, count: int = G.N):
    """warpsim's outputs of form ``f`` over the first ``count`` inputs (a multiple of 32)."""
    import warpsim.ptx as wp
    IN = G.inputs()
    ins = [np.array(IN[k][:count]) for k in f.ins]
    outs = [np.zeros(count, _UINT[w]) for w in f.outs]
    block = min(count, G.BLOCK)
    wp.load(kernel_ptx(f)).launch("k", count // block, block, ins + outs)
    return outs
