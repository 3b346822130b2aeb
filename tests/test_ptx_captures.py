"""Per-instruction replays of words captured on an H100 (warpsim/hw/ptx_capture.md, tests/ptx/data/).

Every capture is replayed as a user would run it: a small PTX kernel (ld.global, the instruction,
st.global) launched through warpsim.ptx over the captured inputs; every output word must equal
the H100's.
"""

import json
from pathlib import Path

import numpy as np

from warpsim.hw.golden import open_golden
import pytest

import warpsim
import warpsim.ptx as wp
from warpsim.ptx import wmma as W

DATA = Path(__file__).parent / "ptx" / "data"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
INPUTS = open_golden(DATA / "cap_inputs.npz")

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
REG = {"h": ("%rs", "b16", 2), "r": ("%r", "b32", 4), "l": ("%rd", "b64", 8), "f": ("%f", "f32", 4),
       "d": ("%fd", "f64", 8)}


def _recs(family):
    return [pytest.param(r, id=r["op"]) for r in MANIFEST if r["family"] == family]


def _caps(family):
    return open_golden(DATA / f"cap_{family}.npz")


def _thread_kernel(name, decls, srcs, regs, cvta):
    """The head of a kernel ``name`` of one thread per element: its parameters (in0.., out), ``decls``,
    the thread's index %t4 and a load of its element of every source (``regs``: source kind -> (register
    prefix, type, bytes); ``cvta``: addresses through cvta.to.global).  Returns (lines, source registers)."""
    params = ", ".join([f".param .u64 in{i}" for i in range(len(srcs))] + [".param .u64 out"])
    lines = [HEAD, f".visible .entry {name}({params})", "{", *decls,
             "mov.u32 %t1, %ctaid.x;", "mov.u32 %t2, %ntid.x;", "mov.u32 %t3, %tid.x;",
             "mad.lo.s32 %t4, %t1, %t2, %t3;"]
    names = []
    for i, s in enumerate(srcs):
        pre, typ, size = regs[s]
        lines.append(f"ld.param.u64 %a{3 * i}, [in{i}];")
        if cvta:
            lines.append(f"cvta.to.global.u64 %a{3 * i}, %a{3 * i};")
        lines += [f"mul.wide.u32 %a{3 * i + 1}, %t4, {size};", f"add.s64 %a{3 * i + 2}, %a{3 * i}, %a{3 * i + 1};",
                  f"ld.global.{typ} {pre}{i + 1}, [%a{3 * i + 2}];"]
        names.append(f"{pre}{i + 1}")
    return lines, names


# ---- cvt ----------------------------------------------------------------------------------------

def _cvt_kernel(op, dst, srcs):
    """One thread per element: load each source, convert, store."""
    lines, names = _thread_kernel("cvt", (".reg .b32 %t<8>;", ".reg .b64 %a<16>;", ".reg .b16 %rs<4>;",
                                          ".reg .b32 %r<4>;", ".reg .b64 %rd<4>;", ".reg .f32 %f<4>;",
                                          ".reg .f64 %fd<4>;"), srcs, REG, True)
    pre, typ, size = REG[dst]
    lines += [f"{op} {pre}0, {', '.join(names)};",
              "ld.param.u64 %a12, [out];", "cvta.to.global.u64 %a12, %a12;",
              f"mul.wide.u32 %a13, %t4, {size};", "add.s64 %a14, %a12, %a13;",
              f"st.global.{typ} [%a14], {pre}0;", "ret;", "}"]
    return "\n".join(lines)


