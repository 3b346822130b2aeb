"""Hopper kernels as written: clusters, mbarriers, TMA and independent warps in a launch.

The CUTLASS 3 replay compares with the words an H100 wrote (tests/golden/cutlass3_sm90a.npz);
the tensormap test decodes descriptors the CUDA driver encoded on that H100; the small kernels
check worked examples and each failure mode.
"""

from pathlib import Path

import numpy as np
import pytest

import warpsim
from warpsim.hw.gemm_cases import CUTLASS3_MORE_CASES
from warpsim.hw.golden import open_golden
from warpsim.isa.tensormap import decode_tensormap, encode_tiled
from warpsim.ptx import GlobalMemory, load

GOLDEN = Path(__file__).parent / "golden" / "cutlass3_sm90a.npz"
MORE = Path(__file__).parent / "golden" / "cutlass3_more_sm90a.npz"
TMAP_OFFSETS = {"A": 128, "B": 384, "C": 896, "D": 1152}     # where CUTLASS's Params hold the CUtensorMaps


@pytest.fixture(scope="module")
def golden():
    return open_golden(GOLDEN)


# --- THE TARGET: CUTLASS 3 KernelTmaWarpSpecializedCooperative, 2x1 cluster, TMA multicast + store ------

def _replay(golden, case, **launch):
    """Launch a captured CUTLASS 3 case from its PTX on the captured inputs (``launch``: more arguments of
    Module.launch; the interpreter unless ``engine`` says otherwise) -> (D as replayed, D the H100 wrote)."""
    launch.setdefault("engine", "interpret")
    info = golden.manifest["cases"][case]
    L = info["launch"]
    gm = GlobalMemory()
    for k in ("A", "B", "C", "bias"):
        if k in L:
            gm.map(np.asarray(golden[f"{case}.{k}"]).copy(), address=int(L[k][0]))
    want = np.asarray(golden[f"{case}.D"])
    D = np.zeros_like(want)
    gm.map(D, address=int(L["D"][0]))
    mod = load(np.asarray(golden[f"{case}.ptx"]).tobytes().decode())
    params = np.asarray(golden[f"{case}.params"]).tobytes()
    mod.launch(L["kernel"][0], grid=tuple(map(int, L["grid"])), block=tuple(map(int, L["block"])), args=[params],
               shared_bytes=int(L["smem"][0]), memory=gm, cluster=tuple(map(int, L["cluster"])), **launch)
    return D, want


@pytest.mark.parametrize("case", [0, 1, 2, 3])
def test_cutlass3_gemm_replays_h100_words(golden, case):
    D, want = _replay(golden, case)
    assert int((D != want).sum()) == 0


@pytest.mark.parametrize("case", range(len(CUTLASS3_MORE_CASES)))
def test_cutlass3_pingpong_and_fused_epilogues_replay_gpu_words(case):
    """KernelTmaWarpSpecializedPingpong (64 x 128 tiles, the two consumer warpgroups alternating), the
    cooperative kernel with LinCombPerRowBiasEltAct<ReLu> (f16 D) and the ping-pong kernel with
    LinCombPerColBiasEltAct<GELU> (erff: ex2.approx and FMAs); each a 2-CTA persistent grid walking
    several tiles per CTA (sm_count 2)."""
    more = open_golden(MORE)
    info = more.manifest["cases"][case]
    assert {k: info[k] for k in CUTLASS3_MORE_CASES[case]} == CUTLASS3_MORE_CASES[case]
    D, want = _replay(more, case)
    assert (want != (0xEEEE if want.dtype == np.uint16 else 0xEEEEEEEE)).all()    # every word written
    assert int((D != want).sum()) == 0, f"{int((D != want).sum())} of {D.size} D words differ"


