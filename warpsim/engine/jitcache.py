"""Names for jitted kernels that keep numba's on-disk cache honest.

numba keys a cache entry by the function's module, qualified name, first line and signature --
not by the compile flags, and not by the source of the callees it inlines from other modules.
So one Python function compiled both serial and ``parallel=True`` shares one slot (whichever
build is saved first is loaded for both), and an edit to the arithmetic in ``numerics/`` would
not invalidate a kernel that inlines it.  :func:`named_copy` gives each build its own name,
stamped with a digest of those callee modules.  Every engine module that jits a kernel twice
takes its names from here.
"""

from __future__ import annotations

import hashlib
import os
import types

from . import threads as _threads  # noqa: F401  (the OpenMP wait policy, set before any kernel runs)


def _callee_stamp() -> str:
    """Digest of the modules whose jitted functions the kernels inline (numerics/, engine/hostfpu.py,
    engine/tc/)."""
    h = hashlib.sha1()
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    numerics = os.path.join(pkg, "numerics")
    paths = [os.path.join(numerics, f) for f in sorted(os.listdir(numerics)) if f.endswith(".py")]
    paths.append(os.path.join(pkg, "engine", "hostfpu.py"))
    tc = os.path.join(pkg, "engine", "tc")     # the tensor-core intrinsics every tc kernel inlines
    paths += [os.path.join(tc, f) for f in sorted(os.listdir(tc)) if f.endswith(".py")]
    for path in paths:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


CALLEE_STAMP = _callee_stamp()


def named_copy(fn, name: str):
    """A copy of ``fn`` named ``name`` plus the callee stamp: its own numba cache slot."""
    name = f"{name}_{CALLEE_STAMP}"
    f = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    f.__qualname__ = name
    f.__doc__ = fn.__doc__
    return f
