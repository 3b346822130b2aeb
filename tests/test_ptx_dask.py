"""A launch's CTA batches on a dask.distributed cluster (launch(..., client=)): the sequential launch's
words, merged in batch order as tasks finish, or the sequential launch when batches talk."""

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx import workers

from test_ptx_workers import CHAIN, ENGINES, OWN

distributed = pytest.importorskip("distributed", reason="dask.distributed is in the test extra")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@ENGINES
def test_dask_batches_equal_the_sequential_launch(client, capsys, engine):
    mod = wp.load(OWN)
    inp = np.arange(16, dtype=np.uint32) * 1000
    seq = np.zeros(16 * 32, np.uint32)
    mod.launch("k", 16, 32, [seq, inp], ctas_per_batch=2, workers=1, engine=engine)
    out = np.full(16 * 32, 7, np.uint32)
    mod.launch("k", 16, 32, [out, inp], ctas_per_batch=2, client=client, progress=True, engine=engine)
    assert workers.LAST == "merged" and mod.last_engine["engine"] == engine
    t = np.arange(16 * 32)
    assert np.array_equal(seq, t * 3 + (t // 32) * 1000) and np.array_equal(out, seq)
    # the interpreter: 8 batches, 2 a task; the compiled kernel: runs of CTAs, four per cluster thread
    assert "dask: CTA batch runs 4/4 merged" in capsys.readouterr().err


def test_dask_merge_with_one_task_in_flight(client, monkeypatch):
    """in_flight bounds the tasks submitted and not yet merged; the words do not depend on it."""
    mod = wp.load(OWN)
    inp = np.arange(6, dtype=np.uint32)
    seq, out = np.zeros(6 * 32, np.uint32), np.zeros(6 * 32, np.uint32)
    mod.launch("k", 6, 32, [seq, inp], ctas_per_batch=1, workers=1, engine="interpret")
    from warpsim.ptx import module as M

    real = workers.run_dask
    seen = []

    def one_at_a_time(*a, **k):
        seen.append(len(a[2]))
        return real(*a, in_flight=1)

    monkeypatch.setattr(workers, "run_dask", one_at_a_time)
    mod.launch("k", 6, 32, [out, inp], ctas_per_batch=1, client=client, engine="interpret")   # its batches
    assert seen == [6 // M.DASK_BATCHES_PER_TASK] and workers.LAST == "merged"
    assert np.array_equal(out, seq)


@ENGINES
def test_dask_batches_that_talk_run_sequentially(client, engine):
    """CTA c reads what CTA c - 1 wrote: the merge sees it, restores memory, and runs the grid in order."""
    mod = wp.load(CHAIN)
    out = np.zeros(8, np.uint32)
    mod.launch("k", 8, 32, [out], ctas_per_batch=1, client=client, engine=engine)
    assert workers.LAST == "sequential" and mod.last_engine["engine"] == engine
    assert np.array_equal(out, np.arange(1, 9))


def test_client_must_be_a_dask_client():
    mod = wp.load(OWN)
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client, not str"):
        mod.launch("k", 2, 32, [np.zeros(64, np.uint32), np.zeros(2, np.uint32)], client="tcp://x:8786")