@pytest.mark.parametrize("rec", _recs("cvt"))
def test_cvt_capture(rec):
    caps = _caps("cvt")
    want = caps[rec["kernel"]]
    ins = [INPUTS[k].copy() for k in rec["inputs"]]
    out = np.zeros_like(want)
    mod = wp.load(_cvt_kernel(rec["op"], rec["dst"], rec["src"]))
    mod.launch("cvt", want.size // 256, 256, ins + [out])
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, (f"{bad.size} of {want.size} words differ; first at {bad[:4]}: inputs "
                           f"{[hex(int(x[bad[0]])) for x in ins]}, H100 {hex(int(want[bad[0]]))}, "
                           f"warpsim {hex(int(out[bad[0]]))}")


# ---- ldmatrix / stmatrix / movmatrix -----------------------------------------------------------

T, SW = 64, 512       # trials (one CTA of one warp each), shared words per trial


def _matrix_kernel(op, kind, n):
    """Shared memory filled from init[trial]; per-lane row offsets offs[trial, lane]; registers
    in/out as (trial, lane, 4)/(trial, lane, n) words."""
    regs = ", ".join(f"%q{i}" for i in range(n))
    body = [HEAD, ".visible .entry k(.param .u64 init, .param .u64 offs, .param .u64 regs, .param .u64 out)", "{",
            ".reg .b32 %r<16>;", ".reg .b32 %q<8>;", ".reg .b64 %rd<24>;", ".reg .pred %p<2>;",
            ".shared .align 16 .b8 sm[2048];",
            "mov.u32 %r1, %ctaid.x;", "mov.u32 %r2, %tid.x;",
            "ld.param.u64 %rd1, [init];", "ld.param.u64 %rd2, [offs];", "ld.param.u64 %rd3, [regs];",
            "ld.param.u64 %rd4, [out];",
            # copy this trial's 2 KiB of shared memory: 32 lanes x 4 x 16 bytes
            "mul.wide.u32 %rd5, %r1, 2048;", "add.s64 %rd6, %rd1, %rd5;",
            "mul.wide.u32 %rd7, %r2, 16;", "add.s64 %rd8, %rd6, %rd7;",
            "mov.u32 %r3, sm;", "shl.b32 %r4, %r2, 4;", "add.s32 %r5, %r3, %r4;", "mov.u32 %r6, 0;",
            "LOOP:",
            "ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [%rd8];",
            "st.shared.v4.u32 [%r5], {%r8, %r9, %r10, %r11};",
            "add.s64 %rd8, %rd8, 512;", "add.s32 %r5, %r5, 512;", "add.s32 %r6, %r6, 1;",
            "setp.lt.u32 %p1, %r6, 4;", "@%p1 bra LOOP;",
            "bar.sync 0;",
            # this lane's offset and registers
            "mad.lo.s32 %r7, %r1, 32, %r2;", "mul.wide.u32 %rd9, %r7, 4;", "add.s64 %rd10, %rd2, %rd9;",
            "ld.global.u32 %r12, [%rd10];", "add.s32 %r13, %r3, %r12;",
            "mul.wide.u32 %rd11, %r7, 16;", "add.s64 %rd12, %rd3, %rd11;",
            "ld.global.v4.u32 {%q4, %q5, %q6, %q7}, [%rd12];"]
    if kind == "ld":
        body += [f"{op} {{{regs}}}, [%r13];", f"mul.wide.u32 %rd13, %r7, {4 * n};", "add.s64 %rd14, %rd4, %rd13;"]
        body += [f"st.global.u32 [%rd14+{4 * i}], %q{i};" for i in range(n)]
    elif kind == "st":
        src = ", ".join(f"%q{4 + i}" for i in range(n))
        body += [f"{op} [%r13], {{{src}}};", "bar.sync 0;",
                 # copy shared memory back out
                 "mul.wide.u32 %rd15, %r1, 2048;", "add.s64 %rd16, %rd4, %rd15;", "add.s64 %rd17, %rd16, %rd7;",
                 "add.s32 %r5, %r3, %r4;", "mov.u32 %r6, 0;",
                 "BACK:", "ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r5];",
                 "st.global.v4.u32 [%rd17], {%r8, %r9, %r10, %r11};",
                 "add.s64 %rd17, %rd17, 512;", "add.s32 %r5, %r5, 512;", "add.s32 %r6, %r6, 1;",
                 "setp.lt.u32 %p1, %r6, 4;", "@%p1 bra BACK;"]
    else:
        body += [f"{op} %q0, %q4;", "mul.wide.u32 %rd13, %r7, 4;", "add.s64 %rd14, %rd4, %rd13;",
                 "st.global.u32 [%rd14], %q0;"]
    body += ["ret;", "}"]
    return "\n".join(body)


@pytest.mark.parametrize("rec", _recs("ldmatrix") + _recs("stmatrix") + _recs("movmatrix"))
def test_matrix_capture(rec):
    fam = rec["family"]
    want = _caps(fam)[rec["kernel"]]
    op = rec["op"]
    n = int(op.split(".x")[1][0]) if ".x" in op else 1
    kind = {"ldmatrix": "ld", "stmatrix": "st", "movmatrix": "mov"}[fam]
    offs = INPUTS["st_offs" if kind == "st" else "ld_offs"].copy()
    out = np.zeros_like(want)
    mod = wp.load(_matrix_kernel(op, kind, n))
    mod.launch("k", T, 32, [INPUTS["smem"].copy(), offs, INPUTS["regs4"].copy(), out])
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, f"{bad.size} of {want.size} words differ (first at {bad[:8]})"


# ---- wmma ---------------------------------------------------------------------------------------

def test_wmma_layout_tables_reproduce_every_load_and_store_capture():
    """Package layout data (warpsim/ptx/wmma_layouts.py) against the raw captured words."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("mk", Path(warpsim.__file__).parent / "hw" / "offline" / "make_wmma_layouts.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    tabs = mk.tables(MANIFEST, _caps("wmma_load"))
    assert len(tabs) == 72
    for (frag, lay, shape, typ), tab in tabs.items():
        assert np.array_equal(W.fragment(frag, shape, typ), tab), (frag, lay, shape, typ)


def _wmma_ldst_kernel(op, frag, nreg):
    regs = ", ".join(f"%q{i}" for i in range(nreg))
    body = [HEAD, ".visible .entry k(.param .u64 mem, .param .u64 regs, .param .u32 ldm)", "{",
            ".reg .b32 %r<8>;", ".reg .b32 %q<16>;", ".reg .b64 %rd<16>;",
            "ld.param.u64 %rd1, [mem];", "ld.param.u64 %rd2, [regs];", "ld.param.u32 %r1, [ldm];",
            "mov.u32 %r2, %tid.x;", "mov.u32 %r3, %ctaid.x;", "mad.lo.s32 %r4, %r3, 32, %r2;",
            f"mul.wide.u32 %rd3, %r4, {4 * nreg};", "add.s64 %rd4, %rd2, %rd3;"]
    if frag == "store":
        body += [f"ld.global.u32 %q{i}, [%rd4+{4 * i}];" for i in range(nreg)]
        body += [f"{op} [%rd1], {{{regs}}}, %r1;"]
    else:
        body += ["mov.u32 %r5, %nctaid.x;", "setp.eq.u32 %p1, %r3, 1;"]
        body = [b for b in body if not b.startswith("setp")]
        body += [f"{op} {{{regs}}}, [%rd1], %r1;"]
        body += [f"st.global.u32 [%rd4+{4 * i}], %q{i};" for i in range(nreg)]
    body += ["ret;", "}"]
    return "\n".join(body)


@pytest.mark.parametrize("rec", _recs("wmma_load"))
def test_wmma_load_capture(rec):
    want = _caps("wmma_load")[rec["kernel"]]
    key = rec["args"][0]["in"]
    mem = INPUTS[key].copy()
    trials = rec["grid"]
    nreg = want.size // (32 * trials)
    out = np.zeros_like(want)
    mod = wp.load(_wmma_ldst_kernel(rec["op"], "load", nreg))
    size = mem.size // trials
    for t in range(trials):          # one launch per trial: the matrix address is per warp
        o = np.zeros(32 * nreg, np.uint32)
        mod.launch("k", 1, 32, [np.ascontiguousarray(mem[t * size:(t + 1) * size]), o, rec["ldm"]])
        out[t * 32 * nreg:(t + 1) * 32 * nreg] = o
    assert np.array_equal(out, want), f"{int((out != want).sum())} of {want.size} words differ"


@pytest.mark.parametrize("rec", _recs("wmma_store"))
def test_wmma_store_capture(rec):
    want = _caps("wmma_store")[rec["kernel"]]
    regs = INPUTS[rec["args"][1]["in"]].copy()
    out = np.zeros_like(want)
    mod = wp.load(_wmma_ldst_kernel(rec["op"], "store", regs.size // 32))
    mod.launch("k", 1, 32, [out, regs, rec["ldm"]])
    assert np.array_equal(out, want), f"{int((out != want).sum())} of {want.size} words differ"


def _wmma_mma_kernel(op, rec):
    t = op.split(".")
    al, bl, shape = t[4], t[5], t[6]
    if len(t) == 9:
        at, dt, ct = "f16", t[7], t[8]
    else:
        dt, at, ct = t[7], t[8], t[10]
    M, N, K = W.SHAPES[shape]
    na, nb = W.registers("a", shape, at), W.registers("b", shape, at)
    nc, nd = W.registers("c", shape, ct), W.registers("c", shape, dt)
    es = {"f16": 2, "bf16": 2, "s8": 1, "u8": 1, "tf32": 4, "f32": 4, "s32": 4}
    lda = K if al == "row" else M
    ldb = N if bl == "row" else K
    R = lambda p, n, o=0: ", ".join(f"%{p}{o + i}" for i in range(n))
    return "\n".join([
        HEAD, ".visible .entry k(.param .u64 A, .param .u64 B, .param .u64 C, .param .u64 D)", "{",
        ".reg .b32 %a<8>;", ".reg .b32 %b<8>;", ".reg .b32 %c<8>;", ".reg .b32 %d<8>;", ".reg .b32 %r<4>;",
        ".reg .b64 %rd<16>;",
        "ld.param.u64 %rd1, [A];", "ld.param.u64 %rd2, [B];", "ld.param.u64 %rd3, [C];", "ld.param.u64 %rd4, [D];",
        "mov.u32 %r1, %ctaid.x;",
        f"mul.wide.u32 %rd5, %r1, {M * K * es[at]};", "add.s64 %rd6, %rd1, %rd5;",
        f"mul.wide.u32 %rd7, %r1, {K * N * es[at]};", "add.s64 %rd8, %rd2, %rd7;",
        f"mul.wide.u32 %rd9, %r1, {M * N * es[ct]};", "add.s64 %rd10, %rd3, %rd9;",
        f"mul.wide.u32 %rd11, %r1, {M * N * es[dt]};", "add.s64 %rd12, %rd4, %rd11;",
        f"wmma.load.a.sync.aligned.{al}.{shape}.global.{at} {{{R('a', na)}}}, [%rd6], {lda};",
        f"wmma.load.b.sync.aligned.{bl}.{shape}.global.{at} {{{R('b', nb)}}}, [%rd8], {ldb};",
        f"wmma.load.c.sync.aligned.row.{shape}.global.{ct} {{{R('c', nc)}}}, [%rd10], {N};",
        f"{op} {{{R('d', nd)}}}, {{{R('a', na)}}}, {{{R('b', nb)}}}, {{{R('c', nc)}}};",
        f"wmma.store.d.sync.aligned.row.{shape}.global.{dt} [%rd12], {{{R('d', nd)}}}, {N};",
        "ret;", "}"])


@pytest.mark.parametrize("rec", _recs("wmma_mma"))
def test_wmma_mma_capture(rec):
    want = _caps("wmma_mma")[rec["kernel"]]
    a, b, c = (INPUTS[x["in"]].copy() for x in rec["args"][:3])
    out = np.zeros_like(want)
    mod = wp.load(_wmma_mma_kernel(rec["op"], rec))
    mod.launch("k", rec["grid"], 32, [a, b, c, out])
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, f"{bad.size} of {want.size} words differ (first at {bad[:8]})"


# ---- integer / logic / compare / f32 ALU and shfl ------------------------------------------------

ALU = json.loads((DATA / "manifest_alu.json").read_text())
ALU_IN = open_golden(DATA / "alu_inputs.npz")
ALU_REG = {"r": ("%r", "b32", 4), "l": ("%rd", "b64", 8), "f": ("%f", "f32", 4), "p": ("%r", "b32", 4)}


def _alu_kernel(op, dst, srcs):
    lines, names = _thread_kernel("alu", (".reg .b32 %t<8>;", ".reg .b64 %a<24>;", ".reg .b32 %r<8>;",
                                          ".reg .b64 %rd<8>;", ".reg .f32 %f<8>;", ".reg .pred %p<2>;"),
                                  srcs, ALU_REG, False)
    pre, typ, size = ALU_REG[dst]
    if dst == "p":
        lines += [f"{op} %p1, {', '.join(names)};", "selp.u32 %r0, 1, 0, %p1;"]
    else:
        lines += [f"{op} {pre}0, {', '.join(names)};"]
    lines += ["ld.param.u64 %a20, [out];", f"mul.wide.u32 %a21, %t4, {size};", "add.s64 %a22, %a20, %a21;",
              f"st.global.{typ} [%a22], {pre}0;", "ret;", "}"]
    return "\n".join(lines)


@pytest.mark.parametrize("rec", [pytest.param(r, id=r["op"]) for r in ALU if r["family"] == "alu"])
def test_alu_capture(rec):
    want = open_golden(DATA / "cap_alu.npz")[rec["kernel"] + ".out"]
    ins = [ALU_IN[k].copy() for k in rec["inputs"]]
    out = np.zeros_like(want)
    wp.load(_alu_kernel(rec["op"], rec["dst"], rec["src"])).launch("alu", want.size // 256, 256, ins + [out])
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, (f"{bad.size} of {want.size} words differ; first at {bad[:4]}: inputs "
                           f"{[hex(int(x[bad[0]])) for x in ins]}, H100 {hex(int(want[bad[0]]))}, "
                           f"warpsim {hex(int(out[bad[0]]))}")


@pytest.mark.parametrize("rec", [pytest.param(r, id=f"{r['op']}:{r['c']}") for r in ALU if r["family"] == "shfl"])
def test_shfl_capture(rec):
    caps = open_golden(DATA / "cap_alu.npz")
    src = "\n".join([HEAD, ".visible .entry s(.param .u64 a, .param .u64 b, .param .u64 out, .param .u64 pred)", "{",
                     ".reg .b32 %r<12>;", ".reg .b64 %rd<12>;", ".reg .pred %p<2>;",
                     "mov.u32 %r1, %ctaid.x;", "mov.u32 %r2, %tid.x;", "mad.lo.s32 %r3, %r1, 256, %r2;",
                     "mul.wide.u32 %rd1, %r3, 4;", "ld.param.u64 %rd2, [a];", "add.s64 %rd3, %rd2, %rd1;",
                     "ld.global.u32 %r4, [%rd3];", "ld.param.u64 %rd4, [b];", "add.s64 %rd5, %rd4, %rd1;",
                     "ld.global.u32 %r5, [%rd5];", "and.b32 %r5, %r5, 31;",
                     f"{rec['op']} %r6|%p1, %r4, %r5, {rec['c']}, -1;", "selp.u32 %r7, 1, 0, %p1;",
                     "ld.param.u64 %rd6, [out];", "add.s64 %rd7, %rd6, %rd1;", "st.global.u32 [%rd7], %r6;",
                     "ld.param.u64 %rd8, [pred];", "add.s64 %rd9, %rd8, %rd1;", "st.global.u32 [%rd9], %r7;",
                     "ret;", "}"])
    n = ALU_IN["ia"].size
    out, pred = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    wp.load(src).launch("s", n // 256, 256, [ALU_IN["ia"].copy(), ALU_IN["ib"].copy(), out, pred])
    assert np.array_equal(out, caps[rec["kernel"] + ".out"]) and np.array_equal(pred, caps[rec["kernel"] + ".pred"])
