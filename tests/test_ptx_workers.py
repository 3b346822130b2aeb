"""CTA batches of a launch in worker processes (warpsim.ptx.workers), or runs of CTAs of a compiled
kernel in threads (warpsim.ptx.native): the result is the sequential launch's, word for word, or the
launch runs sequentially."""

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx import PTXError, workers

#: both engines take workers=: the interpreter's processes, the compiled kernel's threads
ENGINES = pytest.mark.parametrize("engine", ["interpret", "compiled"])

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# each CTA writes its own slice of out; CTA c also adds in[c] (read-only input)
OWN = HEAD + """.visible .entry k(.param .u64 out, .param .u64 inp)
{
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
ld.param.u64 %rd1, [out];
ld.param.u64 %rd9, [inp];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ctaid.x;
mad.lo.s32 %r3, %r2, 32, %r1;
mul.wide.u32 %rd2, %r3, 4;
add.s64 %rd3, %rd1, %rd2;
mul.wide.u32 %rd4, %r2, 4;
add.s64 %rd5, %rd9, %rd4;
ld.global.u32 %r4, [%rd5];
mul.lo.s32 %r5, %r3, 3;
add.s32 %r6, %r5, %r4;
st.global.u32 [%rd3], %r6;
ret;
}
"""

# CTA c reads what CTA c - 1 wrote: batches in sequence chain their values
CHAIN = HEAD + """.visible .entry k(.param .u64 out)
{
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
.reg .pred %p<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r2, %ctaid.x;
mov.u32 %r1, %tid.x;
mov.u32 %r4, 1;
setp.eq.u32 %p1, %r2, 0;
@%p1 bra WRITE;
sub.s32 %r3, %r2, 1;
mul.wide.u32 %rd2, %r3, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.u32 %r5, [%rd3];
add.s32 %r4, %r5, 1;
WRITE:
mul.wide.u32 %rd4, %r2, 4;
add.s64 %rd5, %rd1, %rd4;
setp.eq.u32 %p2, %r1, 0;
@%p2 st.global.u32 [%rd5], %r4;
ret;
}
"""


@ENGINES
def test_batches_in_workers_equal_the_sequential_launch(engine):
    mod = wp.load(OWN)
    inp = np.arange(8, dtype=np.uint32) * 1000
    seq = np.zeros(8 * 32, np.uint32)
    mod.launch("k", 8, 32, [seq, inp], ctas_per_batch=2, workers=1, engine=engine)
    par = np.zeros(8 * 32, np.uint32)
    mod.launch("k", 8, 32, [par, inp], ctas_per_batch=2, workers=2, engine=engine)
    assert workers.LAST == "merged" and mod.last_engine["engine"] == engine
    t = np.arange(8 * 32)
    assert np.array_equal(seq, t * 3 + (t // 32) * 1000) and np.array_equal(par, seq)


@ENGINES
def test_a_batch_reading_an_earlier_batchs_writes_runs_sequentially(engine):
    mod = wp.load(CHAIN)
    seq, par = np.zeros(6, np.uint32), np.zeros(6, np.uint32)
    mod.launch("k", 6, 32, [seq], ctas_per_batch=1, workers=1, engine=engine)
    mod.launch("k", 6, 32, [par], ctas_per_batch=1, workers=3, engine=engine)
    assert workers.LAST == "sequential" and mod.last_engine["engine"] == engine
    assert np.array_equal(seq, np.arange(1, 7)) and np.array_equal(par, seq)


# CTA c adds 1 and out[c - 1] to out[c]: a launch run twice would not give the same words
ACCUMULATE = HEAD + """.visible .entry k(.param .u64 out)
{
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
.reg .pred %p<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r2, %ctaid.x;
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd4, %r2, 4;
add.s64 %rd5, %rd1, %rd4;
ld.global.u32 %r6, [%rd5];
add.s32 %r4, %r6, 1;
setp.eq.u32 %p1, %r2, 0;
@%p1 bra WRITE;
sub.s32 %r3, %r2, 1;
mul.wide.u32 %rd2, %r3, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.u32 %r5, [%rd3];
add.s32 %r4, %r4, %r5;
WRITE:
setp.eq.u32 %p2, %r1, 0;
@%p2 st.global.u32 [%rd5], %r4;
ret;
}
"""


@ENGINES
def test_a_failed_merge_leaves_memory_as_it_was_before_the_sequential_run(engine):
    """The compiled engine's first run of CTAs writes the launch's arrays in place: when the merge
    fails they must be put back before the launch runs again sequentially."""
    mod = wp.load(ACCUMULATE)
    seq, par = np.arange(1, 7, dtype=np.uint32) * 10, np.arange(1, 7, dtype=np.uint32) * 10
    mod.launch("k", 6, 32, [seq], ctas_per_batch=1, workers=1, engine=engine)
    mod.launch("k", 6, 32, [par], ctas_per_batch=1, workers=3, engine=engine)
    assert workers.LAST == "sequential" and mod.last_engine["engine"] == engine
    assert seq.tolist() == [11, 32, 63, 104, 155, 216] and np.array_equal(par, seq)


@ENGINES
def test_an_error_in_a_later_batch_is_raised_as_sequentially(engine):
    src = OWN.replace("ld.global.u32 %r4, [%rd5];", "ld.global.u32 %r4, [%rd5+64];")
    mod = wp.load(src)
    out = np.zeros(20 * 32, np.uint32)
    with pytest.raises(PTXError, match="outside every (kernel-argument|mapped) array"):
        mod.launch("k", 20, 32, [out, np.zeros(20, np.uint32)], ctas_per_batch=4, workers=2, engine=engine)
    assert workers.LAST == "sequential"
    # inp[c + 16] lies outside inp from CTA 4 on: batch 0 ran, the launch stopped in batch 1
    assert np.array_equal(out[:128], np.arange(128) * 3) and not out[128:].any()


def test_workers_is_checked():
    mod = wp.load(OWN)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        mod.launch("k", 4, 32, [np.zeros(128, np.uint32), np.zeros(4, np.uint32)], ctas_per_batch=1, workers=0)


def test_track_marks_exactly_the_bytes_accessed():
    from warpsim.ptx.memory import Track

    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 4, 8, 16):
        for _ in range(40):
            t, ref = Track([256]), np.zeros(256, bool)
            align = n if n in (2, 4, 8, 16) and rng.random() < 0.8 else 1
            starts = rng.integers(0, (256 - n) // align + 1, rng.integers(1, 20)) * align
            t.mark(True, 0, starts, n)
            for s in starts:
                ref[s:s + n] = True
            assert np.array_equal(t.written[0], ref) and t.written[0].view(np.uint8).max() <= 1
            assert not t.read[0].any()


def test_default_workers(monkeypatch):
    monkeypatch.setenv("WARPSIM_PTX_WORKERS", "3")
    assert workers.default_workers() == 3
    monkeypatch.setenv("WARPSIM_PTX_WORKERS", "0")
    with pytest.raises(ValueError, match="WARPSIM_PTX_WORKERS must be a positive integer"):
        workers.default_workers()
    monkeypatch.delenv("WARPSIM_PTX_WORKERS")
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (1.0, 1.0, 1.0))     # only this process runs
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert workers.default_workers() == 4
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (9.0, 9.0, 9.0))     # every core busy
    assert workers.default_workers() == 1
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (2.0, 2.0, 2.0))     # one other job: three idle
    assert workers.default_workers() == 3


