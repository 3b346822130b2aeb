"""tcgen05.mma forms beyond dense cta_group::1 M = 128 (issue 33): .ws, M = 64, collector buffers, sparse A
with metadata in tensor memory (block-scaled too), cta_group::2 on a CTA pair -- all modelled (no B200).

Expected placements are worked out by hand from the PTX ISA's data-path table (layout letters by M,
cta_group, sparsity, .ws) as docs/tcgen05.md reads its figures; small integers keep every product sum
exact whatever the rounding recipe, so these tests pin the layouts and operand routing, not the numerics.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import warpsim
from warpsim.api.tcgen05 import tcgen05_mma
from warpsim.isa import smem as S
from warpsim.isa import tcgen05 as t5
from warpsim.ptx.tmem import TensorMemory, TmemError

RNG = np.random.default_rng(2033)


def _to100(d):
    x = S.decode_descriptor(d)
    return t5.encode_smem_desc(x.start, x.lbo, x.sbo)


def _operands(A_bits, Bt_bits, bits):
    """A (rows, kA) and B^T (n, kB) raw bits, K-major without swizzle -> (smem, A descriptor, B descriptor)."""
    da, sa = S.dense_layout(A_bits.shape[0], bits, "K", "none", 0, kbytes=A_bits.shape[1] * bits // 8)
    b0 = -(-sa // 1024) * 1024
    db, sb = S.dense_layout(Bt_bits.shape[0], bits, "K", "none", b0, kbytes=Bt_bits.shape[1] * bits // 8)
    sm = np.zeros((1, b0 + sb), np.uint8)
    S.write_operand(sm, da, A_bits[None].astype(np.uint64), bits)
    S.write_operand(sm, db, Bt_bits[None].astype(np.uint64), bits)
    return sm[0], _to100(da), _to100(db)


def _f16(rows, cols, lo=-3, hi=4):
    return RNG.integers(lo, hi, (rows, cols)).astype(np.float16)


def _bits(x):
    return x.view(np.uint16).astype(np.uint64)


def test_ws_m64_folds_column_halves_onto_lanes_64_127():
    """Layout E (M = 64, .ws): row r, column c of D in lane r + 64 * (c // (N/2)), column c % (N/2)."""
    A, B = _f16(64, 16), _f16(16, 64)
    sm, da, db = _operands(_bits(A), _bits(B.T.copy()), 16)
    tm = TensorMemory()
    base = tm.alloc(32)
    tcgen05_mma("tcgen05.mma.ws.cta_group::1.kind::f16", tm, base, da, db, t5.encode_idesc("f16", "f16", "f16", "f32", 64, 64),
                smem=sm, enable_input_d=False)
    D = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    cells = tm.cells[:, :32].view(np.float32)
    assert (cells[:64] == D[:, :32]).all() and (cells[64:] == D[:, 32:]).all()


def test_ws_m32_folds_column_quarters_onto_the_four_warp_quarters():
    """Layout G (M = 32, .ws): row r, column c in lane r + 32 * (c // (N/4)), column c % (N/4); enable-input-d
    reads C back through the same layout."""
    A, B = _f16(32, 16), _f16(16, 128)
    sm, da, db = _operands(_bits(A), _bits(B.T.copy()), 16)
    tm = TensorMemory()
    base = tm.alloc(32)
    tm.cells[:, :32] = np.float32(0.5).view(np.uint32)
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 32, 128)
    tcgen05_mma("tcgen05.mma.ws.cta_group::1.kind::f16", tm, base, da, db, idesc, smem=sm)
    D = A.astype(np.float64) @ B.astype(np.float64) + 0.5
    cells = tm.cells[:, :32].view(np.float32)
    for q in range(4):
        assert (cells[32 * q:32 * q + 32] == D[:, 32 * q:32 * q + 32]).all(), q


