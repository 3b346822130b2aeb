"""How the engine's parallel kernels wait: numba's OpenMP layer, told to sleep between launches.

numba runs ``parallel=True`` kernels on its OpenMP threading layer, and GNU OpenMP's default
(active) wait policy makes idle worker threads spin.  On a machine whose cores are shared with
other processes, every launch then waits for spinning or descheduled workers: measured on the
2-core development VM under load, a parallel launch of 64 to 1024 warps cost a fixed ~15 ms
(a PTX kernel launch runs hundreds of such small batched calls).  With the passive policy the
same launches cost what the serial kernel does.  The OpenMP runtime reads ``OMP_WAIT_POLICY``
once, when numba first loads it (the first parallel kernel), so this module sets it on import,
before any engine kernel runs; a value the user set wins.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
