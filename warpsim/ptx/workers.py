"""CTA batches of one launch side by side in worker processes, merged into the sequential result.

A launch runs its grid in batches of CTAs, one after the other (``Module.launch``).  With several
batches and several workers, each worker runs a contiguous run of batches, in order, on its own
copy of global memory, and records which bytes it read and wrote (``memory.Track``).  The
parent then checks that no worker read a byte that a worker of earlier batches wrote, and
applies the writes in batch order (a later batch's bytes win).  That is exactly the sequential
launch: each batch saw what it would have seen, and memory ends as it would have.  When the
check fails (CTAs of different batches talk through global memory, e.g. atomics on one counter),
a batch raised an error, or a batch warned, the launch runs sequentially from the untouched
memory instead, so errors and warnings come out as they always do.

Workers are processes (the interpreter's per-statement work holds the GIL), fresh interpreters
started on first use and reused.  ``workers=`` of ``launch`` or ``WARPSIM_PTX_WORKERS`` sets how
many (1 turns it off); by default, as many as there are idle CPUs (``default_workers``).

``launch(..., client=c)`` runs the batches on a ``dask.distributed`` cluster instead
(:func:`run_dask`): more, shorter runs of batches, merged in order as they finish, with a bounded
number in flight, the same check and the same sequential fallback.

A compiled kernel (:mod:`warpsim.ptx.native`) runs its runs of CTAs on threads of this process, or
as the same dask tasks, and its tracked runs are merged by the same rule (:func:`merge`).
"""

from __future__ import annotations

import atexit
import os
import pickle
import threading

import numpy as np

_POOL: list = []      # the worker processes, started on first use and reused
_LOCK = threading.Lock()
_REGISTERED = False   # _close_all registered to run at exit
#: how the last launch that tried workers ended: "merged" (the workers' result) or "sequential"
LAST = None


