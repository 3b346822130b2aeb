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
    leave idle (by the 1-minute load average, this process counted out): on a machine whose cores
    are busy, workers would only queue behind them.  The result never depends on the count."""
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
        busy = max(os.getloadavg()[0] - 1.0, 0.0)
    except (AttributeError, OSError):
        busy = 0.0
    return max(1, min(n, int(n - busy + 0.5)))


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
    if results is None or any(r is None for r in results):
        return False
    sizes = [b.size for b in buffers]
    written = [np.zeros(n, bool) for n in sizes]
    masks = []
    for res in results:
        mine = []
        for i, (r, w, vals) in enumerate(res):
            read = np.unpackbits(r, count=sizes[i]).view(bool)
            if (read & written[i]).any():
                return False         # this run read bytes an earlier batch wrote
            mine.append(np.unpackbits(w, count=sizes[i]).view(bool))
        for i, w in enumerate(mine):
            written[i] |= w
        masks.append(mine)
    for res, mine in zip(results, masks):
        for buf, w, (_, _, vals) in zip(buffers, mine, res):
            if vals.size:
                buf[w] = vals
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