def test_m64_uses_half_the_data_path_16_rows_per_warp_quarter():
    """Layout F (M = 64, cta_group::1, not .ws): row r in lane 32 * (r // 16) + r % 16 (+ 16 with a lane-16
    address); the other lanes are left alone."""
    A, B = _f16(64, 16), _f16(16, 32)
    sm, da, db = _operands(_bits(A), _bits(B.T.copy()), 16)
    D = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    rows = np.arange(64)
    for lane0 in (0, 16):
        tm = TensorMemory()
        base = tm.alloc(32)
        tm.cells[:, :32] = 7
        tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", tm, (lane0 << 16) | base, da, db,
                    t5.encode_idesc("f16", "f16", "f16", "f32", 64, 32), smem=sm, enable_input_d=False)
        lanes = lane0 + 32 * (rows // 16) + rows % 16
        assert (tm.cells[lanes, :32].view(np.float32) == D).all()
        others = np.setdiff1d(np.arange(128), lanes)
        assert (tm.cells[others, :32] == 7).all()
    with pytest.raises(TmemError, match="D must start at lane 0 or 16"):
        tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", TensorMemory(), 8 << 16, da, db,
                    t5.encode_idesc("f16", "f16", "f16", "f32", 64, 32), smem=sm)


def test_ws_b_collector_buffers_fill_use_lastuse():
    """collector::b0::fill keeps B; ::use reads the buffer, not shared memory (here zeroed); ::lastuse frees
    it, so a later ::use has nothing to read."""
    A, B = _f16(64, 16), _f16(16, 64)
    sm, da, db = _operands(_bits(A), _bits(B.T.copy()), 16)
    tm = TensorMemory()
    base = tm.alloc(64)
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 64, 64)
    ws = "tcgen05.mma.ws.cta_group::1.kind::f16.collector::b0::"
    tcgen05_mma(ws + "fill", tm, base, da, db, idesc, smem=sm, enable_input_d=False)
    first = tm.cells[:, :32].copy()
    blank = sm.copy()
    blank[t5.decode_smem_desc(db).start:] = 0          # B's bytes gone from shared memory
    tcgen05_mma(ws + "use", tm, base + 32, da, db, idesc, smem=blank, enable_input_d=False)
    assert (tm.cells[:, 32:64] == first).all()
    tcgen05_mma(ws + "lastuse", tm, base + 32, da, db, idesc, smem=blank, enable_input_d=False)
    assert (tm.cells[:, 32:64] == first).all()
    with pytest.raises(ValueError, match="B collector b0 buffer is empty"):
        tcgen05_mma(ws + "use", tm, base, da, db, idesc, smem=blank)
    tcgen05_mma(ws + "discard", tm, base, da, db, idesc, smem=blank, enable_input_d=False)
    assert (tm.cells[:, :32] == 0).all()             # read from (zeroed) shared memory


