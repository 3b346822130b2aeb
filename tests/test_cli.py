import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import warpsim
from warpsim.cli.main import main

S8 = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
SP = "mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
F16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_everywhere(capsys):
    for cmd in ([], ["list"], ["show"], ["layout"], ["run"], ["ptx"], ["verify"]):
        rc, out, _ = run(capsys, *cmd, "--help")
        assert rc == 0 and "usage: warpsim" in out
    rc, out, _ = run(capsys, "--help")
    for sub in ("list", "show", "layout", "run", "ptx", "verify", "bench"):
        assert sub in out


def test_usage_errors_exit_2(capsys):
    assert run(capsys)[0] == 2
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys, "list", "--sm", "eighty")[0] == 2
    rc, _, err = run(capsys, "show", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s33")
    assert rc == 2 and "unknown type '.s33'" in err
    rc, _, err = run(capsys, "layout", S8, "e")
    assert rc == 2
    rc, _, err = run(capsys, "layout", SP, "a", "--selector", "5")
    assert rc == 2 and "out of range" in err


def test_list_filters(capsys):
    rc, out, _ = run(capsys, "list", "--shape", "m16n8k32", "--type", "s8", "--sparse")
    lines = out.split()
    assert rc == 0 and lines and all(".sp" in x and "m16n8k32" in x and "s8" in x for x in lines)
    rc, out, _ = run(capsys, "list", "--dense", "--family", "b1", "--sm", "75")
    assert out.split() == [i.opcode for i in warpsim.CATALOG if i.family == "b1" and i.min_sm <= 75]
    rc, out, _ = run(capsys, "list", "-l", "--family", "fp8")
    assert "sm_89" in out
    assert run(capsys, "list", "--shape", "m1n1k1")[0] == 1
    rc, out, _ = run(capsys, "list")
    from warpsim.isa.catalog import WGMMA_CATALOG, WGMMA_SP_CATALOG
    assert len(out.split()) == len(warpsim.CATALOG) + len(WGMMA_CATALOG) + len(WGMMA_SP_CATALOG)
    rc, out, _ = run(capsys, "list", "--kind", "mma")
    assert len(out.split()) == len(warpsim.CATALOG)


def test_show(capsys):
    rc, out, _ = run(capsys, "show", SP)
    assert rc == 0 and "sparsity selector in [0, 1]" in out
    stmt = [ln for ln in out.splitlines() if ln.strip().startswith(SP + " {")][0].strip()
    assert stmt.endswith(", %r12, 0x0;")


def test_layout_text_and_svg(capsys, tmp_path):
    rc, out, _ = run(capsys, "layout", S8, "C")
    assert rc == 0 and "T31:c3" in out and "16x8" in out
    f = tmp_path / "a.svg"
    rc, out, err = run(capsys, "layout", SP, "a", "--svg", str(f), "--selector", "1", "--color-by", "group")
    assert rc == 0 and out == "" and "wrote" in err
    doc = f.read_text()
    assert doc.startswith("<svg") and ">T0: a0<" in doc and "selector 1" in doc


def test_run_default_random(capsys):
    rc, out, _ = run(capsys, "run", S8, "--seed", "3")
    assert rc == 0
    assert "A (16x32) .s8" in out and "D (16x8) .s32" in out and "register words" in out
    lane_rows = [ln for ln in out.splitlines() if re.match(r"\s+\d+  [0-9a-f]{8}", ln)]
    assert len(lane_rows) == 32
    rc2, out2, _ = run(capsys, "run", S8, "--seed", "3")
    assert out == out2


def test_run_with_files_matches_mma(capsys, tmp_path):
    rng = np.random.default_rng(0)
    A = rng.integers(-128, 128, size=(16, 32)).astype(np.int8)
    B = rng.integers(-128, 128, size=(32, 8)).astype(np.int8)
    c_words = warpsim.pack(S8, "c", np.arange(128, dtype=np.int32).reshape(16, 8))
    for name, x in (("A", A), ("B", B), ("C", c_words)):
        np.save(tmp_path / f"{name}.npy", x)
    out_npz = tmp_path / "words.npz"
    rc, out, _ = run(capsys, "run", S8, "--a", str(tmp_path / "A.npy"), "--b", str(tmp_path / "B.npy"),
                     "--c", str(tmp_path / "C.npy"), "--out", str(out_npz), "--no-values")
    assert rc == 0 and "A (16x32)" not in out
    saved = np.load(out_npz)
    want = warpsim.mma(S8, warpsim.pack(S8, "a", A), warpsim.pack(S8, "b", B), c_words)
    assert (saved["d"] == want).all()
    assert f"{int(want[0, 0]):08x}" in out


def test_run_sparse_logical_a(capsys, tmp_path):
    A = np.zeros((16, 32), np.int8)
    A[:, ::4] = 3
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "B.npy", np.ones((32, 8), np.int8))
    rc, out, _ = run(capsys, "run", SP, "--a", str(tmp_path / "A.npy"), "--b", str(tmp_path / "B.npy"),
                     "--selector", "1", "--out", str(tmp_path / "w.npz"))
    assert rc == 0 and "logical" in out
    w = np.load(tmp_path / "w.npz")
    D = warpsim.unpack(SP, "d", w["d"])
    C = warpsim.unpack(SP, "c", w["c"])
    assert (D == C + 24).all()
    A[0, :4] = 1
    np.save(tmp_path / "A.npy", A)
    rc, _, err = run(capsys, "run", SP, "--a", str(tmp_path / "A.npy"))
    assert rc == 2 and "row 0, group 0" in err


