"""wgmma.mma_async: catalog vs ptxas, descriptors and swizzles, and the H100 corpus replayed word for word."""

import json
import os
import shutil
import subprocess

import numpy as np

from warpsim.hw.golden import open_golden
import pytest

import warpsim
from fixtures import wgmma_register_program
from warpsim.hw.wgmma_capture import Spec, catalog_forms, immediates, ptx_source
from warpsim.isa import smem as S
from warpsim.isa.catalog import BY_OPCODE, WGMMA_CATALOG
from warpsim.isa.layouts import layout

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
HEAD = "wgmma.mma_async.sync.aligned."

# forms PTX forbids on sm_90a: (opcode, A source, immediates after scale-d, words the parse error must contain)
WG_REJECTED = [
    (HEAD + "m64n8k8.f32.tf32.tf32", "desc", ["1", "1", "0", "0"], None),          # tf32 has no imm-trans
    (HEAD + "m64n8k32.f32.e4m3.e4m3", "desc", ["1", "1", "1", "0"], None),         # fp8 has no imm-trans
    (HEAD + "m64n40k32.s32.s8.s8", "desc", [], "N = 40 is not allowed"),
    (HEAD + "m64n8k16.f16.bf16.bf16", "desc", ["1", "1", "0", "0"], "allowed after the shape"),
    (HEAD + "m64n8k256.s32.b1.b1.xor.popc", "desc", [], ".and.popc"),
    (HEAD + "m64n264k16.f32.f16.f16", "desc", ["1", "1", "0", "0"], "N = 264"),
    (HEAD + "m64n8k16.f32.e4m3.e4m3", "desc", ["1", "1"], "has shape m64nNk32"),
    (HEAD + "m64n8k32.satfinite.f32.e4m3.e4m3", "desc", ["1", "1"], "no sm_90a wgmma"),
    (HEAD + "m64n8k16.f32.f16.f16", "reg", ["1", "1", "0", "0"], None),            # register A: no imm-trans-a
]


def test_catalog_counts():
    assert len(WGMMA_CATALOG) == 546
    fam = {}
    for i in WGMMA_CATALOG:
        fam[i.family] = fam.get(i.family, 0) + 1
    assert fam == {"f16": 64, "bf16": 32, "tf32": 32, "fp8": 256, "int8": 144, "b1": 18}
    i = BY_OPCODE[HEAD + "m64n256k16.f32.f16.f16"]
    assert (i.threads, i.words("a"), i.words("d"), i.words("b")) == (128, 4, 128, 0)
    assert warpsim.parse(HEAD + "m64n8k32.satfinite.s32.u8.s8").min_ptx == "8.4"


@pytest.mark.parametrize("bad,a_src,imms,msg", WG_REJECTED, ids=lambda x: x if isinstance(x, str) and "." in x else None)
def test_parse_rejects(bad, a_src, imms, msg):
    if msg is None:
        return   # the opcode exists; only the operand form is forbidden (checked by ptxas below, and by the API)
    with pytest.raises(ValueError, match=msg.replace(".", r"\.")):
        warpsim.parse(bad)


PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH: the ptxas cross-check needs the CUDA toolkit")


def _ptxas(forms, tmp_path):
    src = tmp_path / "w.ptx"
    src.write_text(ptx_source(forms))
    return subprocess.run([PTXAS, "-arch=sm_90a", "-o", str(tmp_path / "w.cubin"), str(src)], capture_output=True, text=True)


