"""Hopper's kernel-level machinery on the compiled engine (warpsim.ptx.native, rt_sync, rt_tma): clusters and
distributed shared memory, mbarriers, named barriers, setmaxnreg's register budget, elect.sync and TMA boxes
give the interpreter's words and the worked examples' (the small kernels of test_hopper_kernels), and misuse
stops the kernel with the rule it broke.  The CUTLASS 3 GEMMs the H100 ran replay word for word compiled
(their first compile takes minutes: WARPSIM_NATIVE_ALL=1)."""

import os

import numpy as np
import pytest

import test_hopper_kernels as H
import warpsim
from warpsim.isa.tensormap import encode_tiled
from warpsim.ptx import GlobalMemory, load


def _launch_both(text, make, **kw):
    """The outputs of both engines (fresh arguments each): {engine: [arrays]}."""
    out = {}
    for engine in ("interpret", "compiled"):
        args, gm = make()
        mod = load(text)
        mod.launch("k", args=args, engine=engine, workers=1, memory=gm, **kw)
        assert mod.last_engine["engine"] == engine
        out[engine] = [a.copy() for a in args if isinstance(a, np.ndarray)]
    return out


@pytest.mark.parametrize("spin", [True, False], ids=["test_wait spin, then try_wait", "try_wait"])
def test_mbarrier_waits_let_the_producer_run(spin):
    """The consumer warp parks on the mbarrier until the producer warp's arrive completes the phase: spinning on
    test_wait (false written, the warp parked; it goes on from the next statement) or blocked in try_wait."""
    body = H.PRODUCER_CONSUMER if spin else H.PRODUCER_CONSUMER.replace("""SPIN:
    mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r3], 0;
    @!%p3 bra SPIN;
""", "")
    assert ("mbarrier.test_wait" in body) == spin
    got = _launch_both(H._run(body, 1), lambda: ([np.zeros(32, np.uint32)], None), grid=1, block=64)
    for words in got.values():
        assert (words[0] == 1234).all()


def test_a_test_wait_spin_that_never_completes_is_a_deadlock():
    text = H._run(H.PRODUCER_CONSUMER.replace("mbarrier.arrive.shared::cta.b64 %rd5, [%r3];", ""), 1)
    with pytest.raises(warpsim.PTXError, match="deadlock"):
        load(text).launch("k", grid=1, block=64, args=[np.zeros(32, np.uint32)], engine="compiled", workers=1)


def test_cluster_mapa_distributed_shared_memory_and_cluster_barrier():
    got = _launch_both(H._run(H.CLUSTER, 1), lambda: ([np.zeros((4, 32), np.uint32)], None), grid=4, block=32,
                       cluster=2)
    for (out,) in got.values():
        for cta in range(4):
            rank, cid = cta % 2, cta // 2
            assert (out[cta] == ((100 + (rank + 1) % 2) << 16 | cid << 8 | rank << 4 | rank)).all()


def test_tma_box_past_the_bounds_lands_zeros():
    """The 16x8 float32 box at (-4, 6) of a 20x10 tensor, its descriptor in global memory."""
    T = np.arange(200, dtype=np.float32).reshape(10, 20)

    def make():
        gm = GlobalMemory()
        addr = gm.map(T.copy())
        tmap = np.zeros(128, np.uint8)
        gm.map(tmap, address=0x10000000)
        tmap[:] = encode_tiled("float32", 2, addr, (20, 10), (80,), (16, 8), (1, 1))
        return [0x10000000, np.zeros(128, np.float32), np.array([-4, 6], np.int32).tobytes()], gm

    got = _launch_both(H._tma_kernel(), make, grid=1, block=32)
    want = np.zeros((8, 16), np.float32)
    want[:4, 4:] = T[6:10, 0:12]
    for (out,) in got.values():
        assert (out.reshape(8, 16) == want).all()


