"""Tensor memory (warpsim.ptx.tmem) and the descriptor-level tcgen05_mma: placements worked out from
the PTX ISA's descriptions (lane = row, address = lane << 16 | column, a warp's lane quarter)."""

from __future__ import annotations

import numpy as np
import pytest

import warpsim
from warpsim.isa import smem as S
from warpsim.isa import tcgen05 as t5
from warpsim.ptx.tmem import TensorMemory, TmemError


def test_alloc_dealloc_and_permit():
    tm = TensorMemory()
    a = tm.alloc(32)
    b = tm.alloc(128)
    c = tm.alloc(64)
    assert (a, b, c) == (0, 128, 64)            # aligned to their size, first fit
    with pytest.raises(TmemError, match="power of two"):
        tm.alloc(48)
    tm.alloc(256)
    with pytest.raises(TmemError, match="would block"):
        tm.alloc(64)
    with pytest.raises(TmemError, match="matches no allocation"):
        tm.dealloc(b, 64)
    tm.dealloc(b, 128)
    assert tm.alloc(128) == 128
    tm.relinquish_alloc_permit()
    with pytest.raises(TmemError, match="relinquish"):
        tm.alloc(32)


def test_ld_st_32x32b_and_warp_quarters():
    tm = TensorMemory()
    base = tm.alloc(64)
    vals = (np.arange(32 * 8, dtype=np.uint32).reshape(32, 8) + 1000)
    tm.st(2, (64 << 16) | base + 3, "32x32b", vals, 8)         # warp 2: lanes 64..95
    assert (tm.cells[64:96, 3:11] == vals).all()
    assert (tm.ld(6, (64 << 16) | base + 3, "32x32b", 8) == vals).all()   # warp 6 is quarter 2 too
    with pytest.raises(TmemError, match=r"warp 1 \(warp 1 of its warpgroup\) may access lanes 32..63 only, not lane\(s\) 64..95"):
        tm.ld(1, (64 << 16) | base, "32x32b", 1)
    with pytest.raises(TmemError, match="column 64 is not allocated"):
        tm.ld(0, base + 60, "32x32b", 8)
    with pytest.raises(TmemError, match=".num must be"):
        tm.ld(0, base, "32x32b", 3)


def test_16_lane_shapes():
    tm = TensorMemory()
    tm.alloc(32)
    tm.cells[:16, :8] = (np.arange(16)[:, None] * 100 + np.arange(8)[None, :]).astype(np.uint32)
    # 16x256b: thread t holds lane t//4 columns 2(t%4), 2(t%4)+1, then lane t//4 + 8 (the mma accumulator picture)
    r = tm.ld(0, 0, "16x256b")
    t = 5
    assert list(r[t]) == [100 * 1 + 2, 100 * 1 + 3, 100 * 9 + 2, 100 * 9 + 3]
    # 16x64b: thread t holds lane t // 2, column t % 2
    assert list(tm.ld(0, 0, "16x64b")[:4, 0]) == [0, 1, 100, 101]
    # 16x128b: thread t holds lane t//4 and t//4 + 8, column t % 4
    assert list(tm.ld(0, 0, "16x128b")[7]) == [100 * 1 + 3, 100 * 9 + 3]
    # 16x32bx2 with a half split of 4 columns: threads 16.. read the same lanes 4 columns on
    r = tm.ld(0, 0, "16x32bx2", 2, half_offset=4)
    assert list(r[3]) == [300, 301] and list(r[19]) == [304, 305]
    with pytest.raises(TmemError, match="immHalfSplitoff"):
        tm.ld(0, 0, "16x32bx2")


def test_pack_unpack_16b():
    tm = TensorMemory()
    tm.alloc(32)
    regs = np.arange(32 * 2, dtype=np.uint32).reshape(32, 2) * np.uint32(0x10001) + np.uint32(0x00020001)
    tm.st(0, 0, "32x32b", regs, 4, unpack16=True)
    assert tm.cells[5, 0] == regs[5, 0] & 0xFFFF and tm.cells[5, 1] == regs[5, 0] >> 16
    assert (tm.ld(0, 0, "32x32b", 4, pack16=True) == regs).all()