def test_driver_tensormaps_decode_to_the_launch(golden):
    """The 16 descriptors cuTensorMapEncodeTiled wrote on the H100 decode to the buffers and tiles of the launch.

    CUTLASS hands its f16 and e4m3 operands to the driver as unsigned integers of the same width
    (uint16 / uint8: data-type codes 1 and 0); the f32 epilogue tensors as float32.  Re-encoding
    each decoded descriptor gives the driver's 128 bytes back.
    """
    for case, info in enumerate(golden.manifest["cases"]):
        p = np.asarray(golden[f"{case}.params"]).tobytes()
        M, N, K = info["M"], info["N"], info["K"]
        fp8 = info["dtype"] == "e4m3"
        for name, (dims, box) in {"A": ((K, M, 1), (128 if fp8 else 64, 128, 1)),
                                  "B": ((K, N, 1), (128 if fp8 else 64, 64, 1)),
                                  "C": ((N, M, 1), (32, 128, 1)), "D": ((N, M, 1), (32, 128, 1))}.items():
            raw = p[TMAP_OFFSETS[name]:TMAP_OFFSETS[name] + 128]
            tm = decode_tensormap(raw)
            assert tm.global_address == int(info["launch"][name][0])
            assert tm.global_dim == dims and tm.box_dim == box and tm.swizzle == "128B"
            assert tm.l2_promotion == "128B" and tm.global_strides[1] == 0
            es = 4 if name in "CD" else (1 if fp8 else 2)
            assert tm.dtype == {4: "float32", 2: "uint16", 1: "uint8"}[es]
            assert tm.global_strides[0] == dims[0] * es
            assert tm.encode().tobytes() == raw
    bad = bytearray(np.asarray(golden["0.params"]).tobytes()[128:256])
    bad[100] = 1                                    # a byte the driver never writes
    with pytest.raises(ValueError, match="bits set outside every known field"):
        decode_tensormap(bytes(bad))


# --- small kernels ----------------------------------------------------------------------------

HEAD = """.version 8.0
.target sm_90a
.address_size 64
"""


def _run(body, params, grid=1, block=64, cluster=None, shared=0, gm=None, regs=""):
    text = HEAD + f""".visible .entry k({', '.join(f'.param .u64 p{i}' for i in range(params))})
{{
    .reg .b32 %r<40>;
    .reg .b64 %rd<40>;
    .reg .pred %p<10>;
    .shared .align 1024 .b8 buf[4096];
    {regs}
{body}
    ret;
}}
"""
    return text


def _launch(text, args, **kw):
    kw.setdefault("grid", 1)
    kw.setdefault("engine", "interpret")      # the interpreter's rules and words (test_ptx_native_hopper: compiled)
    load(text).launch("k", args=args, **kw)


PRODUCER_CONSUMER = """
    ld.param.u64 %rd1, [p0];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;                 // warp
    mov.u32 %r3, buf;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra INIT_DONE;
    mbarrier.init.shared::cta.b64 [%r3], 1;
INIT_DONE:
    bar.sync 0;
    setp.eq.u32 %p2, %r2, 1;
    @%p2 bra PRODUCER;
    // consumer warp (lower pc: the scheduler would run it first) spins on test_wait, then try_wait
SPIN:
    mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r3], 0;
    @!%p3 bra SPIN;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r3], 0;
    @!%p4 bra WAIT;
    ld.shared.u32 %r5, [%r3+64];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    bra END;
PRODUCER:
    setp.ne.u32 %p5, %r1, 32;
    @%p5 bra END;
    mov.u32 %r6, 1234;
    st.shared.u32 [%r3+64], %r6;
    mbarrier.arrive.shared::cta.b64 %rd5, [%r3];
END:
"""


def test_consumer_spinning_lets_the_producer_run():
    out = np.zeros(32, np.uint32)
    _launch(_run(PRODUCER_CONSUMER, 1), [out], grid=1, block=64)
    assert (out == 1234).all()


def test_wait_that_never_completes_is_a_deadlock_naming_barrier_phase_and_warps():
    text = _run(PRODUCER_CONSUMER.replace("mbarrier.arrive.shared::cta.b64 %rd5, [%r3];", ""), 1)
    with pytest.raises(warpsim.PTXError, match=r"deadlock.*shared address 0x0, phase 0, expected 1 arrivals, got 0.*"
                                               r"warp 0 of CTA 0"):
        _launch(text, [np.zeros(32, np.uint32)], grid=1, block=64)


