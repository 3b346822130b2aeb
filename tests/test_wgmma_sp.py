"""Sparse warpgroup MMA (``wgmma.mma_async.sp``): the catalog against ptxas, and H100 captures replayed word for word."""

import json
import os
import re
import shutil
import subprocess

import numpy as np

from warpsim.hw.golden import open_golden
import pytest

import warpsim
from fixtures import wgmma_register_program
from warpsim.api.wgmma import corpus_call
from warpsim.hw.wgmma_capture import Spec, catalog_forms, immediates, ptx_source
from warpsim.isa import catalog as C
from warpsim.isa.sparse import metadata_matrix

SPARSE = list(C.WGMMA_SP_CATALOG)
GOLDEN = [os.path.join(os.path.dirname(__file__), "golden", f) for f in ("wgmma_sp_sm90a.npz", "wgmma_sp_sm90a_cover.npz", "wgmma_sp_sm90a_wide.npz")]
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH: the ptxas cross-check needs the CUDA toolkit")


def test_sparse_catalog_counts():
    assert len(SPARSE) == 528
    by = {}
    for i in SPARSE:
        by.setdefault((i.family, i.k), []).append(i)
    assert {k: len(v) for k, v in by.items()} == {("f16", 32): 64, ("bf16", 32): 32, ("tf32", 16): 32,
                                                  ("fp8", 64): 256, ("int8", 64): 144}
    for i in SPARSE:
        assert i.selectors == ((0, 1) if i.family in ("f16", "bf16", "tf32") else (0,))
        assert i.matrix_shape("a") == (64, i.k // 2) and i.words("a") == 4 and i.words("e") == 1
        assert i.min_ptx == ("8.4" if i.atype != i.btype and i.family == "int8" else "8.2")


def _stmt(ins, sel, a_src="desc", sa=1, sb=1, ta=0, tb=0, opcode=None):
    d = "{" + ", ".join(f"%r{j}" for j in range(ins.words("d"))) + "}"
    a = "{%q0, %q1, %q2, %q3}" if a_src == "reg" else "%rd0"
    imm = "".join(", " + x for x in immediates(Spec(ins, a_src, sa, sb, ta, tb, sel)))
    return f" {opcode or ins.opcode} {d}, {a}, %rd1, %e, {sel}, %p0{imm};"


def _ptxas_errors(lines, tmp_path):
    """Run ptxas on one kernel with a statement per line; the set of line numbers (0-based) it rejects."""
    head = (".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k(){\n"
            " .reg .b32 %r<130>; .reg .b32 %q<4>; .reg .b64 %rd<2>; .reg .pred %p<1>; .reg .b32 %e;\n")
    src = tmp_path / "k.ptx"
    src.write_text(head + "\n".join(lines) + "\n}\n")
    r = subprocess.run([PTXAS, "-arch=sm_90a", "-o", os.devnull, str(src)], capture_output=True, text=True)
    bad = {int(m) - 6 for m in re.findall(r"line (\d+); error", r.stderr)}
    assert r.returncode == 0 or bad, r.stderr[-2000:]
    return bad, r.stderr


@needs_ptxas
def test_ptxas_accepts_every_sparse_opcode_and_selector(tmp_path):
    forms = list(catalog_forms(sparse=True))
    assert {(op, a, f[0]) for op, a, f in forms} == {(i.opcode, a, f"sel={s}") for i in SPARSE for s in i.selectors
                                                     for a in ("desc", "reg")}
    src = tmp_path / "sp.ptx"
    src.write_text(ptx_source(forms))
    r = subprocess.run([PTXAS, "-arch=sm_90a", "-o", os.devnull, str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


#: forms PTX forbids: (statement built from a catalog opcode, words of ptxas' error)
def _rejected():
    f16 = C.BY_OPCODE["wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.f16.f16"]
    fp8 = C.BY_OPCODE["wgmma.mma_async.sp.sync.aligned.m64n16k64.f32.e4m3.e5m2"]
    s8 = C.BY_OPCODE["wgmma.mma_async.sp.sync.aligned.m64n48k64.s32.s8.u8"]
    tf32 = C.BY_OPCODE["wgmma.mma_async.sp.sync.aligned.m64n16k16.f32.tf32.tf32"]
    bf16 = C.BY_OPCODE["wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.bf16.bf16"]
    return {
        "f16 selector 2": _stmt(f16, 2),
        "fp8 selector 1": _stmt(fp8, 1),
        "s8 selector 1": _stmt(s8, 1),
        "s8 N=40": _stmt(s8, 0).replace("m64n48k64", "m64n40k64"),
        "f16 dense K": _stmt(f16, 0).replace("k32", "k16"),
        "fp8 dense K": _stmt(fp8, 0).replace("k64", "k32"),
        "tf32 with imm-trans": _stmt(tf32, 0)[:-1] + ", 0, 0;",
        "bf16 with f16 D": _stmt(bf16, 0).replace(".f32.bf16", ".f16.bf16"),
        "f16 x bf16": _stmt(f16, 0).replace("f16.f16", "f16.bf16"),
        "fp8 with satfinite": _stmt(fp8, 0).replace("k64.f32", "k64.satfinite.f32"),
        "b1 sparse": _stmt(s8, 0).replace("k64.s32.s8.u8", "k512.s32.b1.b1.and.popc"),
        "s8 with f32 D": _stmt(s8, 0).replace(".s32.s8", ".f32.s8"),
    }


@needs_ptxas
def test_ptxas_rejects_forbidden_sparse_forms(tmp_path):
    rej = _rejected()
    bad, err = _ptxas_errors(list(rej.values()), tmp_path)
    assert bad == set(range(len(rej))), (sorted(set(range(len(rej))) - bad), err[-3000:])


def test_forbidden_sparse_forms_are_not_in_the_catalog():
    for name, stmt in _rejected().items():
        op = stmt.split()[0]
        if op in C.BY_OPCODE:   # the opcode itself exists: the selector or the immediates are what is forbidden
            assert name in ("f16 selector 2", "fp8 selector 1", "s8 selector 1", "tf32 with imm-trans"), name
        else:
            with pytest.raises(ValueError):
                warpsim.parse(op)


SP = "wgmma.mma_async.sp.sync.aligned."


@pytest.mark.parametrize("bad,msg", [
    (SP + "m64n8k16.f32.f16.f16", "has shape m64nNk32"),
    (SP + "m64n40k64.s32.s8.s8", "N = 40 is not allowed"),
    (SP + "m64n8k32.f16.bf16.bf16", "allowed after the shape"),
    (SP + "m64n8k64.satfinite.f32.e4m3.e4m3", "no sm_90a sparse wgmma"),
    ("wgmma.mma_async.sp::ordered_metadata.sync.aligned.m64n8k32.f32.f16.f16", "wgmma has no other"),
])
def test_parse_rejects_sparse(bad, msg):
    with pytest.raises(ValueError, match=msg):
        warpsim.parse(bad)


def test_metadata_of_each_warp_is_the_mma_sp_layout_of_its_16_rows():
    """PTX: every warp gives the metadata of its own 16 rows, laid out as for mma.sp of the same A type and K."""
    pairs = {("f16", 32): "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
             ("tf32", 16): "mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32",
             ("int8", 64): "mma.sp.sync.aligned.m16n8k64.row.col.s32.u8.s8.s32"}
    for (fam, k), mma in pairs.items():
        wg = next(i for i in SPARSE if i.family == fam and i.k == k)
        for s in wg.selectors:
            a, b = metadata_matrix(wg.opcode, s).copy(), metadata_matrix(mma, s)
            for w in range(4):
                x = a[16 * w:16 * w + 16].copy()
                assert (x[..., 0] // 32 == w).all()
                x[..., 0] -= 32 * w
                assert (x == b).all()


# --- the API -----------------------------------------------------------------

OP = "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16"


def _call(**kw):
    ins = C.BY_OPCODE[OP]
    args = dict(d=np.zeros((128, ins.words("d")), np.uint32), a=np.zeros((128, 4), np.uint32), b=0,
                smem=np.zeros(4096, np.uint8), e=np.full(128, 0x44444444, np.uint32), selector=0)
    args.update(kw)
    return warpsim.wgmma(OP, args.pop("d"), args.pop("a"), args.pop("b"), **args)


def test_sparse_api_errors():
    from warpsim.isa.smem import encode_descriptor

    b = encode_descriptor(0, 128, 512)
    out = _call(b=b)
    assert out.shape == (128, 4) and out.dtype == np.uint32
    with pytest.raises(ValueError, match="metadata"):
        _call(b=b, e=None)
    with pytest.raises(ValueError, match="selector 2 is out of range"):
        _call(b=b, selector=2)
    with pytest.raises(TypeError, match="selector"):
        _call(b=b, selector=1.0)
    with pytest.raises(ValueError, match=r"shape \(128,\)"):
        _call(b=b, e=np.zeros(32, np.uint32))
    with pytest.raises(TypeError, match="uint32"):
        _call(b=b, e=np.zeros(128, np.int64))
    with pytest.raises(ValueError, match="dense"):
        warpsim.wgmma("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", np.zeros((128, 4), np.uint32),
                      np.zeros((128, 4), np.uint32), b, smem=np.zeros(4096, np.uint8), e=np.zeros(128, np.uint32))
    e = np.full(128, 0x44444444, np.uint32)
    _call(b=b, e=e)
    assert (e == 0x44444444).all()


# --- H100 captures -----------------------------------------------------------

def _load(path, cache={}):
    if path not in cache:
        z = open_golden(path)
        cache[path] = (z, json.loads(bytes(z["manifest"])))
    return cache[path]


def _launches():
    for path in GOLDEN:
        for j, L in enumerate(_load(path)[1]["entries"]):
            yield path, j, L


def test_captures_cover_every_sparse_opcode_and_selector():
    got = {(L["spec"].split("|")[0], int(L["spec"].split("|")[-1])) for _, _, L in _launches()}
    assert got == {(i.opcode, s) for i in SPARSE for s in i.selectors}
    for path in GOLDEN:
        assert _load(path)[1]["gpu"].startswith("NVIDIA H100")
    kinds = {m["metadata"] for _, _, L in _launches() for m in L["meta"]}
    assert kinds == {"valid", "selected", "random"}
    def key(ins):
        return ins.atype, ins.btype, ins.dtype, ins.satfinite

    srcs = {(key(C.BY_OPCODE[L["spec"].split("|")[0]]), L["spec"].split("|")[1]) for _, _, L in _launches()}
    assert srcs == {(key(i), s) for i in SPARSE for s in ("reg", "desc")}   # every type combination, both A forms


def _chunks(n=12):
    for c in range(n):
        yield pytest.param(c, n, id=f"chunk{c}")


@pytest.mark.parametrize("chunk,n", list(_chunks()))
def test_replay_captures(chunk, n):
    words = differ = 0
    bad = []
    for k, (path, j, L) in enumerate(_launches()):
        if k % n != chunk:
            continue
        z, _ = _load(path)
        assert (z[f"{j}.base"] % 1024 == 0).all()   # swizzle patterns anchored as in the replay
        op, d, a, b, kw = corpus_call(z, j, L["spec"])
        got = warpsim.wgmma(op, d, a, b, **kw)
        hw = z[f"{j}.dout"]
        nd = int((got != hw).sum())
        words += hw.size
        differ += nd
        if nd:
            bad.append((L["spec"], nd))
    assert words > 0
    assert differ == 0, f"{differ} of {words} words differ: {bad[:10]}"


def test_matmul_on_captured_groups():
    """warpsim.matmul with the compressed A, the captured metadata, B and C as matrices: equal to the H100's D."""
    from warpsim.isa import smem as S
    from warpsim.isa.codec import to_values
    from warpsim.isa.layouts import unpack

    z, man = _load(GOLDEN[0])
    seen = set()
    for j, L in enumerate(man["entries"]):
        op, a_src, sa, sb, ta, tb, sel = L["spec"].split("|")
        ins = C.BY_OPCODE[op]
        if L["purpose"] != "numerics" or a_src != "reg" or (ins.family, ins.dtype, sel) in seen:
            continue
        seen.add((ins.family, ins.dtype, sel))
        g = next(i for i, m in enumerate(L["meta"]) if m["sd"] == 1 and m["b"]["major"] == "K")
        desc = int(z[f"{j}.desc"][g, 1])
        bt = S.read_operand(z[f"{j}.smem"][g], desc, ins.n, ins.k, ins.elem("b").bits)
        B = to_values(np.ascontiguousarray(bt.T), ins.elem("b"))
        Cm = unpack(ins, "d", z[f"{j}.d"][g])
        Ac = unpack(ins, "a", z[f"{j}.a"][g])
        D = warpsim.matmul(op, Ac, B, Cm, metadata=z[f"{j}.e"][g], selector=int(sel))
        hw = unpack(ins, "d", z[f"{j}.dout"][g])
        assert D.view(f"u{D.itemsize}").tolist() == hw.view(f"u{hw.itemsize}").tolist(), op
    assert len(seen) == 11   # (f16 x 2 D types, bf16, tf32) x 2 selectors, fp8 x 2 D types, int8


def test_matmul_logical_sparse_a():
    """A given as the logical 2:4 matrix: compressed and its metadata built for the selector."""
    op = "wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.f16.f16"
    rng = np.random.default_rng(1)
    A = rng.integers(-4, 5, (64, 32)).astype(np.float16)
    A.reshape(64, 8, 4)[..., rng.permutation(4)[:2]] = 0
    B = rng.integers(-4, 5, (32, 16)).astype(np.float16)
    for sel in (0, 1):
        D = warpsim.matmul(op, A, B, selector=sel)
        assert (D == A.astype(np.float32) @ B.astype(np.float32)).all()
    A[0, :3] = 1
    with pytest.raises(ValueError, match="2:4"):
        warpsim.matmul(op, A, B)


# --- the register file -------------------------------------------------------

def _program(z, j, spec):
    op, a_src, sa, sb, ta, tb, sel = spec.split("|")
    _, d, a, b, kw = corpus_call(z, j, spec)
    return wgmma_register_program(op, a_src, sa, sb, ta, tb, d, a, b, kw, sel=sel)


def test_captures_replay_through_the_register_file():
    """One launch of every type combination and selector (both A forms), as PTX statements on a Warpgroup."""
    z, man = _load(GOLDEN[0])
    seen = set()
    for j, L in enumerate(man["entries"]):
        op, a_src, *_, sel = L["spec"].split("|")
        ins = C.BY_OPCODE[op]
        key = (ins.atype, ins.btype, ins.dtype, ins.satfinite, sel, a_src)
        if L["purpose"] not in ("numerics", "trans") or key in seen:
            continue
        seen.add(key)
        g, dregs, text = _program(z, j, L["spec"])
        g.run(text)
        got = np.stack([g.get(r) for r in dregs], axis=-1)
        assert (got == z[f"{j}.dout"]).all(), L["spec"]
    assert len(seen) >= 40


def test_register_file_sparse_errors_and_hazards():
    op = "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16"
    g = warpsim.Warpgroup(smem_bytes=4096)
    g.set("%rd0", np.zeros(128, np.uint64))
    g.set("%rd1", np.zeros(128, np.uint64))
    g.set("%e0", np.full(128, 0x44444444, np.uint32))
    d = "{%f0, %f1, %f2, %f3}"
    with pytest.raises(warpsim.PTXError, match="sp-sel"):
        g.run(f"wgmma.fence.sync.aligned;\n{op} {d}, %rd0, %rd1, %e0, 2, 0, 1, 1, 0, 0;")
    with pytest.raises(warpsim.PTXError, match="sp-meta, sp-sel, scale-d"):
        g.run(f"wgmma.fence.sync.aligned;\n{op} {d}, %rd0, %rd1, 0, 1, 1, 0, 0;")
    with pytest.raises(warpsim.PTXError, match="%e0"):   # metadata register overwritten while the wgmma is in flight
        g.run(f"wgmma.fence.sync.aligned;\n{op} {d}, %rd0, %rd1, %e0, 1, 0, 1, 1, 0, 0;\n"
              "wgmma.commit_group.sync.aligned;\nmov.b32 %e0, 0;")


def test_cli_show_layout_run(capsys):
    from warpsim.cli.main import main

    op = "wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.bf16.bf16"
    assert main(["show", op]) == 0
    out = capsys.readouterr().out
    assert "2:4" in out and "%e0, 0" in out and "sparsity selector in [0, 1]" in out
    assert main(["layout", op, "a", "--selector", "1"]) == 0
    out = capsys.readouterr().out
    assert "compressed; logical 64x32" in out and "T34[1:0]" in out   # warp 1, quad 0, selector 1 -> thread 34
    assert main(["run", op, "--selector", "1"]) == 0
    assert op in capsys.readouterr().out
    assert main(["run", "wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.u8", "--selector", "1"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_doc_examples_run():
    """The python blocks of docs/wgmma_sparse.md run in order, in one namespace."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "wgmma_sparse.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    ns = {}
    for i, b in enumerate(blocks):
        exec(compile(b, f"wgmma_sparse.md:block{i + 1}", "exec"), ns)
