"""SIMT control flow of kernel launches, on small hand-written PTX whose results follow from the
PTX ISA by reasoning: divergence and reconvergence at the immediate post-dominator, loops with
lane-dependent trip counts, lanes that leave, CTA barriers with thread counts, warp-level .sync
collectives in divergent code, calls and recursion, atomics' lane order, the step limit, global
memory mapping and cp.async zero fill."""

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx import GlobalMemory, PTXError

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = (".reg .b32 %r<40>;\n.reg .b64 %rd<16>;\n.reg .pred %p<8>;\n"
        ".shared .align 16 .b8 sm[1024];\n")
# out[tid * 4 + k] for k = 0..3: four words per thread
PRO = ("ld.param.u64 %rd1, [out];\nmov.u32 %r0, %tid.x;\nmul.wide.u32 %rd2, %r0, 16;\nadd.s64 %rd3, %rd1, %rd2;\n"
       "mov.u32 %r1, %laneid;\n")


def kernel(body, funcs=""):
    return HEAD + funcs + ".visible .entry k(.param .u64 out)\n{\n" + REGS + PRO + body + "\nret;\n}\n"


def run(body, threads=32, funcs="", fill=0xDEAD, **kw):
    out = np.full((threads, 4), fill, np.uint32)
    wp.load(kernel(body, funcs)).launch("k", 1, threads, [out], **kw)
    return out


def error(body, threads=32, funcs="", **kw):
    src = kernel(body, funcs)
    with pytest.raises(PTXError) as ei:
        wp.load(src).launch("k", 1, threads, [np.zeros((threads, 4), np.uint32)], **kw)
    e = ei.value
    assert e.line is not None and src.splitlines()[e.line - 1].strip().startswith(e.statement.split()[0])
    return e


LANE = np.arange(32)


def _mask(lanes):
    return sum(1 << int(x) for x in lanes)


def test_divergent_if_else_reconverges():
    out = run("""
        and.b32 %r2, %r1, 1;
        setp.eq.u32 %p1, %r2, 0;
        mov.u32 %r5, 0;
        @%p1 bra EVEN;
        add.u32 %r5, %r5, 100;
        activemask.b32 %r6;
        bra.uni JOIN;
    EVEN:
        add.u32 %r5, %r5, 200;
        activemask.b32 %r6;
    JOIN:
        activemask.b32 %r7;
        st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r1};""")
    even = LANE % 2 == 0
    assert (out[:, 0] == np.where(even, 200, 100)).all()
    assert (out[:, 1] == np.where(even, _mask(LANE[even]), _mask(LANE[~even]))).all()
    assert (out[:, 2] == 0xFFFFFFFF).all()           # the paths met again at JOIN


def test_nested_divergence_reconverges_inner_then_outer():
    out = run("""
        mov.u32 %r5, 0;
        setp.lt.u32 %p1, %r1, 16;
        @!%p1 bra HIGH;
        and.b32 %r2, %r1, 3;
        setp.eq.u32 %p2, %r2, 0;
        @!%p2 bra INNER_JOIN;
        activemask.b32 %r5;            // lanes 0, 4, 8, 12
    INNER_JOIN:
        activemask.b32 %r6;            // lanes 0..15 again
        bra.uni OUTER_JOIN;
    HIGH:
        activemask.b32 %r6;            // lanes 16..31
    OUTER_JOIN:
        activemask.b32 %r7;
        st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r1};""")
    low = LANE < 16
    assert (out[:, 0] == np.where(low & (LANE % 4 == 0), 0x1111, 0)).all()
    assert (out[:, 1] == np.where(low, 0x0000FFFF, 0xFFFF0000)).all()
    assert (out[:, 2] == 0xFFFFFFFF).all()


