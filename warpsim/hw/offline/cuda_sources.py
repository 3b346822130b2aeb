"""Prepare and merge the warpsim.cuda capture (tests/golden/cuda_sm90.npz); the GPU side is
warpsim/hw/device/cuda_capture.py.

Here (no GPU; nvcc 13, numba-cuda, NVRTC and nvJitLink installed)::

    python3 -m warpsim.hw.offline.cuda_sources prepare DIR    # cubins, numba PTX, inputs, manifest
    # on the GPU: python3 DIR/cuda_capture.py DIR              -> $OUT/cuda_sm90.npz
    python3 -m warpsim.hw.offline.cuda_sources merge DIR cuda_sm90.npz tests/golden/cuda_sm90.npz

The math library's launches (tests/cuda/math_cases.py -> tests/golden/cuda_math_sm90.npz) the same way,
with ``prepare-math`` (CUDA C++ only) and ``merge-math``.

The CUDA C++ cases (tests/cuda/cu_cases.py) are built by ``nvcc -O3 -arch=sm_90a -cubin`` with each
case's options; the numba-cuda cases (tests/cuda/numba_kernels.py) are the PTX numba-cuda's
compiler writes for cc 9.0, loaded by the driver as text, with numba's array ABI spelled out
(meminfo, parent, nitems, itemsize, data, shape..., strides...); a kernel whose PTX calls numba's
C++ shims (cuda.fp16) is linked with the shims' PTX by nvJitLink, as numba-cuda links it.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]


def _numba_abi(args):
    """numba's kernel ABI: each array -> meminfo, parent, nitems, itemsize, data, shape..., strides..."""
    out = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray):
            out += [("u64", 0), ("u64", 0), ("i64", a.size), ("i64", a.itemsize), ("array", k)]
            out += [("i64", s) for s in a.shape] + [("i64", s) for s in a.strides]
        else:
            out.append((np.asarray(a).dtype.name, a.item()))
    return out


#: case set -> (module in tests/cuda, whether numba-cuda's kernels come too, what the golden file holds)
CASE_SETS = {"cu": ("cu_cases", True, "warpsim.cuda: CUDA C++ (nvcc 13.0 -O3 -arch=sm_90a) and numba-cuda 0.30 "
                                      "kernels run through CuPy"),
             "math": ("math_cases", False, "CUDA's math library (f32, f16, bf16, f64; default, --use_fast_math, "
                                           "--ftz=true, --prec-div/sqrt=false), nvcc 13.0 -O3 -arch=sm_90a, run "
                                           "through CuPy")}


def prepare(dest, which="cu"):
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    import importlib
    modname, with_numba, _ = CASE_SETS[which]
    cu_cases = importlib.import_module(modname)
    manifest, arrays = [], {}
    for name, c in cu_cases.cases().items():
        tag = Path(c["src"]).stem + ("_" + "_".join(o.strip("-") for o in c["options"]) if c["options"] else "")
        cubin = dest / f"{tag}.cubin"
        if not cubin.exists():
            subprocess.run(["nvcc", "-O3", "-arch=sm_90a", "-cubin", *c["options"],
                            str(ROOT / "tests" / "cuda" / "kernels" / c["src"]), "-o", str(cubin)], check=True)
        args = []
        for k, a in enumerate(c["args"]):
            if isinstance(a, np.ndarray):
                arrays[f"{name}/in/{k}"] = a
                args.append(("array", k))
            else:
                args.append((a.dtype.name, a.item()))
        for g, v in c["globals"].items():
            arrays[f"{name}/global_in/{g}"] = v
        manifest.append(dict(name=name, module=cubin.name,
                             entry=getattr(cu_cases, "MANGLED", {}).get(c["kernel"], c["kernel"]),
                             grid=c["grid"], block=c["block"], args=args, outputs=c["outputs"],
                             globals=list(c["globals"]), read_globals=c["read_globals"]))
    if with_numba:
        _prepare_numba(dest, manifest, arrays)
    np.savez_compressed(dest / "inputs.npz", **arrays)
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (dest / "cuda_capture.py").write_text((ROOT / "warpsim/hw/device/cuda_capture.py").read_text())
    print(f"prepared {len(manifest)} launches in {dest}")


def _prepare_numba(dest, manifest, arrays):
    import numba_kernels
    from warpsim.cuda.jit import compile_kernel_ptx, link_cubin
    for name, (fn, sig) in numba_kernels.KERNELS.items():
        ptx, entry, shims = compile_kernel_ptx(fn, sig)
        (dest / f"numba_{name}.ptx").write_text(ptx)
        module = f"numba_{name}.ptx"
        if shims:
            (dest / f"numba_{name}.cubin").write_bytes(link_cubin([ptx] + shims, "sm_90a"))
            module = f"numba_{name}.cubin"
        args, grid, block, outs = numba_kernels.inputs()[name]
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                arrays[f"numba_{name}/in/{k}"] = a
        manifest.append(dict(name=f"numba_{name}", module=module, entry=entry, grid=grid, block=block,
                             args=_numba_abi(args), outputs=outs, globals=[], read_globals=[]))


def merge(src, captured, dest, which="cu"):
    """Inputs (from the prepare step) and the GPU's outputs in one compact golden file for the tests."""
    from warpsim.hw.golden import save_golden

    inputs = dict(np.load(Path(src) / "inputs.npz"))
    got = dict(np.load(captured))
    errors = {k: str(v) for k, v in got.items() if k.endswith("/error")}
    if errors:
        raise SystemExit(f"cases failed on the GPU: {errors}")
    info = {"what": CASE_SETS[which][2], "device": str(got.get("device", "?"))}
    stats = save_golden(dest, {**inputs, **got}, info=info)
    print(f"wrote {dest}: {len(inputs)} inputs, {len(got)} captured arrays, {stats['file_bytes']} bytes")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd in ("prepare", "prepare-math"):
        prepare(sys.argv[2], "math" if cmd.endswith("math") else "cu")
    elif cmd in ("merge", "merge-math"):
        merge(*sys.argv[2:5], which="math" if cmd.endswith("math") else "cu")
    else:
        raise SystemExit(__doc__)
