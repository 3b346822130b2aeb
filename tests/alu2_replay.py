"""Replay of the gen_alu2 capture plan in warpsim: one small PTX kernel per form."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from warpsim.hw.golden import open_golden

HERE = Path(__file__).resolve().parent
CAPTURE_DIR = HERE / "ptx" / "data"
from warpsim.hw import ptx_alu2_cases as G  # noqa: E402

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


def ulps(a, b, bits):
    """|a - b| in units in the last place: distance on the monotone integer line of the format."""
    sign = np.uint64(1 << (bits - 1))

    def line(x):
        x = x.astype(np.uint64)
        mag = (x & ~sign).astype(np.float64)
        return np.where((x & sign) != 0, -mag, mag)
    return np.abs(line(a) - line(b))


# the PTX ISA's stated accuracy: (kind, bound, input domain); ulp bounds on normal results
APPROX_BOUNDS = {
    "rcp": ("ulp", 2, None), "sqrt": ("ulp", 2, None), "rsqrt": ("ulp", 2, None), "div": ("ulp", 2, None),
    "ex2": ("ulp", 4, None),
    "lg2": ("abs", 2.0 ** -22, (0.5, 2.0)),
    "sin": ("abs", 2.0 ** -20, (-np.pi, np.pi)), "cos": ("abs", 2.0 ** -20, (-np.pi, np.pi)),
    "tanh": ("rel", 2.0 ** -10.9, None),
}
F64_APPROX_ULP = 1 << 33        # the f64 approximations give about 20 correct bits


def approx_error(f, got, want):
    """Error of warpsim's words ``got`` against the H100's ``want`` for approximate form ``f``:
    max ulp and fraction of words equal on finite normal results, NaN agreement, and whether the
    PTX ISA's bound for the unit holds (on its documented input domain)."""
    with np.errstate(all="ignore"):
        return _approx_error(f, got, want)


def _approx_error(f, got, want):
    bits = f.outs[0]
    fl = np.float32 if bits == 32 else np.float64
    gv, wv = got.view(fl).astype(np.float64), want.view(fl).astype(np.float64)
    x = np.asarray(G.inputs()[f.ins[0]]).view(fl).astype(np.float64)
    ok = np.isfinite(gv) & np.isfinite(wv) & (np.abs(wv) >= np.finfo(fl).tiny)
    u = ulps(got[ok], want[ok], bits)
    op = f.body.split()[0]
    kind, bound, dom = APPROX_BOUNDS[op.split(".")[0]]
    if dom is not None:
        ok &= (x >= dom[0]) & (x <= dom[1])
    if bits == 64:
        kind, bound = "ulp", F64_APPROX_ULP
    if kind == "ulp":
        err = ulps(got[ok], want[ok], bits)
    elif kind == "abs":
        err = np.abs(gv[ok] - wv[ok])
    else:
        err = np.abs(gv[ok] - wv[ok]) / np.maximum(np.abs(wv[ok]), np.finfo(fl).tiny)
    worst = float(err.max()) if err.size else 0.0
    return {"op": op, "max_ulp": float(u.max()) if u.size else 0.0, "equal": float(np.mean(got == want)),
            "nan_agree": float(np.mean(np.isnan(gv) == np.isnan(wv))), "kind": kind, "worst": worst,
            "bound": bound, "within_bound": worst <= bound}


def report():
    """Print the measured error of every approximate form (for docs/ptx_alu.md)."""
    from warpsim.ptx import instruction_status
    cap = open_golden(CAPTURE)
    print("| form | words equal | max ulp | bound kind | worst | bound |")
    print("| --- | --- | --- | --- | --- | --- |")
    for f in G.FORMS:
        op = f.body.split()[0]
        try:
            if instruction_status(op)[0] != "approximate":
                continue
        except ValueError:
            continue
        st = approx_error(f, run_form(f)[0], cap[f"{f.name}.o0"])
        print(f"| `{op}` | {st['equal']:.4f} | {st['max_ulp']:.0f} | {st['kind']} | {st['worst']:.3g} | {st['bound']:.3g} |")


if __name__ == "__main__":
    report()
