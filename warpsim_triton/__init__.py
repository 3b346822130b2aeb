"""Triton's backend entry point for warpsim (``[project.entry-points."triton.backends"] warpsim``).

Triton imports ``compiler`` and ``driver`` from here whenever it starts, so both stay tiny and import
nothing of warpsim: the driver is active only under ``WARPSIM_TRITON=<target>``, and only then is
``warpsim.triton``'s driver made.  The compiler compiles nothing (Triton's own NVIDIA backend does).
"""