@needs_ptxas
def test_ptxas_accepts_every_catalog_form(tmp_path):
    r = _ptxas(list(catalog_forms()), tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


@needs_ptxas
@pytest.mark.parametrize("bad,a_src,imms,msg", WG_REJECTED, ids=[f"{b[len(HEAD):]}|{a}" for b, a, _, _ in WG_REJECTED])
def test_ptxas_rejects(bad, a_src, imms, msg, tmp_path):
    r = _ptxas([(bad, a_src, imms)], tmp_path)
    assert r.returncode != 0 and "error" in r.stderr


def test_sparse_catalog_and_ptxas(tmp_path):
    from warpsim.isa.catalog import WGMMA_SP_CATALOG

    assert len(WGMMA_SP_CATALOG) == 528
    assert {i.selectors for i in WGMMA_SP_CATALOG if i.family in ("fp8", "int8")} == {(0,)}
    assert {i.selectors for i in WGMMA_SP_CATALOG if i.family in ("f16", "bf16", "tf32")} == {(0, 1)}
    sp = warpsim.parse("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16")
    assert sp.is_sparse and sp.matrix_shape("a") == (64, 16)
    with pytest.raises(ValueError, match="no sm_90a sparse wgmma"):
        warpsim.parse("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.f16")
    with pytest.raises(ValueError, match="metadata"):   # modelled (tests/test_wgmma_sp.py); needs e
        warpsim.wgmma(sp.opcode, np.zeros((128, 4), np.uint32), np.zeros((128, 4), np.uint32), 0,
                      smem=np.zeros(16, np.uint8))
    if PTXAS is None:
        pytest.skip("ptxas not on PATH: the ptxas cross-check needs the CUDA toolkit")
    assert _ptxas(list(catalog_forms(sparse=True)), tmp_path).returncode == 0
    # fp8 sparse takes selector 0 only; f16 0 and 1
    assert _ptxas([(HEAD.replace("async.", "async.sp.") + "m64n8k64.f32.e4m3.e4m3", "desc", ["sel=1", "1", "1"])],
                  tmp_path).returncode != 0
    assert _ptxas([(HEAD.replace("async.", "async.sp.") + "m64n8k32.f32.f16.f16", "desc", ["sel=1", "1", "1", "0", "0"])],
                  tmp_path).returncode == 0


def test_immediates_follow_the_catalog():
    f16 = BY_OPCODE[HEAD + "m64n8k16.f32.f16.f16"]
    assert immediates(Spec(f16, "desc", -1, 1, 1, 0)) == ["-1", "1", "1", "0"]
    assert immediates(Spec(f16, "reg", 1, 1, 0, 1)) == ["1", "1", "1"]
    with pytest.raises(ValueError):
        immediates(Spec(BY_OPCODE[HEAD + "m64n8k8.f32.tf32.tf32"], "desc", 1, 1, 1, 0))


# --- fragments ----------------------------------------------------------------

def test_accumulator_fragment():
    tab = layout(HEAD + "m64n16k16.f32.f16.f16", "d")
    assert tab.shape == (128, 8, 3)
    # thread 37 = warp 1, lane 5 (group 1, thread-in-group 1): rows 16+1 and 16+9, columns 2,3 and 10,11
    assert tab[37, :, 1:].tolist() == [[17, 2], [17, 3], [25, 2], [25, 3], [17, 10], [17, 11], [25, 10], [25, 11]]
    full = {(r, c) for r, c in tab[..., 1:].reshape(-1, 2).tolist()}
    assert len(full) == 64 * 16


def test_a_fragment_tf32_and_b1():
    t = layout(HEAD + "m64n8k8.f32.tf32.tf32", "a")
    assert t[127, :, 1:].tolist() == [[55, 3], [63, 3], [55, 7], [63, 7]]
    b = layout(HEAD + "m64n8k256.s32.b1.b1.and.popc", "a")
    assert b.shape == (128, 128, 3) and b[1, 0, 1:].tolist() == [0, 32]


# --- descriptors and shared-memory layouts -------------------------------------

def test_descriptor_round_trip_and_fields():
    d = S.encode_descriptor(1024 + 96, 16, 1024, "128B")
    assert d == ((1120 >> 4) | (1 << 16) | (64 << 32) | (1 << 62))
    assert S.decode_descriptor(np.uint64(d)) == S.Descriptor(1120, 16, 1024, "128B", 0)
    for bad, msg in ((lambda: S.encode_descriptor(8, 16, 16), "multiple of 16"),
                     (lambda: S.encode_descriptor(0, 16, 16, "16B"), "swizzle must be"),
                     (lambda: S.decode_descriptor(1 << 14), "reserved bits"),
                     (lambda: S.decode_descriptor(-1), "64-bit")):
        with pytest.raises(ValueError, match=msg):
            bad()


def test_swizzle_patterns():
    a = np.arange(0, 1024, 16)
    assert (S.swizzle(a, "none") == a).all()
    # 128B: 16-byte chunk c of row r (rows of 128 bytes) moves to chunk c ^ (r % 8)
    r, c = a // 128, (a % 128) // 16
    assert (S.swizzle(a, "128B") == r * 128 + (c ^ (r % 8)) * 16).all()
    assert (S.swizzle(a, "32B") == a ^ (((a >> 7) & 1) << 4)).all()


@pytest.mark.parametrize("bits,k,major", [(16, 16, "K"), (16, 16, "MN"), (32, 8, "K"), (8, 32, "K"), (1, 256, "K")])
@pytest.mark.parametrize("sw", list(S.SWIZZLE_MODES))
def test_write_read_round_trip(bits, k, major, sw):
    rng = np.random.default_rng(0)
    w = S.SWIZZLE_BYTES[sw]
    if major == "K":
        d = S.encode_descriptor(2048 + (32 if w > 32 else 0), 16 if w else 1024, 8 * w if w else 128, sw)
    else:
        d = S.encode_descriptor(2048, 2 * 8 * w if w else 1024, 8 * w if w else 128, sw)
    m = rng.integers(0, 1 << bits, size=(64, k), dtype=np.uint64)
    sm = np.zeros(S.footprint(d, 64, k, bits, major), np.uint8)
    S.write_operand(sm, d, m, bits, major)
    assert (S.read_operand(sm, d, 64, k, bits, major) == m).all()


def test_out_of_range_and_malformed_reads_are_refused():
    op = HEAD + "m64n8k16.f32.f16.f16"
    d = np.zeros((128, 4), np.uint32)
    sm = np.zeros(512, np.uint8)
    with pytest.raises(ValueError, match="reads shared-memory bytes up to"):
        warpsim.wgmma(op, d, S.encode_descriptor(0, 128, 256), S.encode_descriptor(256, 128, 256), smem=sm)
    with pytest.raises(ValueError, match="reserved bits"):
        warpsim.wgmma(op, d, np.uint64(1 << 47), S.encode_descriptor(0, 128, 256), smem=sm)
    with pytest.raises(NotImplementedError, match="base offset"):
        warpsim.wgmma(op, d, np.uint64(S.encode_descriptor(0, 128, 256) | (1 << 49)), S.encode_descriptor(0, 128, 256), smem=sm)


def test_api_errors():
    op = HEAD + "m64n8k8.f32.tf32.tf32"
    d = np.zeros((128, 4), np.uint32)
    sm = np.zeros(4096, np.uint8)
    da, db = S.encode_descriptor(0, 128, 256), S.encode_descriptor(2048, 128, 256)
    for kw, msg in ((dict(trans_b=1), "K-major shared memory only"), (dict(scale_a=2), "scale_a must be one of"),
                    (dict(scale_d=3), "scale_d must be 0 or 1"), (dict(arch="sm_90"), "sm_90a only"),
                    (dict(e=np.zeros(128, np.uint32)), "is dense")):
        with pytest.raises((ValueError, NotImplementedError), match=msg):
            warpsim.wgmma(op, d, da, db, smem=sm, **kw)
    with pytest.raises(ValueError, match="shape"):
        warpsim.wgmma(op, np.zeros((32, 4), np.uint32), da, db, smem=sm)
    with pytest.raises(TypeError, match="uint64"):
        warpsim.wgmma(op, d, np.array([0], np.int64), db, smem=sm)
    with pytest.raises(ValueError, match="use warpsim.wgmma"):
        warpsim.mma(op, d, d, d)
    with pytest.raises(ValueError, match="use warpsim.mma"):
        warpsim.wgmma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", d, da, db, smem=sm)
    with pytest.raises(ValueError, match="register A has no|descriptor A only"):
        warpsim.wgmma(HEAD + "m64n8k16.f32.f16.f16", d, np.zeros((128, 4), np.uint32), db, smem=sm, trans_a=1)


# --- the H100 corpus ----------------------------------------------------------------

def _load(name):
    z = open_golden(os.path.join(GOLDEN, name))
    return z, json.loads(bytes(z["manifest"]))


CORPUS, MANIFEST = _load("wgmma_sm90a.npz")
NUMERICS, NUM_MANIFEST = _load("wgmma_sm90a_numerics.npz")


def _call(z, e, spec):
    from warpsim.api.wgmma import corpus_call

    assert int(z[f"{e}.base"][0]) == 1024   # the H100 put dynamic shared memory at shared address 1024
    return corpus_call(z, e, spec)


def test_corpus_covers_every_opcode_and_both_a_forms():
    assert MANIFEST["gpu"].startswith("NVIDIA H100")
    specs = [e["spec"].split("|") for e in MANIFEST["entries"] + NUM_MANIFEST["entries"]]
    assert {s[0] for s in specs} == {i.opcode for i in WGMMA_CATALOG}
    for fam in {i.family for i in WGMMA_CATALOG}:
        forms = {s[1] for s in specs if BY_OPCODE[s[0]].family == fam}
        assert forms == {"reg", "desc"}
    probes = {g["probe"].split(" part")[0] for e in MANIFEST["entries"] if e["purpose"] == "probe" for g in e["meta"]}
    assert probes == {"B f16", "A f16", "B tf32", "A tf32", "B u8", "A u8", "B b1"}
    layouts = {(g["b"]["major"], g["b"]["swizzle"]) for e in MANIFEST["entries"] if e["purpose"] == "probe"
               for g in e["meta"]}
    assert layouts == {(m, s) for m in ("K", "MN") for s in S.SWIZZLE_MODES}


def _chunks(manifest, size):
    n = len(manifest["entries"])
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def _wgmma_mismatches(z, manifest, chunk):
    """(spec, differing elements) of every corpus entry in ``chunk`` that warpsim.wgmma does not replay."""
    bad = []
    for e in chunk:
        spec = manifest["entries"][e]["spec"]
        op, d, a, b, kw = _call(z, e, spec)
        got = warpsim.wgmma(op, d, a, b, **kw)
        n = int((got != z[f"{e}.dout"]).sum())
        if n:
            bad.append((spec, n))
    return bad


@pytest.mark.parametrize("chunk", _chunks(MANIFEST, 80), ids=lambda c: f"entries{c[0]}-{c[-1]}")
def test_corpus_replays_through_wgmma(chunk):
    assert not _wgmma_mismatches(CORPUS, MANIFEST, chunk)


@pytest.mark.parametrize("chunk", _chunks(NUM_MANIFEST, 40), ids=lambda c: f"entries{c[0]}-{c[-1]}")
def test_numerics_corpus_replays_through_wgmma(chunk):
    assert not _wgmma_mismatches(NUMERICS, NUM_MANIFEST, chunk)


def test_inputs_are_not_modified():
    e = 0
    op, d, a, b, kw = _call(CORPUS, e, MANIFEST["entries"][e]["spec"])
    copies = [x.copy() for x in (d, a, b, kw["smem"])]
    warpsim.wgmma(op, d, a, b, **kw)
    assert all((x == y).all() for x, y in zip(copies, (d, a, b, kw["smem"])))


def _probe_matrices(z, e, spec):
    """From a B-probe entry (one-hot register A): the B matrix the H100 read, per group."""
    ins = warpsim.parse(spec.split("|")[0])
    tab = layout(ins.opcode, "d")
    dout = z[f"{e}.dout"]
    D = np.zeros((dout.shape[0], 64, ins.n), np.uint64)
    D[:, tab[..., 1], tab[..., 2]] = dout
    return ins, D


def test_hardware_round_trip_equals_descriptor_read():
    """Layout probes: D = (one-hot A) x B, so D's rows are B's rows exactly as the H100 read them through
    the descriptor.  They equal warpsim.isa.smem.read_operand of the same bytes, for every swizzle and major."""
    checked = 0
    for e, ent in enumerate(MANIFEST["entries"]):
        if ent["purpose"] != "probe" or not ent["meta"][0]["probe"].startswith("B ") or "b1" in ent["meta"][0]["probe"]:
            continue
        ins, D = _probe_matrices(CORPUS, e, ent["spec"])
        tb = int(ent["spec"].split("|")[5])
        bits = ins.elem("b").bits
        for g, meta in enumerate(ent["meta"]):
            _, _, _, descs, kw = _call(CORPUS, e, ent["spec"])
            Bt = S.read_operand(kw["smem"][g], int(descs[g]), ins.n, ins.k, bits, "MN" if tb else "K")
            B = Bt.T                                             # K x N as the model reads it
            for m in range(64):
                row = D[g, m]
                want = B[m % ins.k]
                if bits == 16:                                   # f16 -> f32 word of the same value
                    want = want.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32).astype(np.uint64)
                elif bits == 32:                                 # tf32: the low 13 bits are ignored
                    want = want & np.uint64(0xFFFFE000)
                assert (row == want).all(), (ent["spec"], meta["b"], m)
            checked += 1
    assert checked >= 3 * 16