def test_expect_tx_bytes_that_never_land_deadlock_with_the_tx_count():
    text = _run(PRODUCER_CONSUMER.replace("mbarrier.arrive.shared::cta.b64 %rd5, [%r3];",
                                          "mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r3], 256;"), 1)
    with pytest.raises(warpsim.PTXError, match=r"deadlock.*got 1, tx-count 256"):
        _launch(text, [np.zeros(32, np.uint32)], grid=1, block=64)


def test_misaligned_mbarrier_is_refused():
    body = "mov.u32 %r3, buf;\n mbarrier.init.shared::cta.b64 [%r3+4], 1;"
    with pytest.raises(warpsim.PTXError, match="not 8-byte aligned"):
        _launch(_run(body, 0), [], block=32)


TMA_LOAD = """
    ld.param.u64 %rd1, [p0];             // the tensormap (in global memory)
    ld.param.u64 %rd2, [p1];             // out
    ld.param.u32 %r10, [p2];             // x coordinate
    ld.param.u32 %r11, [p2+4];           // y coordinate
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, buf;
    add.u32 %r4, %r3, 1024;              // box destination
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra WAIT;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r3], 512;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd1, {%r10, %r11}], [%r3];
WAIT:
    bar.sync 0;
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra WAIT;
    // copy the 512 landed bytes out: 16 per thread
    mul.lo.u32 %r5, %r1, 16;
    add.u32 %r6, %r4, %r5;
    ld.shared.v4.u32 {%r20, %r21, %r22, %r23}, [%r6];
    cvt.u64.u32 %rd3, %r5;
    add.s64 %rd4, %rd2, %rd3;
    st.global.v4.u32 [%rd4], {%r20, %r21, %r22, %r23};
"""


def _tma_kernel():
    return HEAD + """.visible .entry k(.param .u64 p0, .param .u64 p1, .param .align 8 .b8 p2[8])
{
    .reg .b32 %r<40>;
    .reg .b64 %rd<40>;
    .reg .pred %p<10>;
    .shared .align 1024 .b8 buf[2048];
""" + TMA_LOAD + "    ret;\n}\n"


def test_tma_box_past_the_bounds_fills_zeros():
    """A 16x8 float32 box at (-4, 6) of a 20x10 tensor: columns < 0 and rows >= 10 land as zero."""
    gm = GlobalMemory()
    T = np.arange(200, dtype=np.float32).reshape(10, 20)
    addr = gm.map(T)
    tmap = np.zeros(128, np.uint8)
    gm.map(tmap, address=0x10000000)
    tmap[:] = encode_tiled("float32", 2, addr, (20, 10), (80,), (16, 8), (1, 1))
    out = np.zeros(128, np.float32)
    coords = np.array([-4, 6], np.int32).tobytes()
    load(_tma_kernel()).launch("k", 1, 32, [0x10000000, out, coords], memory=gm, engine="interpret")
    want = np.zeros((8, 16), np.float32)
    want[:4, 4:] = T[6:10, 0:12]
    assert (out.reshape(8, 16) == want).all()


def test_invalid_tensormap_is_refused():
    gm = GlobalMemory()
    tmap = np.full(128, 0xAB, np.uint8)
    gm.map(tmap, address=0x10000000)
    with pytest.raises(warpsim.PTXError, match="invalid tensormap"):
        load(_tma_kernel()).launch("k", 1, 32, [0x10000000, np.zeros(128, np.float32),
                                                np.zeros(2, np.int32).tobytes()], memory=gm, engine="interpret")


def test_tma_destination_misaligned_is_refused():
    gm = GlobalMemory()
    T = np.zeros((10, 20), np.float32)
    tmap = np.zeros(128, np.uint8)
    gm.map(tmap, address=0x10000000)
    tmap[:] = encode_tiled("float32", 2, gm.map(T), (20, 10), (80,), (16, 8), (1, 1))
    with pytest.raises(warpsim.PTXError, match="128-byte aligned"):
        load(_tma_kernel().replace("add.u32 %r4, %r3, 1024;", "add.u32 %r4, %r3, 1040;")).launch(
            "k", 1, 32, [0x10000000, np.zeros(128, np.float32), np.zeros(2, np.int32).tobytes()], memory=gm,
            engine="interpret")