WARPGROUPS = """
    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 7;                 // warpgroup
    mov.u32 %r3, buf;
    // warpgroup 0 asks for more registers first: it waits until 1 and 2 have given theirs up
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra INC;
    setmaxnreg.dec.sync.aligned.u32 40;
    bra REGS;
INC:
    setmaxnreg.inc.sync.aligned.u32 232;
REGS:
    setp.eq.u32 %p2, %r2, 2;
    @%p2 bra PRODUCE;
    setp.eq.u32 %p3, %r2, 1;
    @%p3 bra ELECT;
    // warpgroup 0: named barrier 1 with warpgroup 2 (256 threads), then read what 2 wrote
    mov.u32 %r20, 1;
    mov.u32 %r21, 256;
    bar.sync %r20, %r21;
    shl.b32 %r4, %r1, 2;
    add.u32 %r5, %r3, %r4;
    ld.shared.u32 %r6, [%r5+1024];
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    st.global.u32 [%rd4], %r6;
    bra END;
PRODUCE:
    sub.u32 %r7, %r1, 256;
    mul.lo.u32 %r8, %r1, 3;
    shl.b32 %r9, %r7, 2;
    add.u32 %r10, %r3, %r9;
    st.shared.u32 [%r10+1024], %r8;
    bar.arrive 1, 256;
    bra END;
ELECT:
    elect.sync %r11|%p4, 0xFFFFFFF0;
    @!%p4 bra END;
    shr.u32 %r12, %r1, 5;
    mul.wide.u32 %rd5, %r12, 4;
    add.s64 %rd6, %rd2, %rd5;
    and.b32 %r13, %r1, 31;
    shl.b32 %r14, %r11, 8;
    or.b32 %r15, %r14, %r13;
    st.global.u32 [%rd6], %r15;
END:
"""


def test_setmaxnreg_named_barriers_and_elect():
    """Warpgroup 0's setmaxnreg.inc parks until the others' .dec leave room (168 -> 232 needs 40 elsewhere);
    bar.sync 1, 256 waits for warpgroup 2's bar.arrive; elect.sync leads with the lowest member lane (4)."""
    got = _launch_both(H._run(WARPGROUPS, 2), lambda: ([np.zeros(128, np.uint32), np.zeros(12, np.uint32)], None),
                       grid=1, block=384)
    for out, lead in got.values():
        assert (out == (np.arange(128) + 256) * 3).all()
        assert (lead[4:8] == (4 << 8 | 4)).all() and (lead[:4] == 0).all() and (lead[8:] == 0).all()


@pytest.mark.parametrize("body, why", [
    ("mov.u32 %r3, buf;\n mbarrier.init.shared::cta.b64 [%r3+4], 1;", "not 8-byte aligned"),
    ("setmaxnreg.dec.sync.aligned.u32 40;\n setmaxnreg.dec.sync.aligned.u32 64;", "raises the warpgroup's count"),
    ("mov.u32 %r3, buf;\n mbarrier.arrive.shared::cta.b64 %rd5, [%r3];", "not initialised"),
    ("barrier.cluster.wait.aligned;", "without a preceding barrier.cluster.arrive"),
    ("bar.sync 0, 48;", "non-zero multiple of 32"),
    ("mov.u32 %r3, buf;\n mov.u32 %r1, %tid.x;\n setp.ne.u32 %p1, %r1, 0;\n @%p1 bra INIT;\n"
     " mbarrier.init.shared::cta.b64 [%r3], 1;\nINIT:\n bar.sync 0;\nWAIT:\n"
     " mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r3], 0;\n @!%p4 bra WAIT;", "deadlock"),
    ("brkpt;", "breakpoint"),
])
def test_misuse_stops_the_compiled_kernel_with_the_rule(body, why):
    text = H._run(body, 1)
    with pytest.raises(warpsim.PTXError, match=why) as err:
        load(text).launch("k", 1, 128, [np.zeros(64, np.uint32)], engine="compiled", workers=1)
    if err.value.line is not None:      # the line passed to the runtime as an int64 constant names the statement
        assert text.splitlines()[err.value.line - 1].strip() in body


def test_runtime_calls_take_their_statement_numbers_as_int64():
    """The PTX line of a synchronisation or TMA call and the kernel's register-file sizes reach the runtime as int64
    constants, not literals: numba would build those callees again for every line of every kernel (2 s of
    launch_state, up to 0.8 s a barrier) instead of once."""
    import re

    from warpsim.ptx.native import kernel

    src = kernel._source(load(H._run(WARPGROUPS, 2)).translation("k").ir)
    sync_calls = re.findall(r"\b(?:rt_sync|rt_tma)\.\w+\(status, (\w+)", src)
    assert sync_calls and all(re.fullmatch(r"I\d+", a) for a in sync_calls), sync_calls
    (sizes,) = re.findall(r"rt_launch_state\(BX, BY, BZ, CS, ([^)]*)\)", src)
    assert not any(re.fullmatch(r"-?\d+", a.strip()) for a in sizes.split(",")), sizes