# --- matmul ---------------------------------------------------------------------------

def test_matmul_equals_the_numerics_corpus_matrices():
    """warpsim.matmul on the matrices behind corpus entries (A registers or smem, B smem) gives the H100's D."""
    checked = 0
    for e, ent in enumerate(NUM_MANIFEST["entries"]):
        op, a_src, sa, sb, ta, tb = ent["spec"].split("|")
        if ent["purpose"] != "numerics" or a_src != "reg":
            continue
        ins = warpsim.parse(op)
        _, d, a, b, kw = _call(NUMERICS, e, ent["spec"])
        from warpsim.api.wgmma import operands
        _, _, A, Bt, C = operands(op, d, a, b, **kw)
        from warpsim.isa.codec import to_values
        Am, Bm, Cm = (to_values(x, ins.elem(r)) for x, r in ((A, "a"), (np.swapaxes(Bt, 1, 2), "b"), (C, "d")))
        D = warpsim.matmul(op, Am, Bm, Cm)
        hw = np.zeros(C.shape, np.uint64)
        tab = layout(op, "d")
        from warpsim.isa.bits import words_to_elements
        hw[:, tab[..., 1], tab[..., 2]] = words_to_elements(NUMERICS[f"{e}.dout"], ins.elem("d").bits)
        from warpsim.isa.codec import to_bits
        acc = NUMERICS[f"{e}.sd"] == 1                     # matmul accumulates (scale-d = 1)
        assert (to_bits(D, ins.elem("d"))[acc] == hw[acc]).all(), op
        checked += 1
    assert checked >= 10