def default_workers() -> int:
    """``WARPSIM_PTX_WORKERS`` if set, else the CPUs this process may run on that other processes
    leave idle: on a machine whose cores are busy, workers would only queue behind them.  The result
    never depends on the count.

    Busy CPUs are judged by the 1-minute load average, this process counted out.  The load average
    counts the whole machine: a process pinned to some of its CPUs (``taskset``) takes the load to run
    on the CPUs outside its set first, up to one a CPU, and counts only the rest against its own (on
    a 16-CPU host, a process pinned to 2 CPUs while 14 others compile kept one worker before).  The
    load average trails: a compile that just ended still counts for a minute or so."""
    env = os.environ.get("WARPSIM_PTX_WORKERS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"WARPSIM_PTX_WORKERS must be a positive integer, got {env!r}") from None
        if n < 1:
            raise ValueError(f"WARPSIM_PTX_WORKERS must be a positive integer, got {env!r}")
        return n
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return workers_for_load(n, os.cpu_count() or n, load)


def workers_for_load(mine: int, total: int, load: float) -> int:
    """Workers for a process that may run on ``mine`` of the machine's ``total`` CPUs, at 1-minute load
    average ``load`` (this process included): :func:`default_workers`'s rule."""
    busy = max(load - 1.0 - max(total - mine, 0), 0.0)
    return max(1, min(mine, int(mine - busy + 0.5)))


class _Worker:
    """A ``python -c 'serve()'`` child fed pickled (function, arguments) on its stdin, answering on
    its stdout: a fresh interpreter (no OpenMP state inherited through fork, and the caller's
    ``__main__`` is never re-run, as multiprocessing's spawn would)."""

    def __init__(self):
        import subprocess
        import sys
        from pathlib import Path

        env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")   # the workers fill the cores
        root = str(Path(__file__).resolve().parents[2])       # the warpsim this process runs
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-c", "from warpsim.ptx.workers import serve; serve()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def send(self, fn, args):
        pickle.dump((fn, args), self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def receive(self):
        return pickle.load(self.proc.stdout)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def serve():
    """A worker's loop: answer each (function, arguments) with the function's result (None when it
    raised); ends when its stdin closes."""
    import sys

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)               # anything the work prints goes to stderr, never into the answers
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    while True:
        try:
            fn, args = pickle.load(inp)
        except EOFError:
            return
        try:
            res = fn(*args)
        except Exception:
            res = None
        pickle.dump(res, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


def _close_all():
    while _POOL:
        _POOL.pop().close()


def _workers(n):
    global _REGISTERED
    if not _REGISTERED:
        atexit.register(_close_all)
        _REGISTERED = True
    while len(_POOL) < n:
        _POOL.append(_Worker())
    return _POOL[:n]


def run(fn, jobs, buffers) -> bool:
    """Run ``fn(*job)`` for each job (contiguous runs of batches, in batch order) in worker
    processes and merge their global-memory writes into ``buffers`` (the mapped arrays as uint8
    views, in GlobalMemory order).  fn returns, per buffer, (packed read mask, packed write mask,
    the written bytes), or None when the run must be sequential.  Returns False (buffers
    untouched) when the merged result could differ from the sequential one."""
    global LAST
    LAST = "sequential"
    if not _LOCK.acquire(blocking=False):      # another thread's launch has the workers
        return False
    results = None
    try:
        ws = _workers(len(jobs))
        for w, job in zip(ws, jobs):
            w.send(fn, job)
        results = [w.receive() for w in ws]
    except Exception:        # a worker that could not start or died: the sequential run decides
        pass
    finally:
        if results is None:  # also on an interrupt: no answer may stay behind in a pipe
            _close_all()
        _LOCK.release()
    return results is not None and merge(results, buffers)


def merge(results, buffers) -> bool:
    """Apply the results of contiguous runs of a launch's CTAs (in CTA order) to ``buffers``: per
    mapped array (packed read mask, packed write mask, the written bytes), as the interpreter's
    workers and the compiled engine's tracked runs (``native.kernel.run_tracked``) return them.
    Returns False, buffers untouched, when a run has no result (it stopped) or read bytes an
    earlier run wrote: the merged result could differ from the sequential launch's."""
    global LAST
    LAST = "sequential"
    if any(r is None for r in results):
        return False
    m = _Merge(buffers)
    masks = []
    for res in results:
        mine = m.check(res)
        if mine is None:
            return False
        masks.append(mine)
    for res, mine in zip(results, masks):
        m.apply(res, mine)
    LAST = "merged"
    return True


class _Merge:
    """Workers' results, taken in batch order: check that a run read no byte an earlier run wrote,
    then apply its writes (a later run's bytes win)."""

    def __init__(self, buffers):
        self.buffers = buffers
        self.sizes = [b.size for b in buffers]
        self.written = [np.zeros(n, bool) for n in self.sizes]

    def check(self, res):
        """The write masks of one run's result, recorded as written; None when it read an earlier write."""
        mine = []
        for i, (r, w, _) in enumerate(res):
            read = np.unpackbits(r, count=self.sizes[i]).view(bool)
            if (read & self.written[i]).any():
                return None          # this run read bytes an earlier batch wrote
            mine.append(np.unpackbits(w, count=self.sizes[i]).view(bool))
        for i, w in enumerate(mine):
            self.written[i] |= w
        return mine

    def apply(self, res, mine):
        for buf, w, (_, _, vals) in zip(self.buffers, mine, res):
            if vals.size:
                buf[w] = vals


def _call_with_state(fn, head, state):
    """fn(*head, *state) on a dask worker (state: the launch's shared part, sent to each worker once)."""
    return fn(*head, *state)


def is_dask_client(client) -> bool:
    """Whether ``client`` looks like a ``dask.distributed.Client`` (submit, scatter, ncores)."""
    return all(callable(getattr(client, a, None)) for a in ("submit", "scatter", "ncores"))


def run_dask(client, fn, heads, state, buffers, progress=False, in_flight=None) -> bool:
    """Run ``fn(*head, *state)`` for each head (contiguous runs of batches, in batch order) on the
    dask cluster of ``client`` and merge the global-memory writes into ``buffers`` as the runs
    finish, in batch order; as :func:`run`, False (buffers as they were) when the merged result
    could differ from the sequential launch's.

    Memory stays bounded: ``state`` (the arguments and a copy of global memory) goes to each
    worker once; at most ``in_flight`` runs (default: twice the cluster's threads) are submitted or
    finished but not yet merged; the writes are applied to ``buffers`` run by run, over one backup
    copy that restores them when a later run fails the check.  progress: a run counter on stderr."""
    global LAST
    LAST = "sequential"
    import sys

    from distributed import wait as _wait

    if in_flight is None:
        in_flight = max(2, 2 * sum(client.ncores().values()))
    shared = client.scatter([state], broadcast=True)[0]
    backup = [b.copy() for b in buffers]
    m = _Merge(buffers)
    pending = {}                     # run index -> future
    nxt = done = 0
    ok = True
    try:
        while done < len(heads):
            while nxt < len(heads) and len(pending) < in_flight:
                pending[nxt] = client.submit(_call_with_state, fn, heads[nxt], shared, pure=False)
                nxt += 1
            fut = pending[done]
            _wait([fut])
            res = fut.result() if fut.status == "finished" else None
            del pending[done]
            mine = None if res is None else m.check(res)
            if mine is None:
                ok = False
                break
            m.apply(res, mine)
            done += 1
            if progress:
                print(f"\rdask: CTA batch runs {done}/{len(heads)} merged", end="", file=sys.stderr, flush=True)
    finally:
        for fut in pending.values():
            fut.cancel()
        shared.cancel()
        if progress:
            print(file=sys.stderr)
    if not ok:
        for buf, orig in zip(buffers, backup):
            buf[...] = orig
        return False
    LAST = "merged"
    return True


def aliased(buffers) -> bool:
    """Whether two mapped arrays share host memory (a store through one is seen through the other,
    which separate copies in workers would not reproduce)."""
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if np.may_share_memory(a, b):
                return True
    return False


def split(batches, n):
    """Contiguous runs of ``batches`` for n workers (at most one run per batch)."""
    n = max(1, min(n, len(batches)))
    cuts = [len(batches) * i // n for i in range(n + 1)]
    return [list(batches[cuts[i]:cuts[i + 1]]) for i in range(n)]