def test_cp_multicast_shift_commit_wait_fence():
    tm = TensorMemory()
    tm.alloc(32)
    sm = np.arange(64 * 16, dtype=np.uint32).astype(np.uint8)   # 64 rows x 16 bytes, core matrices adjacent
    desc = t5.encode_smem_desc(0, 0, 128)                        # SBO = 8 rows x 16 bytes
    tm.cp(0, "64x128b", sm, desc, "warpx2::02_13")
    row = lambda r: sm[16 * r:16 * r + 16].view("<u4")            # noqa: E731
    assert (tm.cells[5, :4] == row(5)).all() and (tm.cells[64 + 5, :4] == row(5)).all()
    assert (tm.cells[32 + 7, :4] == row(32 + 7)).all() and (tm.cells[96 + 7, :4] == row(32 + 7)).all()
    tm.cp(0, "32x128b", sm, desc, "warpx4")
    assert (tm.cells[96 + 2, :4] == row(2)).all()
    with pytest.raises(TmemError, match="multicast"):
        tm.cp(0, "128x256b", sm, desc, "warpx4")
    before = tm.cells[:, :8].copy()
    tm.shift_down(0)
    assert (tm.cells[1:, :8] == before[:-1]).all() and (tm.cells[0, :8] == before[0]).all()
    tm.commit(0x400, cta_mask=0b11)
    assert tm.arrivals == [(0x400, 3)]
    tm.wait("ld")
    tm.fence("before_thread_sync")
    with pytest.raises(TmemError, match="wait::ld, wait::st"):
        tm.wait("mma")
    with pytest.raises(TmemError, match="fence"):
        tm.fence("acquire")


def _smem_operands(A_bits, B_bits, bits):
    """A (128, K) and B^T (N, K) K-major, no swizzle; returns smem and sm_100 descriptors."""
    da, sa = S.dense_layout(128, bits, "K", "none", 0)
    b0 = -(-sa // 1024) * 1024
    db, sb = S.dense_layout(B_bits.shape[0], bits, "K", "none", b0, kbytes=32)
    sm = np.zeros((1, b0 + sb), np.uint8)
    S.write_operand(sm, da, A_bits[None], bits)
    S.write_operand(sm, db, B_bits[None], bits)
    to100 = lambda d: t5.encode_smem_desc(*(lambda x: (x.start, x.lbo, x.sbo))(S.decode_descriptor(d)))  # noqa: E731
    return sm[0], to100(da), to100(db)


def test_tcgen05_mma_through_tensor_memory():
    from warpsim.api.tcgen05 import tcgen05_mma

    rng = np.random.default_rng(3)
    A = rng.integers(-4, 5, (128, 16)).astype(np.float16)
    B = rng.integers(-4, 5, (16, 32)).astype(np.float16)
    sm, da, db = _smem_operands(A.view(np.uint16).astype(np.uint64), B.T.copy().view(np.uint16).astype(np.uint64), 16)
    tm = TensorMemory()
    base = tm.alloc(32)
    tm.cells[:, :32] = np.full((128, 32), 0.5, np.float32).view(np.uint32)     # C = 0.5 everywhere
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 128, 32)
    tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", tm, base, da, db, idesc, smem=sm)
    want = A.astype(np.float64) @ B.astype(np.float64) + 0.5                     # small integers: exact
    assert (tm.cells[:, :32].view(np.float32) == want).all()
    tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", tm, base, da, db, idesc, smem=sm, enable_input_d=False)
    assert (tm.ld(3, (96 << 16) | base, "32x32b", 32).view(np.float32) == want[96:] - 0.5).all()
    with pytest.raises(ValueError, match="A type code 0 is not defined for kind::tf32"):
        tcgen05_mma("tcgen05.mma.cta_group::1.kind::tf32", tm, base, da, db, idesc, smem=sm)
    with pytest.raises(ValueError, match="version field"):
        tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", tm, base, da & ~(1 << 46), db, idesc, smem=sm)


def test_tcgen05_mma_block_scaled_scales_from_tmem():
    import ml_dtypes
    from warpsim.api.tcgen05 import tcgen05_mma

    A = np.zeros((128, 32), ml_dtypes.float8_e4m3fn)
    B = np.zeros((32, 16), ml_dtypes.float8_e4m3fn)
    A[:, 0] = 1.5
    B[0, :] = 2
    sm, da, db = _smem_operands(A.view(np.uint8).astype(np.uint64), B.T.copy().view(np.uint8).astype(np.uint64), 8)
    tm = TensorMemory()
    base = tm.alloc(32)
    sfa, sfb = base + 16, base + 17
    tm.cells[:, 16] = np.uint32(130) << np.uint32(8)      # row scales 2^3 in byte 1 (scale id A = 1)
    tm.cells[:16, 17] = np.uint32(125)                    # column scales 2^-2 in byte 0
    idesc = t5.encode_idesc("mxf8f6f4", "e4m3", "e4m3", "f32", 128, 16, scale_type="ue8m0", scale_id_a=1)
    tcgen05_mma("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale", tm, base, da, db, idesc, smem=sm,
                enable_input_d=False, scale_a_taddr=sfa, scale_b_taddr=sfb)
    assert (tm.cells[:, :16].view(np.float32) == 1.5 * 2 * 8 / 4).all()