def test_run_errors(capsys, tmp_path):
    assert run(capsys, "run", S8, "--a", str(tmp_path / "missing.npy"))[0] == 2
    np.save(tmp_path / "bad.npy", np.zeros((3, 3)))
    rc, _, err = run(capsys, "run", S8, "--a", str(tmp_path / "bad.npy"))
    assert rc == 2 and "bad.npy" in err
    assert run(capsys, "run", S8, "--selector", "1")[0] == 2
    assert run(capsys, "run", S8, "--dist", "normal")[0] == 2


def test_run_float_opcode(capsys):
    rc, out, err = run(capsys, "run", F16)
    assert rc == 0 and "A (16x16) .f16" in out and "D (16x8) .f32" in out


def test_run_not_modelled_exits_1(capsys, monkeypatch):
    import warpsim.api.mma

    def boom(*a, **k):
        raise NotImplementedError("no sm_90 recipe")
    monkeypatch.setattr(warpsim.api.mma, "mma", boom)
    rc, _, err = run(capsys, "run", S8)
    assert rc == 1 and "no sm_90 recipe" in err


PTX = """
// a PTX snippet
mov.b32 %r0, 0x01010101;
mov.b32 %r1, 0x02020202;
mov.b32 %r2, 7;
mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r3,%r4}, {%r0}, {%r1}, {%r2,%r2};
"""


def test_ptx_file_and_stdin(capsys, tmp_path, monkeypatch):
    f = tmp_path / "s.ptx"
    f.write_text(PTX)
    rc, out, _ = run(capsys, "ptx", str(f), "--print", "%r3")
    assert rc == 0
    rows = out.splitlines()
    assert rows[0].split() == ["lane", "%r3"] and len(rows) == 33
    assert all(r.split()[1] == f"{32 + 7:08x}" for r in rows[1:])
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(PTX))
    rc, out, _ = run(capsys, "ptx", "-", "--warps", "2")
    assert rc == 0 and "warp 1" in out and "%r4" in out


def test_ptx_errors(capsys, tmp_path):
    f = tmp_path / "bad.ptx"
    f.write_text("mov.b32 %r0, 1;\nmma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r3,%r4}, {%r0}, {%r9}, {%r0,%r0};\n")
    rc, _, err = run(capsys, "ptx", str(f))
    assert rc == 2 and "line 2" in err and "%r9" in err
    rc, out, _ = run(capsys, "ptx", str(f), "--undefined", "zero")
    assert rc == 0
    assert run(capsys, "ptx", str(tmp_path / "nope.ptx"))[0] == 2
    np.save(tmp_path / "r9.npy", np.arange(32, dtype=np.uint32))
    rc, out, _ = run(capsys, "ptx", str(f), "--set", f"%r9={tmp_path / 'r9.npy'}", "--print", "%r9")
    assert rc == 0 and out.splitlines()[2].split() == ["1", "00000001"]
    assert run(capsys, "ptx", str(f), "--set", "%r9")[0] == 2
    assert run(capsys, "ptx", str(f), "--undefined", "zero", "--print", "%r77")[0] == 2


def test_verify_ok_and_mismatch(capsys, tmp_path):
    rc, out, err = run(capsys, "verify", "--match", "m8n8k16.row.col.s32.s8")
    assert rc == 0 and "int8" in out and "bit-exact" in out
    from warpsim.hw import Corpus, save_corpus
    from warpsim.cli.verify import default_corpus

    src = Corpus(default_corpus())
    idx = [i for i, e in enumerate(src.manifest["entries"]) if "m8n8k16.row.col.s32.s8.s8" in e["opcode"]]
    arrays, entries = {}, []
    for n, i in enumerate(idx[:1]):
        ent = src.entry(i)
        for r in "abcde":
            if r in ent:
                arrays[f"{n}.{r}"] = ent[r].copy()
        entries.append(src.manifest["entries"][i])
    arrays["0.d"][0, 0, 0] ^= 1
    manifest = dict(src.manifest, entries=entries)
    bad = tmp_path / "bad.npz"
    save_corpus(bad, arrays, manifest)
    rc, out, _ = run(capsys, "verify", "--corpus", str(bad), "-q")
    assert rc == 1 and "1 of" in out and "differ" in out
    assert run(capsys, "verify", "--match", "no-such-opcode")[0] == 2
    assert run(capsys, "verify", "--corpus", str(tmp_path / "missing.npz"))[0] == 2


def test_bench_dispatch(capsys, monkeypatch):
    seen = {}
    fake = types.ModuleType("warpsim.cli.bench")
    fake.main = lambda argv: seen.setdefault("argv", argv) and 0
    monkeypatch.setitem(sys.modules, "warpsim.cli.bench", fake)
    monkeypatch.setattr(warpsim.cli, "bench", fake, raising=False)
    assert main(["bench", "--quick", "x"]) == 0
    assert seen["argv"] == ["--quick", "x"]
    monkeypatch.setitem(sys.modules, "warpsim.cli.bench", None)     # import fails
    monkeypatch.delattr(warpsim.cli, "bench", raising=False)
    rc, _, err = run(capsys, "bench")
    assert rc == 1 and "not available" in err


def test_python_dash_m(tmp_path):
    p = subprocess.run([sys.executable, "-m", "warpsim", "show", S8], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0 and "family int8" in p.stdout
    p = subprocess.run([sys.executable, "-m", "warpsim", "list", "--bogus"], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2