def test_default_workers_of_a_pinned_process_leave_the_other_cpus_load_outside(monkeypatch):
    # pinned to 2 of 16 CPUs (taskset) while 14 other jobs ran: the load fits on the other 14 CPUs
    monkeypatch.delenv("WARPSIM_PTX_WORKERS", raising=False)
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (15.0, 12.0, 6.0))
    assert workers.default_workers() == 2
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (16.0, 12.0, 6.0))     # one more: one of ours busy
    assert workers.default_workers() == 1
    assert [workers.workers_for_load(2, 2, x) for x in (0.0, 1.0, 1.4, 1.6, 2.0, 8.0)] == [2, 2, 2, 1, 1, 1]


@ENGINES
def test_arrays_sharing_host_memory_run_sequentially(engine):
    # out and its alias are one host array mapped at two device addresses: CTA c writes through
    # out, and reads (as inp) what earlier CTAs wrote through the alias
    mod = wp.load(OWN)
    seq, par = np.zeros(8 * 32, np.uint32), np.zeros(8 * 32, np.uint32)
    mod.launch("k", 8, 32, [seq, seq[:8]], ctas_per_batch=2, workers=1, engine=engine)
    workers.LAST = None
    mod.launch("k", 8, 32, [par, par[:8]], ctas_per_batch=2, workers=2, engine=engine)
    assert workers.LAST is None and np.array_equal(par, seq)      # the workers were not asked
    assert seq[64] == 64 * 3 + seq[2]                             # CTA 2 read what CTA 0 wrote


def test_a_tracked_access_marks_exactly_its_bytes():
    """rt.track: an access of n bytes at offset off of mapped array k sets its flag in those n bytes of the track
    and in no other (2, 4, 8 and 16 bytes take word-wide read-modify-writes, any other size byte by byte; the
    arrays' starts need not be aligned)."""
    from warpsim.ptx.native import rt

    trk = np.zeros(64, np.uint8)
    toff = np.array([0, 5], np.int64)            # array 1 starts at an odd byte of the track
    for k, off, n, how in [(1, 3, 2, rt.READ), (1, 3, 4, rt.WRITTEN), (0, 16, 16, rt.READ), (0, 40, 3, rt.WRITTEN),
                           (0, 50, 8, rt.WRITTEN), (1, 57, 1, rt.READ)]:
        rt.track(trk, toff, k, off, n, how)
    want = np.zeros(64, np.uint8)
    want[8:10] = rt.READ | rt.WRITTEN
    want[10:12] = rt.WRITTEN
    want[16:32] = rt.READ
    want[40:43] = rt.WRITTEN
    want[50:58] = rt.WRITTEN
    want[62] = rt.READ
    assert trk.tolist() == want.tolist()
    rt.track(np.zeros(0, np.uint8), toff, 0, 0, 16, rt.READ)      # an untracked launch: nothing to mark