# --- the register file ------------------------------------------------------------------

def _program(z, e, spec):
    op, a_src, sa, sb, ta, tb = spec.split("|")
    _, d, a, b, kw = _call(z, e, spec)
    return wgmma_register_program(op, a_src, sa, sb, ta, tb, d, a, b, kw)


@pytest.mark.parametrize("e", range(0, len(NUM_MANIFEST["entries"]), 7))
def test_numerics_corpus_replays_through_the_register_file(e):
    spec = NUM_MANIFEST["entries"][e]["spec"]
    g, dregs, text = _program(NUMERICS, e, spec)
    g.run(text)
    got = np.stack([g.get(r) for r in dregs], axis=-1)
    assert (got == NUMERICS[f"{e}.dout"]).all()


def _hazard_setup():
    e = next(i for i, x in enumerate(NUM_MANIFEST["entries"]) if x["spec"].endswith("|desc|1|1|0|0")
             and ".f32.f16.f16" in x["spec"])
    return _program(NUMERICS, e, NUM_MANIFEST["entries"][e]["spec"])


def test_register_file_hazards():
    g, dregs, text = _hazard_setup()
    issue = text.split("wgmma.commit_group")[0]
    # reading the accumulator before the covering wait_group
    g.run(issue)
    with pytest.raises(warpsim.PTXError, match=r"accumulator register %f0 of a wgmma that is still in flight \(line 3"):
        g.run("mov.b32 %r9, %f0;")
    # committed but not waited for: still in flight; wait_group 1 leaves the newest group pending
    g.run("wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 1;")
    with pytest.raises(warpsim.PTXError, match="still in flight"):
        g.run("mov.b32 %f1, 0;")
    # shared memory the wgmma reads
    b = int(g.get("%rd1")[0, 0])
    start = S.decode_descriptor(b).start
    with pytest.raises(warpsim.PTXError, match="shared memory .* that a wgmma still in flight reads"):
        g.run(f"mov.b32 %r8, {start}; mov.b32 %r7, 0; st.shared.b32 [%r8], %r7;")
    with pytest.raises(warpsim.PTXError, match="still in flight"):
        g.write_smem(start, np.zeros(4, np.uint8))
    g.run("wgmma.wait_group.sync.aligned 0;")
    assert g.in_flight == []
    g.run("mov.b32 %r9, %f0;")
    g.write_smem(start, np.zeros(4, np.uint8))