def _sparse_rows(m, k_logical, rng, unit=1):
    """(kept columns (m, k/2), 2-bit indices (m, k/2 / unit)): two distinct positions of every four units."""
    groups = k_logical // (4 * unit)
    idx = np.sort(np.stack([rng.permutation(4)[:2] for _ in range(m * groups)]), axis=1).reshape(m, 2 * groups)
    unit_cols = 4 * (np.arange(2 * groups) // 2)[None, :] + idx
    cols = (unit * np.repeat(unit_cols, unit, axis=1) + np.tile(np.arange(unit), 2 * groups)[None, :])
    return cols, idx


def _metadata_cells(idx, bits=2):
    """Pack each row's fields into 32-bit cells, field 0 in the low bits (the modelled layout)."""
    per = 32 // bits
    m, n = idx.shape
    w = np.zeros((m, -(-n // per)), np.uint64)
    for j in range(n):
        w[:, j // per] |= idx[:, j].astype(np.uint64) << np.uint64(bits * (j % per))
    return w.astype(np.uint32)


def test_sparse_f16_reads_kept_elements_and_metadata_from_tensor_memory():
    """.sp, kind::f16, M 128, N 32, logical K 32: A holds 16 kept elements per row, the metadata 16 2-bit
    indices per row (row i in lane i, one cell); D = logical A x B."""
    cols, idx = _sparse_rows(128, 32, RNG)
    Ac = _f16(128, 16)
    Alog = np.zeros((128, 32))
    np.put_along_axis(Alog, cols, Ac.astype(np.float64), axis=1)
    B = _f16(32, 32)
    sm, da, db = _operands(_bits(Ac), _bits(B.T.copy()), 16)
    tm = TensorMemory()
    base = tm.alloc(64)
    tm.cells[:, 40:41] = _metadata_cells(idx)
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 128, 32, sparse=True)
    tcgen05_mma("tcgen05.mma.sp.cta_group::1.kind::f16", tm, base, da, db, idesc, smem=sm, enable_input_d=False,
                meta_taddr=base + 40)
    assert (tm.cells[:, :32].view(np.float32) == Alog @ B.astype(np.float64)).all()
    tm.cells[5, 40] = (tm.cells[5, 40] & ~np.uint32(0xF)) | np.uint32(0b0101)   # row 5, group 0: index 1 twice
    with pytest.raises(ValueError, match="row 5, group 0: both kept positions have index 1"):
        tcgen05_mma("tcgen05.mma.sp.cta_group::1.kind::f16", tm, base, da, db, idesc, smem=sm, meta_taddr=base + 40)
    with pytest.raises(ValueError, match="sparse MMA needs the sparsity-metadata address"):
        tcgen05_mma("tcgen05.mma.sp.cta_group::1.kind::f16", tm, base, da, db, idesc, smem=sm)


def test_sparse_block_scaled_factor_per_32_logical_k():
    """.sp.kind::mxf8f6f4.block_scale, e4m3, logical K 64: the ue8m0 factor of logical block K 0..31 scales the
    16 kept products whose metadata points there, the second factor the next 16."""
    cols, idx = _sparse_rows(128, 64, RNG)
    Ac = RNG.integers(-3, 4, (128, 32)).astype(ml_dtypes.float8_e4m3fn)
    B = RNG.integers(-3, 4, (64, 16)).astype(ml_dtypes.float8_e4m3fn)
    sm, da, db = _operands(Ac.view(np.uint8).astype(np.uint64), B.T.copy().view(np.uint8).astype(np.uint64), 8)
    tm = TensorMemory()
    base = tm.alloc(64)
    tm.cells[:, 32] = np.uint32(128) | np.uint32(126) << np.uint32(8)     # A rows: 2^1 on K 0..31, 2^-1 on K 32..63
    tm.cells[:16, 33] = np.uint32(127) | np.uint32(129) << np.uint32(8)   # B columns: 1, then 4
    tm.cells[:, 34:36] = _metadata_cells(idx)
    idesc = t5.encode_idesc("mxf8f6f4", "e4m3", "e4m3", "f32", 128, 16, sparse=True, scale_type="ue8m0")
    tcgen05_mma("tcgen05.mma.sp.cta_group::1.kind::mxf8f6f4.block_scale", tm, base, da, db, idesc, smem=sm,
                enable_input_d=False, scale_a_taddr=base + 32, scale_b_taddr=base + 33, meta_taddr=base + 34)
    Alog = np.zeros((128, 64))
    np.put_along_axis(Alog, cols, Ac.astype(np.float64), axis=1)
    Bf = B.astype(np.float64)
    want = 2 * Alog[:, :32] @ Bf[:32] + 0.5 * 4 * Alog[:, 32:] @ Bf[32:]
    assert (tm.cells[:, :16].view(np.float32) == want).all()


def test_sparse_tf32_nibbles():
    """tf32 (1:2): nibble 0b0100 picks element 0 of its pair, 0b1110 element 1; other nibbles are refused."""
    pick = RNG.integers(0, 2, (128, 8))
    Ac = RNG.integers(-3, 4, (128, 8)).astype(np.float32)
    Alog = np.zeros((128, 16))
    np.put_along_axis(Alog, 2 * np.arange(8)[None, :] + pick, Ac.astype(np.float64), axis=1)
    B = RNG.integers(-3, 4, (16, 16)).astype(np.float32)
    sm, da, db = _operands(Ac.view(np.uint32).astype(np.uint64), B.T.copy().view(np.uint32).astype(np.uint64), 32)
    tm = TensorMemory()
    base = tm.alloc(32)
    tm.cells[:, 20:21] = _metadata_cells(np.where(pick == 1, 0b1110, 0b0100), bits=4)
    idesc = t5.encode_idesc("tf32", "tf32", "tf32", "f32", 128, 16, sparse=True)
    op = "tcgen05.mma.sp.cta_group::1.kind::tf32"
    tcgen05_mma(op, tm, base, da, db, idesc, smem=sm, enable_input_d=False, meta_taddr=base + 20)
    assert (tm.cells[:, :16].view(np.float32) == Alog @ B.astype(np.float64)).all()
    tm.cells[3, 20] ^= np.uint32(0b0011)
    with pytest.raises(ValueError, match="row 3, element 0: tf32 nibble"):
        tcgen05_mma(op, tm, base, da, db, idesc, smem=sm, meta_taddr=base + 20)


@pytest.mark.parametrize("m,layout", [(256, "A"), (128, "B")])
def test_cta_pair_splits_a_rows_and_b_columns(m, layout):
    """cta_group::2: the even CTA's shared memory holds A's first M/2 rows and B's first N/2 columns, the odd
    CTA's the rest; each CTA's tensor memory gets its M/2 rows of D (M 256: layout A, row r in lane r; M 128:
    layout B, 64 rows with the column halves folded onto lanes 64..127)."""
    n = 64
    A, B = _f16(m, 16), _f16(16, n)
    D = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    h, c = m // 2, n // 2
    pair = []
    for p in range(2):
        sm, da, db = _operands(_bits(A[p * h:(p + 1) * h]), _bits(B[:, p * c:(p + 1) * c].T.copy()), 16)
        tm = TensorMemory()
        tm.alloc(64)
        pair.append((tm, sm))
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", m, n)
    tcgen05_mma("tcgen05.mma.cta_group::2.kind::f16", pair[0][0], 0, da, db, idesc, smem=pair[0][1],
                enable_input_d=False, peer=pair[1])
    for p, (tm, _) in enumerate(pair):
        cells = tm.cells.view(np.float32)
        mine = D[p * h:(p + 1) * h]
        if layout == "A":
            assert (cells[:, :n] == mine).all()
        else:
            assert (cells[:64, :32] == mine[:, :32]).all() and (cells[64:, :32] == mine[:, 32:]).all()
    with pytest.raises(ValueError, match="cta_group::2 needs the peer CTA"):
        tcgen05_mma("tcgen05.mma.cta_group::2.kind::f16", pair[0][0], 0, da, db, idesc, smem=pair[0][1])


_PAIR_KERNEL = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 img, .param .u64 adesc, .param .u64 bdesc, .param .u32 idesc)
.reqnctapercluster 2, 1, 1
{
 .reg .b32 %r<20>; .reg .b64 %rd<12>; .reg .pred %p<3>;
 .shared .align 16 .b32 slot;
 .shared .align 1024 .b8 tiles[BYTES];
 mov.u32 %r1, %tid.x;
 shr.u32 %r2, %r1, 5;
 mov.u32 %r16, %cluster_ctarank;
 setp.eq.u32 %p1, %r2, 0;
 @%p1 tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [slot], 64;
 ld.param.u64 %rd7, [img];
 mul.wide.u32 %rd8, %r16, BYTES;
 add.u64 %rd7, %rd7, %rd8;
 mul.wide.u32 %rd8, %r1, 16;
 add.u64 %rd7, %rd7, %rd8;
 mov.u32 %r5, tiles;
 mad.lo.u32 %r11, %r1, 16, %r5;
 mov.u32 %r17, 0;
COPY:
 ld.global.v4.u32 {%r12, %r13, %r14, %r15}, [%rd7];
 st.shared.v4.u32 [%r11], {%r12, %r13, %r14, %r15};
 add.u64 %rd7, %rd7, 2048;
 add.u32 %r11, %r11, 2048;
 add.u32 %r17, %r17, 2048;
 setp.lt.u32 %p2, %r17, BYTES;
 @%p2 bra COPY;
 barrier.cluster.arrive.aligned;
 barrier.cluster.wait.aligned;
 ld.shared.u32 %r3, [slot];
 ld.param.u64 %rd4, [adesc];
 ld.param.u64 %rd5, [bdesc];
 ld.param.u32 %r4, [idesc];
 shr.u32 %r5, %r5, 4;
 cvt.u64.u32 %rd6, %r5;
 add.u64 %rd4, %rd4, %rd6;
 add.u64 %rd5, %rd5, %rd6;
 setp.eq.u32 %p2, %r1, 0;
 setp.eq.or.u32 %p2, %r16, 1, %p2;
 setp.eq.and.u32 %p2, %r1, 0, %p2;
 setp.ne.u32 %p1, %r1, 999;
 tcgen05.fence::after_thread_sync;
 setp.eq.u32 %p2, %r16, 0;
 setp.eq.and.u32 %p2, %r1, 0, %p2;
 @%p2 tcgen05.mma.cta_group::2.kind::f16 [%r3], %rd4, %rd5, %r4, %p1;
 barrier.cluster.arrive.aligned;
 barrier.cluster.wait.aligned;
 tcgen05.fence::after_thread_sync;
 shl.b32 %r6, %r2, 21;
 add.u32 %r6, %r6, %r3;
 tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r7, %r8, %r9, %r10}, [%r6];
 tcgen05.wait::ld.sync.aligned;
 ld.param.u64 %rd1, [out];
 mad.lo.u32 %r18, %r16, 128, %r1;
 mul.wide.u32 %rd2, %r18, 16;
 add.u64 %rd3, %rd1, %rd2;
 st.global.v4.u32 [%rd3], {%r7, %r8, %r9, %r10};
 bar.sync 0;
 setp.eq.u32 %p1, %r2, 0;
 @%p1 tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r3, 64;
 ret;
}
"""


def _pair_images():
    A, B = _f16(256, 16), _f16(16, 32)
    imgs = []
    for p in range(2):
        sm, da, db = _operands(_bits(A[128 * p:128 * (p + 1)]), _bits(B[:, 16 * p:16 * (p + 1)].T.copy()), 16)
        imgs.append(sm)
    size = -(-max(i.size for i in imgs) // 2048) * 2048
    img = np.zeros((2, size), np.uint8)
    for p, sm in enumerate(imgs):
        img[p, :sm.size] = sm
    return A, B, img, da, db, size


def test_ptx_kernel_issues_a_cta_pair_mma():
    """A 2-CTA cluster: rank 0's thread 0 issues tcgen05.mma.cta_group::2 (M 256, N 32); each CTA's warps read
    their 128 rows of D (first 4 columns) from their own tensor memory."""
    import warpsim.ptx as wp

    A, B, img, da, db, size = _pair_images()
    out = np.zeros((256, 4), np.uint32)
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 256, 32)
    wp.load(_PAIR_KERNEL.replace("BYTES", str(size))).launch(
        "k", 2, 128, [out, img, np.uint64(da), np.uint64(db), np.uint32(idesc)], arch="sm_100a")
    assert (out.view(np.float32) == (A.astype(np.float64) @ B.astype(np.float64))[:, :4]).all()
    with pytest.raises(warpsim.PTXError, match="cta_group::2 runs on a CTA pair"):
        wp.load(_PAIR_KERNEL.replace("BYTES", str(size)).replace(".reqnctapercluster 2, 1, 1\n", "")).launch(
            "k", 2, 128, [out, img, np.uint64(da), np.uint64(db), np.uint32(idesc)], arch="sm_100a")


def test_pair_kernel_assembles_for_sm100a(tmp_path):
    import shutil
    import subprocess

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("needs ptxas (CUDA 13)")
    f = tmp_path / "pair.ptx"
    f.write_text(_PAIR_KERNEL.replace("BYTES", "4096"))
    r = subprocess.run([ptxas, "-arch=sm_100a", str(f), "-o", str(tmp_path / "pair.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_explain_marks_every_tcgen05_spelling_modelled_with_its_guesses():
    """Every accepted tcgen05.mma spelling (464) and the other tcgen05 rows: 'modelled: no hardware capture';
    the forms with guessed layouts name them."""
    from warpsim.isa.catalog import TCGEN05_CATALOG

    for op in TCGEN05_CATALOG:
        text = str(warpsim.explain(op.opcode))
        assert "modelled: no hardware capture" in text, op.opcode
        assert "data-path layout" in text, op.opcode
        for flag, word in ((op.ws, ".ws"), (op.sparse, "sparse"), (op.cta_group == 2, "cta_group::2"),
                           (op.block_scaled and op.sparse, "half as many kept products")):
            if flag:
                assert word in text and "layout guesses" in text, (op.opcode, word)
    for other in ("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32", "tcgen05.ld.sync.aligned.32x32b.x4.b32",
                  "tcgen05.cp.cta_group::1.128x256b", "tcgen05.shift.cta_group::1.down", "tcgen05.wait::ld.sync.aligned",
                  "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64"):
        assert "modelled: no hardware capture" in str(warpsim.explain(other)), other


def test_docs_mark_tcgen05_modelled():
    """docs/tcgen05.md opens 'modelled everywhere' and no docs table row calls a tcgen05 form verified."""
    from pathlib import Path

    docs = Path(__file__).resolve().parent.parent / "docs"
    assert "**Status: modelled everywhere.**" in (docs / "tcgen05.md").read_text()
    for page in docs.glob("*.md"):
        for line in page.read_text().splitlines():
            if line.startswith("|") and "tcgen05" in line:
                assert "verified" not in line.lower() or "not verified" in line.lower(), (page.name, line)
