"""The optional extra behind ``warpsim.cuda``: one import helper that names what to install."""

import importlib

INSTALL = "pip install 'warpsim[cuda]'"


def require(module: str):
    """Import ``module`` of the ``warpsim[cuda]`` extra, or say what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"warpsim.cuda needs {module!r} ({exc}); it comes with the 'cuda' extra: "
                          f"{INSTALL} (NVRTC, cuda-bindings, the CUDA headers and numba-cuda)") from exc