def test_accumulator_svg():
    import re
    from warpsim.cli.svg import tmem_accumulator_svg

    s = tmem_accumulator_svg(16, column=32)
    assert s.startswith("<svg") and s.rstrip().endswith("</svg>")
    assert s.count("<rect") == 128 * 16
    assert ">D127,15<" in s and ">col 47<" in s
    fills = re.findall(r'fill="(#[0-9a-f]{6})"/><text[^>]*>D(\d+),0<', s)
    by_quarter = {int(r) // 32: f for f, r in fills}
    assert len(set(by_quarter.values())) == 4 and len({f for f, r in fills if int(r) < 32}) == 1
    with pytest.raises(ValueError, match="multiple of 8"):
        tmem_accumulator_svg(12)


def test_capture_kernels_build_and_model_side_runs(tmp_path):
    import shutil
    from warpsim.hw import tcgen05_capture as T

    src = T.kernel_source()
    assert src.count("extern \"C\" __global__") == len(T.CASES)
    from warpsim.hw.offline.tcgen05_replay import model_d, replay

    arrays = {"cases": np.array([__import__("json").dumps(list(c)) for c in T.CASES])}
    for i, case in enumerate(T.CASES):
        inp = T.case_inputs(case, i)
        d = model_d(case, inp)
        assert d.shape == ((2,) if "pair" in case else ()) + (128, case[4]) and d.dtype == np.uint32
        for key in ("img", "c", "sf"):
            arrays[f"{i}.{key}"] = inp[key]
        arrays[f"{i}.desc"] = np.array([inp["adesc"], inp["bdesc"], inp["idesc"]], np.uint64)
        arrays[f"{i}.gpu"] = d ^ np.uint32(i == 2)          # a planted difference in case 2 (the replay must see it)
    np.savez(tmp_path / "cap.npz", **arrays)
    res = replay(tmp_path / "cap.npz")
    assert [r["differing_words"] for r in res] == [0, 0, 128 * T.CASES[2][4]] + [0] * (len(T.CASES) - 3)
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH: the sm_100a compile check needs it")
    assert len(T.compile_cubin(src)) > 10000


_KERNEL = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out){
 .reg .b32 %r<8>; .reg .b64 %rd<6>; .reg .pred %p<2>;
 .shared .align 4 .b32 slot;
 mov.u32 %r1, %tid.x;
 shr.u32 %r2, %r1, 5;
 setp.eq.u32 %p1, %r2, 0;
 @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 64;
 bar.sync 0;
 ld.shared.u32 %r3, [slot];
 shl.b32 %r4, %r2, LANE_SHIFT;
 add.u32 %r4, %r4, %r3;
 add.u32 %r5, %r1, 7;
 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r4], {%r5};
 tcgen05.wait::st.sync.aligned;
 tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r6}, [%r4];
 tcgen05.wait::ld.sync.aligned;
 ld.param.u64 %rd1, [out];
 mul.wide.u32 %rd2, %r1, 4;
 add.u64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r6;
 bar.sync 0;
 @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 64;
 ret;
}
"""


def test_ptx_kernel_allocates_stores_and_loads_tensor_memory():
    """A kernel's own PTX (ptxas 13.0 accepts it for sm_100a): warp w stores thread id + 7 in its lane quarter
    (address (32 w) << 16 | column), loads it back, writes it out; two CTAs get separate tensor memories."""
    import warpsim.ptx as wp

    out = np.zeros(256, np.uint32)
    wp.load(_KERNEL.replace("LANE_SHIFT", "21")).launch("k", 2, 128, [out[:128]], arch="sm_100a")
    assert (out[:128] == np.arange(128) + 7).all()
    with pytest.raises(warpsim.PTXError, match=r"warp 1 \(warp 1 of its warpgroup\) may access lanes 32..63 only, not lane\(s\) 0..31"):
        wp.load(_KERNEL.replace("LANE_SHIFT", "0")).launch("k", 1, 128, [out[:128]], arch="sm_100a")


_MMA_KERNEL = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 img, .param .u64 adesc, .param .u64 bdesc, .param .u32 idesc){
 .reg .b32 %r<16>; .reg .b64 %rd<12>; .reg .pred %p<3>;
 .shared .align 16 .b32 slot;
 .shared .align 1024 .b8 tiles[6144];
 mov.u32 %r1, %tid.x;
 shr.u32 %r2, %r1, 5;
 setp.eq.u32 %p1, %r2, 0;
 @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
 ld.param.u64 %rd7, [img];
 mul.wide.u32 %rd8, %r1, 48;
 add.u64 %rd7, %rd7, %rd8;
 mov.u32 %r5, tiles;
 mad.lo.u32 %r11, %r1, 48, %r5;
 ld.global.v4.u32 {%r12, %r13, %r14, %r15}, [%rd7];
 st.shared.v4.u32 [%r11], {%r12, %r13, %r14, %r15};
 ld.global.v4.u32 {%r12, %r13, %r14, %r15}, [%rd7+16];
 st.shared.v4.u32 [%r11+16], {%r12, %r13, %r14, %r15};
 ld.global.v4.u32 {%r12, %r13, %r14, %r15}, [%rd7+32];
 st.shared.v4.u32 [%r11+32], {%r12, %r13, %r14, %r15};
 bar.sync 0;
 ld.shared.u32 %r3, [slot];
 ld.param.u64 %rd4, [adesc];
 ld.param.u64 %rd5, [bdesc];
 ld.param.u32 %r4, [idesc];
 shr.u32 %r5, %r5, 4;
 cvt.u64.u32 %rd6, %r5;
 add.u64 %rd4, %rd4, %rd6;
 add.u64 %rd5, %rd5, %rd6;
 setp.eq.u32 %p2, %r1, 0;
 setp.ne.u32 %p1, %r1, 999;
 tcgen05.fence::after_thread_sync;
 @%p2 tcgen05.mma.cta_group::1.kind::f16 [%r3], %rd4, %rd5, %r4, %p1;
 bar.sync 0;
 tcgen05.fence::after_thread_sync;
 shl.b32 %r6, %r2, 21;
 add.u32 %r6, %r6, %r3;
 tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r7, %r8, %r9, %r10}, [%r6];
 tcgen05.wait::ld.sync.aligned;
 ld.param.u64 %rd1, [out];
 mul.wide.u32 %rd2, %r1, 16;
 add.u64 %rd3, %rd1, %rd2;
 st.global.v4.u32 [%rd3], {%r7, %r8, %r9, %r10};
 bar.sync 0;
 setp.eq.u32 %p1, %r2, 0;
 @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
 ret;
}
"""