def test_register_file_fence_and_chaining():
    g, dregs, text = _hazard_setup()
    lines = [x.strip() for x in text.strip().splitlines()]
    mma = lines[1]
    # a chain of wgmmas on the same accumulator before one commit is allowed
    g.run("\n".join([lines[0], mma, mma, lines[2], lines[3]]))
    # a register written after the fence needs a new fence
    with pytest.raises(warpsim.PTXError, match="after the last wgmma.fence"):
        g.run("mov.b32 %f0, 0;\n" + mma)
    # an uncommitted wgmma is not covered by wait_group
    g.run(lines[0] + "\n" + mma + "\nwgmma.wait_group.sync.aligned 0;")
    with pytest.raises(warpsim.PTXError, match="still in flight"):
        g.run("mov.b32 %r1, %f3;")


def _two_groups():
    """Two warpgroups, each with A = 1 (64x16 f16) and B = 2 (16x8) in shared memory."""
    g = warpsim.Warpgroup(2, smem_bytes=4096)
    da, db = S.encode_descriptor(0, 128, 256), S.encode_descriptor(2048, 128, 256)
    S.write_operand(g.smem, da, np.ones((64, 16), np.float16).view(np.uint16), 16)
    S.write_operand(g.smem, db, np.full((8, 16), 2, np.float16).view(np.uint16), 16)
    g.run(f"mov.b64 %rd0, {da}; mov.b64 %rd1, {db};")
    return g


MMA_N8 = HEAD + "m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd0, %rd1, 0, 1, 1, 0, 0;"