CLUSTER = """
    ld.param.u64 %rd1, [p0];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %cluster_nctarank;
    mov.u32 %r4, %clusterid.x;
    mov.u32 %r5, %cluster_ctaid.x;
    mov.u32 %r6, %ctaid.x;
    mov.u32 %r7, buf;
    // write my rank into the next CTA's shared memory (distributed shared memory)
    add.u32 %r8, %r2, 1;
    rem.u32 %r8, %r8, %r3;
    mapa.shared::cluster.u32 %r9, %r7, %r8;
    mul.lo.u32 %r10, %r1, 4;
    add.u32 %r11, %r9, %r10;
    add.u32 %r12, %r2, 100;
    st.shared::cluster.u32 [%r11], %r12;
    barrier.cluster.arrive.relaxed.aligned;
    barrier.cluster.wait.aligned;
    add.u32 %r13, %r7, %r10;
    ld.shared.u32 %r14, [%r13];
    // out[cta, tid] = (received << 16) | (clusterid << 8) | (cluster_ctaid << 4) | rank
    shl.b32 %r15, %r14, 16;
    shl.b32 %r16, %r4, 8;
    shl.b32 %r17, %r5, 4;
    or.b32 %r15, %r15, %r16;
    or.b32 %r15, %r15, %r17;
    or.b32 %r15, %r15, %r2;
    mad.lo.u32 %r18, %r6, 32, %r1;
    mul.wide.u32 %rd2, %r18, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r15;
"""


def test_cluster_registers_mapa_and_distributed_shared_memory():
    out = np.zeros((4, 32), np.uint32)
    _launch(_run(CLUSTER, 1), [out], grid=4, block=32, cluster=2)
    for cta in range(4):
        rank, cid = cta % 2, cta // 2
        sender = (rank + 1) % 2                  # the CTA whose next rank is me
        assert (out[cta] == ((100 + sender) << 16 | cid << 8 | rank << 4 | rank)).all()


def test_cluster_must_divide_the_grid():
    with pytest.raises(ValueError, match="must divide the grid"):
        _launch(_run(CLUSTER, 1), [np.zeros(96, np.uint32)], grid=3, block=32, cluster=2)


def test_setmaxnreg_misuse_is_reported():
    body = "setmaxnreg.dec.sync.aligned.u32 40;\n setmaxnreg.dec.sync.aligned.u32 64;"
    with pytest.raises(warpsim.PTXError, match=r"setmaxnreg.dec to 64 registers, but warpgroup 0 of CTA 0 has only 40"):
        _launch(_run(body, 0), [], block=128)
    body = "setmaxnreg.inc.sync.aligned.u32 36;"
    with pytest.raises(warpsim.PTXError, match="multiple of 8"):
        _launch(_run(body, 0), [], block=128)


def test_tma_box_padded_past_the_shared_memory_is_refused():
    """A 4 x 64 float32 box under 32B swizzle: its 1,024 dense bytes would fit the 1,024 bytes left
    after the destination, but each 16-byte row takes the 32-byte span (2,048 bytes), so the copy
    runs past the CTA's shared memory -- the H100 faults with an illegal address; warpsim refuses it."""
    gm = GlobalMemory()
    T = np.zeros((64, 4), np.float32)
    tmap = np.zeros(128, np.uint8)
    gm.map(tmap, address=0x10000000)
    tmap[:] = encode_tiled("float32", 2, gm.map(T), (4, 64), (16,), (4, 64), (1, 1), swizzle="32B")
    with pytest.raises(warpsim.PTXError, match=r"spans 2048 bytes \(64 rows of 32.*ends at 3072, past the CTA's 2048 "
                                               r"shared bytes; the H100 faults \(illegal address\)"):
        load(_tma_kernel()).launch("k", 1, 32, [0x10000000, np.zeros(128, np.float32), np.zeros(2, np.int32).tobytes()],
                                   memory=gm, engine="interpret")