def test_ptx_kernel_issues_tcgen05_mma():
    """One thread issues tcgen05.mma from shared-memory descriptors; every warp reads its quarter of D.
    ptxas 13.0 accepts the kernel for sm_100a.  D = A x B exactly (small integers)."""
    import warpsim.ptx as wp

    rng = np.random.default_rng(11)
    A = rng.integers(-3, 4, (128, 16)).astype(np.float16)
    B = rng.integers(-3, 4, (16, 32)).astype(np.float16)
    img, da, db = _smem_operands(A.view(np.uint16).astype(np.uint64), B.T.copy().view(np.uint16).astype(np.uint64), 16)
    img = np.concatenate([img, np.zeros(6144 - img.size, np.uint8)])
    out = np.zeros((128, 4), np.uint32)
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 128, 32)
    wp.load(_MMA_KERNEL).launch("k", 1, 128, [out, img, np.uint64(da), np.uint64(db), np.uint32(idesc)], arch="sm_100a")
    assert (out.view(np.float32) == (A.astype(np.float64) @ B.astype(np.float64))[:, :4]).all()


def test_the_test_kernels_assemble_for_sm100a(tmp_path):
    import shutil
    import subprocess

    if shutil.which("ptxas") is None:
        pytest.skip("no ptxas on PATH")
    for name, text in (("st_ld", _KERNEL.replace("LANE_SHIFT", "21")), ("mma", _MMA_KERNEL)):
        p = tmp_path / f"{name}.ptx"
        p.write_text(text)
        r = subprocess.run(["ptxas", "-arch=sm_100a", str(p), "-o", str(tmp_path / f"{name}.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_hw_cli_writes_the_tcgen05_source(tmp_path):
    from warpsim.hw.capture import main

    out = tmp_path / "k.cu"
    assert main(["source", "--family", "tcgen05", "--arch", "sm_100a", "--out", str(out)]) == 0
    text = out.read_text()
    assert "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%0], %1, %2, %3, [%5], [%6], p;" in text