def test_register_file_is_per_warpgroup():
    g = _two_groups()
    # each group is a CTA of 128 threads; the table's other instructions run too (shared loads here)
    g.run("mov.u32 %r0, %tid.x; mov.u32 %r1, %ctaid.x; mov.u32 %r2, %warpid; ld.shared.u32 %r3, [2048];")
    assert (g.get("%r0") == np.arange(128)).all() and (g.get("%r1") == [[0], [1]]).all()
    assert (g.get("%r2") == np.arange(128) // 32).all() and (g.get("%r3") == 0x40004000).all()
    # group 1 waits, group 0 does not: only group 0's accumulator is still in flight
    g.set("%p1", [[False], [True]])
    g.run(f"wgmma.fence.sync.aligned; {MMA_N8} wgmma.commit_group.sync.aligned; @%p1 wgmma.wait_group.sync.aligned 0;")
    assert len(g.in_flight) == 1
    g.run("@%p1 mov.b32 %r9, %f0;")
    with pytest.raises(warpsim.PTXError, match="reads accumulator register %f0"):
        g.run("@!%p1 mov.b32 %r9, %f0;")
    with pytest.raises(warpsim.PTXError, match=r"writes shared memory \[2048, 2052\)"):
        g.run("mov.b32 %r8, 0; st.shared.b32 [2048], %r8;")
    g.run("wgmma.wait_group.sync.aligned 0;")
    assert g.in_flight == [] and (g.get("%f0").view(np.float32) == 32).all()
    # descriptors and scale-d are one value per warpgroup; wgmma is warpgroup-wide
    g.set("%rd2", np.arange(128, dtype=np.uint64) + int(g.get("%rd0")[0, 0]))
    with pytest.raises(warpsim.PTXError, match="A descriptor %rd2 differs between the threads of a warpgroup"):
        g.run("wgmma.fence.sync.aligned;" + MMA_N8.replace("%rd0,", "%rd2,"))
    g.set("%p2", np.arange(128) < 64)
    with pytest.raises(warpsim.PTXError, match="all 4 warps|2 of the 4 warps"):
        g.run("@%p2 wgmma.fence.sync.aligned;")
    with pytest.raises(warpsim.PTXError, match="write it as wgmma.commit_group.sync.aligned"):
        g.run("wgmma.commit_group;")


# --- wgmma in a kernel: warpsim.ptx.load(...).launch(...) ----------------------------------

TILE_PTX = os.path.join(os.path.dirname(__file__), "ptx", "wgmma_tile.ptx")


def _tile_entry():
    """The numerics-corpus entry of the kernel's opcode and immediates (descriptor A)."""
    spec = HEAD + "m64n16k16.f32.f16.f16|desc|1|1|0|0"
    return next(i for i, x in enumerate(NUM_MANIFEST["entries"]) if x["spec"] == spec), spec


def _tile_args(e, per_cta):
    """Kernel arguments replaying corpus entry ``e`` with ``per_cta`` warpgroups per CTA: the groups'
    shared buffers side by side in their CTA's image, descriptors moved by the buffer's offset."""
    smem, desc = NUMERICS[f"{e}.smem"], NUMERICS[f"{e}.desc"]      # relative to the capture kernel's buffer
    G, nb = smem.shape
    assert G % per_cta == 0 and nb % 1024 == 0
    images = np.ascontiguousarray(smem.reshape(G // per_cta, per_cta * nb))
    shift = ((np.arange(G) % per_cta) * nb >> 4).astype(np.uint64)[:, None]
    descs = np.ascontiguousarray(desc + shift)
    sd = NUMERICS[f"{e}.sd"].astype(np.uint32)
    cd = NUMERICS[f"{e}.d"].copy().view(np.float32).reshape(-1)
    return [images, descs, sd, cd, per_cta * nb], G // per_cta


@pytest.mark.parametrize("per_cta", [1, 2])
def test_kernel_wgmma_equals_the_h100_words(per_cta):
    """A hand-written kernel (tests/ptx/wgmma_tile.ptx: shared memory filled with st.shared, one
    wgmma per warpgroup, 1 or 2 warpgroups per CTA) gives the captured H100 words, and so
    warpsim.wgmma's on the same data."""
    e, spec = _tile_entry()
    args, grid = _tile_args(e, per_cta)
    warpsim.ptx.load(TILE_PTX).launch("wgmma_tile", grid=grid, block=128 * per_cta, args=args)
    got = args[3].view(np.uint32).reshape(NUMERICS[f"{e}.d"].shape)
    assert (got == NUMERICS[f"{e}.dout"]).all()
    op, d, a, b, kw = _call(NUMERICS, e, spec)
    assert (got == warpsim.wgmma(op, d, a, b, **kw)).all()


def test_kernel_wgmma_hazards_and_warpgroups():
    from pathlib import Path

    text = Path(TILE_PTX).read_text()
    e, _ = _tile_entry()
    wait = "wgmma.wait_group.sync.aligned 0;"

    def launch(src, per_cta=2, block=None, **kw):
        args, grid = _tile_args(e, per_cta)
        warpsim.ptx.load(src).launch("wgmma_tile", grid=grid, block=block or 128 * per_cta, args=args, **kw)
        return args

    # D stored without waiting for the wgmma: the ISA's hazard with wgmma_strict=True; by default
    # what ptxas assembles (it injects the wait, info C7517), with a warning naming both statements
    with pytest.raises(warpsim.PTXError, match=r"reads accumulator register %f0 of a wgmma that is still in flight "
                                               r"\(line 8\d: wgmma.mma_async"):
        launch(text.replace(wait, ""), wgmma_strict=True)
    from warpsim.ptx.warpgroup import WgmmaSerializedWarning

    with pytest.warns(WgmmaSerializedWarning, match=r"line 8\d: 'st.global.* reads accumulator register %f0 .*"
                                                    r"\(line 8\d: wgmma.mma_async.*C7517"):
        serialised = launch(text.replace(wait, ""))
    waited = launch(text)
    assert (serialised[3].view(np.uint32) == waited[3].view(np.uint32)).all()      # D's words
    # a store into shared memory an in-flight wgmma (of the other warpgroup of the CTA, too) reads
    with pytest.raises(warpsim.PTXError, match=r"writes shared memory \[0, 4\) that a wgmma still in flight reads"):
        launch(text.replace(wait, "st.shared.u32 [%r5], %r14;\n\t" + wait))
    # the same store after the wait is fine
    launch(text.replace(wait, wait + "\n\tst.shared.u32 [%r5], %r14;"))
    # a descriptor register written after the fence is fine (the ISA fences accumulator and A-fragment
    # registers only; nvcc's CUTLASS 3 code writes descriptors between wgmma.fence and wgmma.mma_async)
    launch(text.replace("wgmma.fence.sync.aligned;", "wgmma.fence.sync.aligned;\n\tadd.s64 %rd19, %rd19, 0;"))
    # CTAs that are not whole warpgroups, and a warpgroup that is not converged
    with pytest.raises(warpsim.PTXError, match="CTA of 3 warps .* multiple of 128 threads"):
        launch(text, per_cta=1, block=96)
    with pytest.raises(warpsim.PTXError, match="all 4 warps|4 warps of warpgroup"):
        launch(text.replace("wgmma.fence.sync.aligned;", "and.b32 %r16, %r2, 64;\n\tsetp.ne.u32 %p3, %r16, 0;\n\t"
                            "@%p3 bra $L__later;\n\twgmma.fence.sync.aligned;")
               .replace("wgmma.commit_group.sync.aligned;", "$L__later:\n\twgmma.commit_group.sync.aligned;"))
    # a Warp is made of single-warp CTAs
    with pytest.raises(warpsim.PTXError, match="runs on a warpgroup"):
        warpsim.Warp().run("wgmma.fence.sync.aligned;")


# --- command line and pictures ---------------------------------------------------------

def test_cli_covers_wgmma(capsys, tmp_path):
    from warpsim.cli.main import main

    assert main(["list", "--kind", "wgmma"]) == 0
    assert len(capsys.readouterr().out.split()) == 546
    assert main(["show", HEAD + "m64n16k16.f32.f16.f16"]) == 0
    out = capsys.readouterr().out
    assert "imm-trans-b" in out and "wgmma.commit_group.sync.aligned" in out
    assert main(["layout", HEAD + "m64n16k16.f32.f16.f16", "d"]) == 0
    assert "T127:d7" in capsys.readouterr().out
    assert main(["layout", HEAD + "m64n16k16.f32.f16.f16", "b", "--swizzle", "128B"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].split()[1:3] == ["r0", "k0-7"] and out[4].split()[1:3] == ["r1", "k8-15"]   # chunks of row 1 swapped
    svg = tmp_path / "b.svg"
    assert main(["layout", HEAD + "m64n16k16.f32.f16.f16", "b", "--major", "MN", "--svg", str(svg)]) == 0
    assert svg.read_text().startswith("<svg") and "k0 r0-7" in svg.read_text()
    assert main(["layout", HEAD + "m64n16k8.f32.tf32.tf32", "b", "--major", "MN"]) == 2
    assert main(["run", HEAD + "m64n8k32.s32.s8.s8", "--swizzle", "64B", "--dist", "extreme"]) == 0
    assert "D (64x8" in capsys.readouterr().out


def test_wgmma_doc_examples_run():
    """The python blocks of docs/wgmma.md run in order; the register file gives the API's words."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "wgmma.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 3
    ns = {"__name__": "wgmma_doc"}
    for i, b in enumerate(blocks[1:]):   # the first block is the signature
        exec(compile(b, f"wgmma.md:block{i + 1}", "exec"), ns)
    got = np.stack([ns["g"].get(f"%f{i}")[0] for i in range(16)], axis=-1)
    assert (got == ns["d"]).all()


def test_cli_ptx_warpgroup(capsys, tmp_path):
    from warpsim.cli.main import main

    A = np.ones((64, 16), np.float16)
    B = np.full((16, 8), 2, np.float16)
    da, db = S.encode_descriptor(0, 128, 256), S.encode_descriptor(2048, 128, 256)
    sm = np.zeros(4096, np.uint8)
    S.write_operand(sm, da, A.view(np.uint16), 16)
    S.write_operand(sm, db, B.T.view(np.uint16), 16)
    np.save(tmp_path / "sm.npy", sm)
    prog = tmp_path / "k.ptx"
    prog.write_text(f"mov.b64 %rd0, {da};\nmov.b64 %rd1, {db};\nwgmma.fence.sync.aligned;\n"
                    f"{HEAD}m64n8k16.f32.f16.f16 {{%f0, %f1, %f2, %f3}}, %rd0, %rd1, 0, 1, 1, 0, 0;\n"
                    "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n")
    assert main(["ptx", str(prog), "--warpgroup", "--smem", str(tmp_path / "sm.npy"), "--print", "%f0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 129 and out[-1].split() == ["127", "42000000"]     # 32.0 in every thread
    prog.write_text(prog.read_text().replace("wgmma.wait_group.sync.aligned 0;", "mov.b32 %r0, %f0;"))
    assert main(["ptx", str(prog), "--warpgroup", "--smem", str(tmp_path / "sm.npy")]) == 2
    assert "still in flight" in capsys.readouterr().err


def test_wgmma_doc_catalog_table_is_generated():
    from pathlib import Path

    from warpsim.cli import docs as _docs

    text = (Path(__file__).resolve().parent.parent / "docs" / "wgmma.md").read_text()
    block = text.split(_docs.WG_BEGIN, 1)[1].split(_docs.WG_END, 1)[0]
    assert block.strip() == _docs.wgmma_catalog_markdown().strip(), "run `python -m warpsim.cli.docs` to regenerate"


@needs_ptxas
def test_min_ptx_versions(tmp_path):
    """Each wgmma row's PTX ISA version: ptxas accepts its opcodes there and refuses them one version earlier."""
    from warpsim.isa.catalog import WGMMA_SP_CATALOG

    earlier = {"8.0": "7.8", "8.2": "8.1", "8.4": "8.3"}
    seen = set()
    for ins in WGMMA_CATALOG + WGMMA_SP_CATALOG:
        key = (ins.family, ins.is_sparse, ins.min_ptx)
        if key in seen:
            continue
        seen.add(key)
        imms = (["sel=0"] if ins.is_sparse else []) + immediates(Spec(ins, "desc"))
        for version, ok in ((ins.min_ptx, True), (earlier[ins.min_ptx], False)):
            src = tmp_path / "v.ptx"
            src.write_text(ptx_source([(ins.opcode, "desc", imms)], version=version))
            r = subprocess.run([PTXAS, "-arch=sm_90a", "-o", str(tmp_path / "v.o"), str(src)], capture_output=True, text=True)
            assert (r.returncode == 0) == ok, (ins.opcode, version, r.stderr[-300:])
    assert len(seen) == 13


@pytest.mark.parametrize("sw", list(S.SWIZZLE_MODES))
@pytest.mark.parametrize("major,bits", [("K", 16), ("MN", 16), ("K", 8), ("K", 32), ("K", 1)])
def test_dense_layout_is_a_bijection(sw, major, bits):
    rows, k = 64, 256 // bits
    d, size = S.dense_layout(rows, bits, major, sw, start=1024)
    addr, bit = S.operand_addresses(d, rows, k, bits, major)
    key = addr * 8 + bit
    assert len(np.unique(key)) == rows * k                     # no two elements share bits
    assert addr.min() >= 1024 and addr.max() < 1024 + size      # inside the stated size


def test_verify_command_replays_a_wgmma_corpus(capsys):
    from warpsim.cli.main import main

    path = os.path.join(GOLDEN, "wgmma_sm90a_numerics.npz")
    assert main(["verify", "--corpus", path, "--match", "m64n16k32.f32.e4m3", "--match", "|reg|", "-q"]) == 0
    out = capsys.readouterr().out
    assert "wg-fp8" in out and "bit-exact" in out


def test_kernel_early_read_waits_for_that_wgmma_and_older_ones_only():
    """ptxas's injected wait (info C7517) before a read of an in-flight accumulator: the wgmma that
    writes it and every wgmma issued before it complete; a later one stays in flight."""
    from pathlib import Path

    from warpsim.ptx.warpgroup import WgmmaSerializedWarning

    text = Path(TILE_PTX).read_text().replace(".reg .f32 \t%f<8>;", ".reg .f32 \t%f<16>;")
    mma = next(x for x in text.splitlines() if x.strip().startswith("wgmma.mma_async")).strip()
    first = mma.replace("{%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}", "{%f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15}")
    assert first != mma and "%f<16>" in text
    e, _ = _tile_entry()

    def launch(read):
        src = text.replace(mma + "\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;",
                           f"{first}\n\twgmma.commit_group.sync.aligned;\n\t{mma}\n\twgmma.commit_group.sync.aligned;"
                           f"\n\tmov.b32 %r20, {read};\n\tst.shared.u32 [%r5], %r14;\n\twgmma.wait_group.sync.aligned 0;")
        assert src != text
        args, grid = _tile_args(e, 1)
        with pytest.warns(WgmmaSerializedWarning, match=f"reads accumulator register {read}"):
            warpsim.ptx.load(src).launch("wgmma_tile", grid=grid, block=128, args=args)

    launch("%f0")          # the newer wgmma's accumulator: both complete, the store is safe
    with pytest.raises(warpsim.PTXError, match=r"writes shared memory \[0, 4\) that a wgmma still in flight"):
        launch("%f8")      # the older one's: the newer wgmma still reads shared memory


def test_fast_kernel_defers_groups_when_host_fpu_is_not_default(monkeypatch):
    """A group whose thread finds the host FPU outside its default state is recomputed by the exact
    kernel (simulated with a probe that never passes), scale-d per group included."""
    from warpsim.api.wgmma import canonical_smem
    from warpsim.engine import kernel, tensorcore, warpgroup_mma
    from warpsim.hw.inputs import float_elements

    op = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"
    ins = warpsim.parse(op)
    m, n, k = ins.mnk
    rng = np.random.default_rng(3)
    G = 2
    A = float_elements(ins.elem("a"), "normal", "a", rng, G * m * k).reshape(G, m, k)
    B = float_elements(ins.elem("b"), "normal", "b", rng, G * k * n).reshape(G, k, n)
    C = float_elements(ins.elem("d"), "normal", "c", rng, G * m * n).reshape(G, m, n)
    sm, da, db = canonical_smem(ins, A, B)
    d = warpgroup_mma.pack_d(ins, C)
    sd = np.array([0, 1])
    bad = np.zeros(8, np.float64)
    bad[3] = 1.0                                 # fma(tiny, 1/2, 0) never equals it
    monkeypatch.setattr(tensorcore, "_PROBE64", bad)
    stats = {}
    monkeypatch.setattr(tensorcore, "STATS", stats)
    got = warpsim.wgmma(op, d, np.uint64(da), np.uint64(db), smem=sm, scale_d=sd)
    assert stats.get("exact", 0) >= G          # every group left to the exact path
    monkeypatch.setattr(kernel, "FORCE_GENERIC", True)
    want = warpsim.wgmma(op, d, np.uint64(da), np.uint64(db), smem=sm, scale_d=sd)
    assert np.array_equal(got, want)
