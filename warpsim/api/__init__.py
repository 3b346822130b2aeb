"""Front ends of the library: the public calls (``warpsim.mma``, ``wgmma``, ``matmul``, ``gemm``,
``compress``/``expand``, ``explain``) check their arguments here and hand batched work to the engine."""
