"""warpsim.ptx modules: launching, the instruction plumbing, and errors that point at the line."""

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx import PTXError, Warp

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def kernel(body, params=".param .u64 out"):
    return (HEAD + f".visible .entry k({params})\n{{\n.reg .b32 %r<32>;\n.reg .b64 %rd<32>;\n.reg .pred %p<8>;\n"
            ".reg .b16 %rs<8>;\n.reg .f32 %f<8>;\n.shared .align 16 .b8 sm[256];\n" + body + "\nret;\n}\n")


STORE = "ld.param.u64 %rd1, [out];\nmov.u32 %r30, %tid.x;\nmul.wide.u32 %rd2, %r30, 4;\nadd.s64 %rd3, %rd1, %rd2;\n"


def _run(body, nthreads=32, grid=1, dtype=np.uint32):
    out = np.zeros(nthreads * 1, dtype)
    wp.load(kernel(STORE + body)).launch("k", grid, nthreads, [out])
    return out


def test_integer_alu_and_special_registers():
    out = _run("mov.u32 %r1, %laneid;\nmov.u32 %r2, %warpid;\nmad.lo.s32 %r3, %r2, 100, %r1;\n"
               "shl.b32 %r4, %r3, 4;\nshr.u32 %r5, %r4, 2;\nxor.b32 %r6, %r5, 1;\nst.global.u32 [%rd3], %r6;", 64)
    t = np.arange(64)
    assert np.array_equal(out, (((t // 32) * 100 + t % 32) * 4) ^ 1)


def test_mul_hi_wide_bfe_bfi_prmt_min_selp():
    out = _run("mov.u32 %r1, %tid.x;\nmul.hi.u32 %r2, %r1, 0xF0000000;\nmul.wide.s32 %rd5, %r1, -3;\n"
               "cvt.u32.u64 %r3, %rd5;\nbfe.u32 %r4, 0xABCD1234, 8, 8;\nbfi.b32 %r5, 0xF, 0, 4, 4;\n"
               "prmt.b32 %r6, 0x33221100, 0x77665544, 0x4321;\nmin.s32 %r7, %r1, 5;\n"
               "setp.lt.u32 %p1, %r1, 3;\nselp.b32 %r8, %r2, %r3, %p1;\nadd.s32 %r9, %r8, %r4;\n"
               "add.s32 %r9, %r9, %r5;\nadd.s32 %r9, %r9, %r7;\nxor.b32 %r9, %r9, %r6;\nst.global.u32 [%rd3], %r9;")
    t = np.arange(32, dtype=np.uint64)
    hi = (t * 0xF0000000) >> 32
    lo = (t.astype(np.int64) * -3).astype(np.uint64) & 0xFFFFFFFF
    sel = np.where(t < 3, hi, lo)
    want = ((sel + 0x12 + 0xF0 + np.minimum(t, 5)) & 0xFFFFFFFF) ^ 0x44332211
    assert np.array_equal(out, want.astype(np.uint32))


def test_uniform_loop_shared_memory_and_barrier():
    # each warp writes its lane ids to shared memory, the CTA syncs, lanes read a neighbour warp's slot,
    # and a uniform loop adds 1 five times
    body = ("mov.u32 %r1, %tid.x;\nshl.b32 %r2, %r1, 2;\nmov.u32 %r3, sm;\nadd.s32 %r4, %r3, %r2;\n"
            "st.shared.u32 [%r4], %r1;\nbar.sync 0;\nxor.b32 %r5, %r2, 128;\nadd.s32 %r6, %r3, %r5;\n"
            "ld.shared.u32 %r7, [%r6];\nmov.u32 %r8, 0;\nL1:\nadd.s32 %r7, %r7, 1;\nadd.s32 %r8, %r8, 1;\n"
            "setp.lt.u32 %p1, %r8, 5;\n@%p1 bra L1;\nst.global.u32 [%rd3], %r7;")
    out = _run(body, 64)
    assert np.array_equal(out, (np.arange(64) ^ 32) + 5)


def test_warp_uniform_branch_differs_between_warps():
    body = ("mov.u32 %r1, %warpid;\nsetp.eq.u32 %p1, %r1, 0;\nmov.u32 %r2, 7;\n@%p1 bra SKIP;\nmov.u32 %r2, 9;\n"
            "SKIP:\nst.global.u32 [%rd3], %r2;")
    out = _run(body, 64)
    assert (out[:32] == 7).all() and (out[32:] == 9).all()


def test_grid_and_ctaid_and_params():
    src = HEAD + """.visible .entry k(.param .u64 out, .param .u32 n, .param .f32 x)
{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<4>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [n]; ld.param.f32 %f1, [x];
mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ctaid.y; mov.u32 %r4, %nctaid.x;
mad.lo.s32 %r5, %r3, %r4, %r2; mad.lo.s32 %r6, %r5, 32, %r1;
mov.u32 %r7, %tid.x; add.s32 %r6, %r6, %r7;
cvt.rn.f32.u32 %f2, %r6; add.f32 %f3, %f2, %f1;
mov.u32 %r7, %tid.x; mad.lo.s32 %r5, %r5, 32, %r7;
mul.wide.u32 %rd2, %r5, 4; add.s64 %rd3, %rd1, %rd2; st.global.f32 [%rd3], %f3;
ret;
}"""
    out = np.zeros(32 * 6, np.float32)
    wp.load(src).launch("k", (3, 2), 32, [out, 1000, 0.5])
    assert np.array_equal(out, np.arange(32 * 6) + 1000.5)


def test_cvt_pack_and_mov_vectors():
    out = _run("mov.f32 %f1, 0f3F800000;\nmov.f32 %f2, 0fC0000000;\ncvt.rn.f16x2.f32 %r1, %f1, %f2;\n"
               "mov.b32 {%rs1, %rs2}, %r1;\nmov.b32 %r2, {%rs2, %rs1};\nst.global.u32 [%rd3], %r2;")
    # cvt puts the first source in the upper half: r1 = {hi: 1.0, lo: -2.0}; the mov swaps the halves
    assert (out == 0xC0003C00).all()


def test_module_entries_and_params():
    mod = wp.load(kernel("", ".param .u64 out, .param .u32 n"))
    assert mod.entries == ["k"] and mod.params("k") == [("out", "u64"), ("n", "u32")]
    assert mod.target == "sm_90" and "k" in repr(mod)


# ---- errors ---------------------------------------------------------------------------------------

def _err(body, *, nthreads=32, args=None, params=".param .u64 out"):
    src = kernel(body, params)
    out = np.zeros(64, np.uint32)
    with pytest.raises(PTXError) as ei:
        wp.load(src).launch("k", 1, nthreads, [out] if args is None else args)
    e = ei.value
    assert e.line is not None and src.splitlines()[e.line - 1].strip().startswith(e.statement.split()[0])
    return e


def test_error_shared_address_out_of_range():
    e = _err("mov.u32 %r1, sm;\nadd.s32 %r2, %r1, 256;\nld.shared.u32 %r3, [%r2];")
    assert "outside the CTA's 256 bytes of shared memory" in str(e) and "ld.shared.u32" in e.statement


def test_error_unaligned_ldmatrix_row():
    e = _err("mov.u32 %r1, sm;\nmov.u32 %r2, %laneid;\nshl.b32 %r3, %r2, 3;\nadd.s32 %r4, %r1, %r3;\n"
             "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r5}, [%r4];")
    assert "ldmatrix row address" in str(e) and "16-byte aligned" in str(e) and "lane 1" in str(e)


def test_error_register_width():
    e = _err("add.s32 %r1, %rd1, 1;")
    assert "32-bit register but %rd1 is 64-bit" in str(e) and e.token == "%rd1"
    e = _err("mov.u32 %r1, 0;\nldmatrix.sync.aligned.m8n8.x1.shared.b16 {%rd5}, [%r1];")
    assert "%rd5 is 64-bit" in str(e)


def test_error_collective_in_divergent_branch():
    # divergent branches run (tests/test_ptx_simt.py); an .aligned collective inside one is refused
    e = _err("mov.u32 %r1, %laneid;\nsetp.lt.u32 %p1, %r1, 4;\n@%p1 bra DONE;\n"
             "shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\nDONE:")
    assert "lanes 4, 5, 6" in str(e) and "lanes 0, 1, 2, 3 of the mask do not" in str(e) and "shfl.sync" in e.statement


def test_error_unsupported_instruction_names_the_line():
    e = _err("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tx, {%f1, %f2}];")
    assert "unsupported instruction 'tex.2d.v4.f32.f32'" in str(e)


def test_error_global_address_outside_arguments():
    e = _err("mov.u64 %rd5, 12;\nld.global.u32 %r1, [%rd5];")
    assert "outside every kernel-argument array" in str(e)


def test_direct_accesses_fall_back_exactly():
    """The memory fast path (one array, own shared window, aligned) hands every other case to the
    general path: its errors name the lane, guarded-off lanes may hold any address, and lanes
    spread over two arrays each reach their own."""
    e = _err(STORE + "add.s64 %rd4, %rd3, 2;\nld.global.u32 %r1, [%rd4];")
    assert "not aligned to 4 bytes" in str(e) and "lane 0" in str(e)
    e = _err("mov.u32 %r1, %laneid;\nsetp.eq.u32 %p1, %r1, 5;\nselp.b32 %r2, 256, 0, %p1;\nmov.u32 %r3, sm;\n"
             "add.s32 %r4, %r3, %r2;\nst.shared.u32 [%r4], %r1;")
    assert "(lane 5, 4 bytes) is outside the CTA's 256 bytes" in str(e)
    body = ("mov.u32 %r1, %laneid;\nsetp.lt.u32 %p1, %r1, 16;\nmov.u64 %rd5, 12;\nselp.b64 %rd6, %rd3, %rd5, %p1;\n"
            "@%p1 st.global.u32 [%rd6], %r1;\n@!%p1 ld.global.u32 %r2, [%rd6];")
    e = _err(STORE + body)
    assert "global address 0xc (lane 16" in str(e)
    a, b = np.zeros(32, np.uint32), np.arange(100, 132, dtype=np.uint32)
    src = kernel(STORE + "ld.param.u64 %rd7, [other];\nmov.u32 %r1, %laneid;\nsetp.lt.u32 %p1, %r1, 16;\n"
                 "add.s64 %rd8, %rd7, %rd2;\nselp.b64 %rd9, %rd3, %rd8, %p1;\nld.global.u32 %r2, [%rd9];\n"
                 "add.s32 %r3, %r2, 1;\nst.global.u32 [%rd9], %r3;", ".param .u64 out, .param .u64 other")
    wp.load(src).launch("k", 1, 32, [a, b])
    assert np.array_equal(a[:16], np.ones(16)) and np.array_equal(a[16:], np.zeros(16))
    assert np.array_equal(b[:16], np.arange(100, 116)) and np.array_equal(b[16:], np.arange(117, 133))


def test_kernel_argument_mismatches():
    mod = wp.load(kernel("", ".param .u64 out, .param .u32 n"))
    out = np.zeros(4, np.uint32)
    with pytest.raises(ValueError, match="takes 2 argument"):
        mod.launch("k", 1, 32, [out])
    with pytest.raises(TypeError, match="scalar, but got a numpy array"):
        mod.launch("k", 1, 32, [out, out])
    with pytest.raises(ValueError, match="does not fit .u32"):
        mod.launch("k", 1, 32, [out, 1 << 32])
    with pytest.raises(TypeError, match="integer .u32, got a float"):
        mod.launch("k", 1, 32, [out, 1.5])
    with pytest.raises(ValueError, match="multiple of 32"):
        mod.launch("k", 1, 48, [out, 1])
    with pytest.raises(ValueError, match="no entry 'q'"):
        mod.launch("q", 1, 32, [out, 1])
    with pytest.raises(ValueError, match="grid must be"):
        mod.launch("k", (1, 0), 32, [out, 1])


def test_bad_branch_target_is_reported_at_load():
    with pytest.raises(PTXError, match="branch target 'NOWHERE'"):
        wp.load(kernel("bra NOWHERE;")).launch("k", 1, 32, [np.zeros(1, np.uint32)])


def test_warp_snippets_run_the_table_too():
    w = Warp()
    w.run("mov.u32 %r1, %laneid; add.u32 %r2, %r1, 10; setp.gt.u32 %p1, %r1, 15; @%p1 mov.u32 %r2, 0;")
    assert np.array_equal(w.get("%r2")[0], np.where(np.arange(32) > 15, 0, np.arange(32) + 10))
    with pytest.raises(PTXError, match="needs a kernel"):
        Warp().run("bra L;")
    with pytest.raises(PTXError, match="registers only"):
        Warp(undefined="zero").run("ld.global.u32 %r1, [%rd1];")


def test_cli_runs_a_kernel(tmp_path, capsys):
    from warpsim.cli.main import main

    src = tmp_path / "k.ptx"
    src.write_text(kernel(STORE + "mov.u32 %r1, %tid.x;\nld.param.u32 %r2, [n];\nadd.s32 %r3, %r1, %r2;\n"
                          "st.global.u32 [%rd3], %r3;", ".param .u64 out, .param .u32 n"))
    rc = main(["ptx", str(src), "--grid", "1", "--block", "64", "--arg", "zeros:64:uint32", "--arg", "7",
               "--save", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0 and "out (uint32[64]): 7 8 9" in out
    assert np.array_equal(np.load(tmp_path / "o" / "out.npy"), np.arange(64) + 7)
    assert main(["ptx", str(src), "--grid", "1", "--block", "64", "--arg", "zeros:64"]) == 2    # missing n
    assert "takes 2 argument" in capsys.readouterr().err
    assert main(["ptx", str(src), "--arg", "7"]) == 2                                            # no grid


def test_wmma_layout_drawn_like_the_others(tmp_path, capsys):
    from warpsim.cli.main import main

    assert main(["layout", "wmma.m16n16k16.f16", "a"]) == 0
    out = capsys.readouterr().out
    assert "held twice" in out and "T0:a0*" in out              # f16 A fragments hold every element twice
    assert main(["layout", "wmma.load.c.sync.aligned.row.m32n8k16.global.f32", "c", "--svg", str(tmp_path / "c.svg")]) == 0
    assert (tmp_path / "c.svg").read_text().startswith("<svg")
    assert main(["layout", "wmma.m16n16k8.s8", "b"]) == 2        # no such form


def test_shfl_vote_ballot():
    w = Warp()
    w.run("""
        mov.u32 %r1, %laneid;
        shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, -1;
        shfl.sync.down.b32 %r3|%p1, %r1, 4, 0x1f, -1;
        shfl.sync.up.b32 %r4, %r1, 2, 0, -1;
        shfl.sync.idx.b32 %r5, %r1, 3, 0x1f, -1;
        setp.lt.u32 %p2, %r1, 3;
        vote.sync.ballot.b32 %r6, %p2, -1;
        vote.sync.any.pred %p3, %p2, -1;
        vote.sync.all.pred %p4, %p2, -1;
    """)
    lane = np.arange(32)
    assert np.array_equal(w.get("%r2")[0], lane ^ 1)
    assert np.array_equal(w.get("%r3")[0], np.where(lane + 4 <= 31, lane + 4, lane))
    assert np.array_equal(w.get("%p1")[0], lane + 4 <= 31)
    assert np.array_equal(w.get("%r4")[0], np.where(lane >= 2, lane - 2, lane))
    assert (w.get("%r5")[0] == 3).all() and (w.get("%r6")[0] == 7).all()
    assert w.get("%p3")[0].all() and not w.get("%p4")[0].any()


def test_guarded_memory_access_skips_lanes_and_warps_that_are_off():
    # warp 1's address is out of range, but its guard is false: nothing happens for it
    body = ("mov.u32 %r1, %warpid;\nsetp.eq.u32 %p1, %r1, 0;\nmov.u32 %r2, sm;\nmul.lo.u32 %r3, %r1, 4096;\n"
            "add.s32 %r4, %r2, %r3;\nmov.u32 %r5, 5;\n@%p1 st.shared.u32 [%r4], %r1;\n@%p1 ld.shared.u32 %r5, [%r4];\n"
            "st.global.u32 [%rd3], %r5;")
    out = _run(body, 64)
    assert (out[:32] == 0).all() and (out[32:] == 5).all()


def test_error_unaligned_row_names_the_lane_of_a_later_matrix():
    e = _err("mov.u32 %r1, sm;\nmov.u32 %r2, %laneid;\nsetp.eq.u32 %p1, %r2, 13;\nselp.u32 %r3, 8, 0, %p1;\n"
             "add.s32 %r4, %r1, %r3;\nldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r5, %r6}, [%r4];")
    assert "lane 13" in str(e) and "matrix 1" in str(e)


def test_cp_async_copies_and_zero_fills():
    src = HEAD + """.visible .entry k(.param .u64 src, .param .u64 out)
{
.reg .b32 %r<12>; .reg .b64 %rd<12>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x; mul.wide.u32 %rd3, %r1, 16; add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
mov.u32 %r2, sm; shl.b32 %r3, %r1, 4; add.s32 %r4, %r2, %r3;
and.b32 %r5, %r1, 15;                       // src-size: lane % 16 bytes, the rest zero-filled
cp.async.cg.shared.global [%r4], [%rd4], 16, %r5;
cp.async.commit_group;
cp.async.wait_group 0;
bar.sync 0;
ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%r4];
st.global.v4.u32 [%rd5], {%r6, %r7, %r8, %r9};
ret;
}""".replace("{\n.reg", "{\n.shared .align 16 .b8 sm[512];\n.reg")
    data = np.arange(512, dtype=np.uint8) | 0x80
    out = np.zeros(512, np.uint8)
    wp.load(src).launch("k", 1, 32, [data, out])
    keep = np.arange(16)[None, :] < (np.arange(32) % 16)[:, None]
    assert np.array_equal(out.reshape(32, 16), np.where(keep, data.reshape(32, 16), 0))


def test_byte_and_vector_loads_and_stores():
    body = ("mov.u32 %r1, %tid.x;\ncvt.u64.u32 %rd5, %r1;\nld.param.u64 %rd6, [out];\nadd.s64 %rd7, %rd6, %rd5;\n"
            "ld.global.s8 %r2, [%rd7];\nld.global.u8 %rs1, [%rd7];\ncvt.u32.u16 %r3, %rs1;\n"
            "add.s32 %r4, %r2, %r3;\nbar.sync 0;\nst.global.u32 [%rd3+128], %r4;\n"
            "mov.u32 %r5, sm;\nshl.b32 %r6, %r1, 3;\nadd.s32 %r7, %r5, %r6;\n"
            "st.shared.v2.u16 [%r7], {%rs1, %rs1};\nld.shared.v2.u16 {%rs2, %rs3}, [%r7];\n"
            "st.global.u8 [%rd7+64], %rs3;")
    src = kernel(STORE + body)
    out = np.zeros(64, np.uint32)
    b = out.view(np.uint8)
    b[:32] = np.arange(32) * 9          # bytes 0..279 mod 256: some have the top bit set
    wp.load(src).launch("k", 1, 32, [out])
    v = (np.arange(32) * 9) % 256
    assert np.array_equal(out[32:64], (np.where(v >= 128, v - 256, v) + v).astype(np.uint32))
    assert np.array_equal(b[64:96], v)