def test_loop_with_lane_dependent_trip_count():
    # lane l runs the body l % 5 + 1 times: sums 1..n, counts iterations, ORs the active masks it saw
    out = run("""
        rem.u32 %r2, %r1, 5;
        add.u32 %r2, %r2, 1;
        mov.u32 %r3, 0;
        mov.u32 %r4, 0;
        mov.u32 %r5, 0;
    LOOP:
        add.u32 %r3, %r3, 1;
        add.u32 %r4, %r4, %r3;
        activemask.b32 %r6;
        setp.eq.u32 %p1, %r3, 5;           // on the 5th iteration only lanes with n = 5 are left
        selp.u32 %r5, %r6, %r5, %p1;
        setp.lt.u32 %p2, %r3, %r2;
        @%p2 bra LOOP;
        activemask.b32 %r7;
        st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r7};""")
    n = LANE % 5 + 1
    assert (out[:, 0] == n).all() and (out[:, 1] == n * (n + 1) // 2).all()
    assert (out[:, 2] == np.where(n == 5, _mask(LANE[n == 5]), 0)).all()
    assert (out[:, 3] == 0xFFFFFFFF).all()


def test_early_ret_and_exit_of_some_lanes():
    # lanes 0..7 return from the entry (they leave), lanes 8..11 exit; the rest meet at the barrier
    # with warp 1 and read what warp 1 wrote to shared memory after it
    out = run("""
        mov.u32 %r2, sm;
        shl.b32 %r3, %r0, 2;
        add.u32 %r4, %r2, %r3;
        st.shared.u32 [%r4], %r0;
        setp.lt.u32 %p1, %r0, 8;
        @%p1 ret;
        setp.lt.u32 %p2, %r0, 12;
        @%p2 exit;
        bar.sync 0;
        xor.b32 %r5, %r3, 128;             // the word of thread tid ^ 32
        add.u32 %r6, %r2, %r5;
        ld.shared.u32 %r7, [%r6];
        activemask.b32 %r8;
        st.global.v4.u32 [%rd3], {%r7, %r8, %r0, %r1};""", threads=64)
    tid = np.arange(64)
    gone = tid < 12
    assert (out[gone] == 0xDEAD).all()
    assert (out[~gone, 0] == tid[~gone] ^ 32).all()
    assert (out[12:32, 1] == 0xFFFFF000).all() and (out[32:, 1] == 0xFFFFFFFF).all()


def test_named_barriers_with_thread_counts_and_arrive():
    # warps 0, 1 produce and arrive at barrier 1 (128 threads); warps 2, 3 sync there and consume.
    # warps 0 and 1 then swap words through barrier 2 (64 threads) without warps 2 and 3.
    out = run("""
        mov.u32 %r2, sm;
        shl.b32 %r3, %r0, 2;
        add.u32 %r4, %r2, %r3;
        mov.u32 %r9, 0;
        mov.u32 %r10, 0;
        setp.lt.u32 %p1, %r0, 64;
        @!%p1 bra CONSUMER;
        add.u32 %r5, %r0, 1000;
        st.shared.u32 [%r4], %r5;
        bar.arrive 1, 128;
        add.u32 %r6, %r0, 5000;
        st.shared.u32 [%r4+512], %r6;
        bar.sync 2, 64;
        xor.b32 %r7, %r3, 128;
        add.u32 %r8, %r2, %r7;
        ld.shared.u32 %r10, [%r8+512];     // the other producer warp's word
        bra.uni DONE;
    CONSUMER:
        bar.sync 1, 128;
        sub.u32 %r7, %r3, 256;
        add.u32 %r8, %r2, %r7;
        ld.shared.u32 %r9, [%r8];          // producer thread tid - 64
    DONE:
        st.global.v4.u32 [%rd3], {%r9, %r10, %r0, %r1};""", threads=128)
    tid = np.arange(128)
    assert (out[64:, 0] == tid[:64] + 1000).all() and (out[:64, 0] == 0).all()
    assert (out[:64, 1] == (tid[:64] ^ 32) + 5000).all() and (out[64:, 1] == 0).all()


def test_barrier_errors():
    # warps 0 and 1 wait for 96 threads at barrier 1; warp 2 leaves instead: nobody completes it
    e = error("setp.ge.u32 %p1, %r0, 64;\n@%p1 exit;\nbar.sync 1, 96;", threads=96)
    assert "deadlock" in str(e) and "bar.sync 1, 96" in e.statement
    e = error("bar.sync 1, 48;", threads=64)
    assert "multiple of 32" in str(e)
    e = error("bar.sync 1, 128;", threads=64)
    assert "at most the CTA's 64 threads" in str(e)
    e = error("bar.arrive 1;", threads=64)
    assert "needs a thread count" in str(e)
    e = error("setp.lt.u32 %p1, %r1, 4;\n@%p1 bra SKIP;\nbar.sync 0;\nSKIP:")
    assert "lanes 4, 5, 6" in str(e) and "bar.sync" in e.statement


def test_converged_bar_sync_completes_only_as_the_general_barrier_does():
    # every warp converged at one bar.sync: the scheduler's fast path may complete it at once only
    # when every warp names the same barrier; per-warp barrier numbers (warp w at barrier w, each
    # waiting for all 64 threads) deadlock as in the general step
    e = error("mov.u32 %r2, %warpid;\nbar.sync %r2, 64;", threads=64)
    assert "deadlock" in str(e) and "bar.sync" in e.statement
    out = run("mov.u32 %r2, %warpid;\nbar.sync 3, 32;\nst.global.u32 [%rd3], %r2;", threads=64)
    assert np.array_equal(out[:, 0], np.arange(64) // 32)
    e = error("bar.sync 16;", threads=64)
    assert "out of range 0..15" in str(e)


def test_warp_collectives_in_a_divergent_warp_with_matching_membermask():
    out = run("""
        mov.u32 %r5, 0;
        mov.u32 %r6, 0;
        mov.u32 %r7, 0;
        setp.lt.u32 %p1, %r1, 16;
        @!%p1 bra HIGH;
        bar.warp.sync 0xffff;
        shfl.sync.bfly.b32 %r5, %r1, 1, 31, 0xffff;
        setp.lt.u32 %p2, %r1, 3;
        vote.sync.ballot.b32 %r6, %p2, 0xffff;
        vote.sync.all.pred %p3, %p1, 0xffff;       // every member has p1
        selp.u32 %r7, 1, 2, %p3;
        bra.uni JOIN;
    HIGH:
        setp.ne.u32 %p2, %r1, 20;
        vote.sync.ballot.b32 %r6, %p2, 0xffff0000;
    JOIN:
        bar.warp.sync -1;
        st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r1};""")
    low = LANE < 16
    assert (out[low, 0] == LANE[low] ^ 1).all() and (out[~low, 0] == 0).all()
    assert (out[low, 1] == 7).all() and (out[~low, 1] == 0xFFFF0000 & ~(1 << 20)).all()
    assert (out[low, 2] == 1).all()


@pytest.mark.parametrize("op", ["shfl.sync.bfly.b32 %r5, %r1, 1, 31, 0xff;", "vote.sync.ballot.b32 %r5, %p1, 0xff;",
                                "bar.warp.sync 0x1ffff;"])
def test_warp_collective_whose_membermask_is_not_the_executing_lanes_is_refused(op):
    e = error("setp.lt.u32 %p1, %r1, 16;\n@!%p1 bra JOIN;\n" + op + "\nJOIN:")
    assert op.split()[0] in e.statement and "lanes 0, 1, 2" in str(e)
    assert ("lanes 8, 9" in str(e) and "not in the mask" in str(e)) if "0xff;" in op else "lanes 16" in str(e)


def _call_fact(arg, res, indent):
    """PTX calling fact(arg) into res through a call's own .param scope (one line each, indented)."""
    return "\n".join(indent + x for x in ("{", ".param .b32 p0;", ".param .b32 r0;", f"st.param.b32 [p0], {arg};",
                                          "call.uni (r0), fact, (p0);", f"ld.param.b32 {res}, [r0];", "}"))


FACT = """.func (.param .b32 res) fact(.param .b32 n)
{
    .reg .b32 %a<4>;
    .reg .pred %q<2>;
    ld.param.b32 %a1, [n];
    setp.le.u32 %q1, %a1, 1;
    @%q1 bra BASE;
    sub.u32 %a2, %a1, 1;
""" + _call_fact("%a2", "%a3", "    ") + """
    mul.lo.u32 %a3, %a3, %a1;
    st.param.b32 [res], %a3;
    ret;
BASE:
    mov.u32 %a3, 1;
    st.param.b32 [res], %a3;
    ret;
}
"""


def test_recursion_through_call_uniform_and_divergent_depths():
    # column 0: fact(6) in every lane (the whole warp recurses together: each return lands on the
    # statement after the call in the same function); column 1: fact(lane % 7 + 1), divergent depths
    out = run("""
        mov.u32 %r2, 6;
""" + _call_fact("%r2", "%r3", " " * 8) + """
        rem.u32 %r4, %r1, 7;
        add.u32 %r4, %r4, 1;
""" + _call_fact("%r4", "%r5", " " * 8) + """
        activemask.b32 %r6;
        st.global.v4.u32 [%rd3], {%r3, %r5, %r6, %r4};""", threads=64, funcs=FACT)
    from math import factorial

    assert (out[:, 0] == 720).all()
    assert (out[:, 1] == [factorial(t % 32 % 7 + 1) for t in range(64)]).all()
    assert (out[:, 2] == 0xFFFFFFFF).all()


def test_max_steps_names_where_the_program_was():
    e = error("mov.u32 %r2, 0;\nSPIN:\nadd.u32 %r2, %r2, 1;\nbra.uni SPIN;", max_steps=500)
    assert "did not finish within max_steps=500" in str(e) and e.statement.split()[0] in ("add.u32", "bra.uni")


def test_atomics_update_in_lane_then_warp_order():
    # atom.add returns each lane's old value: lanes in increasing order, warp 0 before warp 1;
    # atom.exch hands each lane the value of the lane before it; shared memory the same
    out = run("""
        ld.param.u64 %rd4, [out];
        add.s64 %rd5, %rd4, 1020;             // the last word of out: thread 63's column 3, set to 0 below
        mov.u32 %r2, sm;
        mov.u32 %r9, 0;
        st.shared.u32 [%r2], %r9;
        setp.eq.u32 %p1, %r0, 0;
        @%p1 st.global.u32 [%rd5], %r9;
        bar.sync 0;
        atom.global.add.u32 %r5, [%rd5], 1;
        atom.shared.exch.b32 %r6, [%r2], %r0;
        bar.sync 0;
        ld.shared.u32 %r7, [%r2];
        st.global.v2.u32 [%rd3], {%r5, %r6};
        st.global.u32 [%rd3+8], %r7;""", threads=64)
    tid = np.arange(64)
    assert (out[:, 0] == tid).all()
    assert (out[:, 1] == np.maximum(tid - 1, 0)).all() and (out[:, 2] == 63).all()
    assert out[63, 3] == 64                          # every increment landed


def test_mov_pred_immediates():
    out = run("""
        mov.pred %p1, -1;
        mov.pred %p2, 0;
        mov.pred %p3, 1;
        selp.u32 %r2, 1, 0, %p1;
        selp.u32 %r3, 1, 0, %p2;
        selp.u32 %r4, 1, 0, %p3;
        st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r1};""")
    assert (out[:, :3] == [1, 0, 1]).all()


def test_cp_async_zero_fill_reads_nothing():
    # src-size 0 and the ignore-src predicate fill with zeros without reading the (unmapped) source
    out = run("""
        mov.u32 %r2, sm;
        shl.b32 %r3, %r0, 4;
        add.u32 %r4, %r2, %r3;
        mov.u64 %rd6, 0x10;                   // no array is mapped there
        mov.u32 %r9, 0xFFFFFFFF;
        st.shared.v4.u32 [%r4], {%r9, %r9, %r9, %r9};
        cp.async.cg.shared.global [%r4], [%rd6], 16, 0;
        setp.ne.u32 %p1, %r0, 99;
        cp.async.ca.shared.global [%r4+4], [%rd6], 4, %p1;
        cp.async.commit_group;
        cp.async.wait_all;
        ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r4];
        st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};""")
    assert (out == 0).all()


def test_global_memory_map_errors_and_real_device_addresses():
    gm = GlobalMemory()
    a = np.zeros(16, np.uint32)
    assert gm.map(a, address=0x7F12_0000_0000) == 0x7F12_0000_0000       # as cudaMalloc hands them out
    with pytest.raises(ValueError, match=r"overlaps the array already mapped at \[0x7f1200000000, 0x7f1200000040\)"):
        gm.map(np.zeros(4, np.uint32), address=0x7F12_0000_0030)
    with pytest.raises(ValueError, match="not aligned to the array's 8-byte elements"):
        gm.map(np.zeros(4, np.uint64), address=0x7F13_0000_0004)
    with pytest.raises(ValueError, match="outside global memory"):
        gm.map(np.zeros(4, np.uint32), address=0x8000_0000_0000)
    with pytest.raises(ValueError, match="C-contiguous"):
        gm.map(np.zeros((4, 4), np.uint32)[:, ::2])
    b = np.arange(4, dtype=np.uint32)
    before = b.copy()
    gm.map(b, address=0x7F12_0000_0040)                                    # adjacent: fine, not modified
    assert (b == before).all() and gm.read(0x7F12_0000_0044, 4) == b[1].tobytes()