def _cutlass3_cases():
    from warpsim.hw.gemm_cases import CUTLASS3_MORE_CASES

    return [(H.GOLDEN, c) for c in range(4)] + [(H.MORE, c) for c in range(len(CUTLASS3_MORE_CASES))]


@pytest.mark.skipif(os.environ.get("WARPSIM_NATIVE_ALL") != "1",
                    reason="compiling a CUTLASS 3 kernel takes minutes on a 2-core host (the CI suite must stay under "
                           "15 minutes); its forms are the small kernels' above and test_ptx_native's wgmma; "
                           "WARPSIM_NATIVE_ALL=1 runs it")
@pytest.mark.parametrize("path, case", _cutlass3_cases(), ids=lambda x: getattr(x, "stem", str(x)))
def test_cutlass3_gemms_compiled_give_the_h100_words(path, case):
    """KernelTmaWarpSpecializedCooperative / Pingpong with TMA multicast over a 2x1 cluster, fused epilogues."""
    from warpsim.hw.golden import open_golden

    D, want = H._replay(open_golden(path), case, engine="compiled", workers=1)
    assert int((D != want).sum()) == 0, f"{int((D != want).sum())} of {D.size} D words differ from the H100's"


BULK = """
    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    ld.param.u64 %rd11, [p2];
    cvt.u32.u64 %r30, %rd11;
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, buf;
    add.u32 %r4, %r3, 256;
    add.u32 %r5, %r3, 512;
    add.u32 %r6, %r3, 8;
    mov.u32 %r20, %cluster_ctarank;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra INIT_DONE;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    mbarrier.init.shared::cta.b64 [%r3+8], 1;
INIT_DONE:
    fence.mbarrier_init.release.cluster;
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    @%p1 bra WAIT;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r3], 256;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd6, [%r3+8], 256;
    mul.wide.u32 %rd7, %r20, 256;
    add.s64 %rd8, %rd1, %rd7;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd8], %r30, [%r3];
    setp.ne.u32 %p2, %r20, 0;
    @%p2 bra WAIT;
    mov.u16 %rs1, 3;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r5], [%rd1], 256, [%r6], %rs1;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r3], 0;
    @!%p3 bra WAIT;
WAIT2:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r3+8], 0;
    @!%p4 bra WAIT2;
    @%p1 bra DONE;
    mul.wide.u32 %rd9, %r20, 512;
    add.s64 %rd10, %rd2, %rd9;
    cp.async.bulk.global.shared::cta.bulk_group [%rd10], [%r4], 512;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
DONE:
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
"""


def _bulk():
    """The bulk-copy kernel: p0 the source, p1 the destination, p2 the size of each CTA's own copy."""
    return H._run(BULK, 3, regs=".reg .b16 %rs<4>;")


def test_bulk_copies_global_to_shared_multicast_and_back():
    """cp.async.bulk into shared memory (each CTA its own part; rank 0's multicast to both), completed on
    mbarriers, and back to global memory with a bulk group: both engines give the bytes the copies move."""
    src = np.arange(512, dtype=np.uint8)

    def make():
        return [src.copy(), np.zeros(1024, np.uint8), 256], None

    got = _launch_both(_bulk(), make, grid=2, block=64, cluster=2)
    for engine, (_, out, *_) in got.items():
        for r in range(2):
            assert np.array_equal(out[r * 512:r * 512 + 256], src[r * 256:(r + 1) * 256]), engine
            assert np.array_equal(out[r * 512 + 256:(r + 1) * 512], src[:256]), engine


def test_a_bulk_copy_of_a_size_not_a_multiple_of_16_stops_both_engines():
    for engine in ("interpret", "compiled"):
        with pytest.raises(warpsim.PTXError, match="multiple of 16"):
            load(_bulk()).launch("k", grid=2, block=64, cluster=2, engine=engine, workers=1,
                                 args=[np.arange(512, dtype=np.uint8), np.zeros(1024, np.uint8), 250])
