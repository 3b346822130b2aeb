#!/usr/bin/env bash
# How the committed corpus was captured: run on a machine with an H100, CuPy and nvcc,
# from the repository root, with OUT set to a folder for the results.
set -euo pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# 1. the committed corpus: every catalog entry, 8 warps per input distribution, seed 0
python3 -m warpsim.hw source --out /tmp/capture.cu
nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -o /tmp/capture.cubin /tmp/capture.cu 2>/dev/null
python3 -m warpsim.hw capture --out "$OUT/corpus.npz" --warps 8 --seed 0 --cubin /tmp/capture.cubin
# 1b. matrix-level edge cases (signed-zero sums, exact cancellation) for the dense float entries
python3 -m warpsim.hw capture --edge --out "$OUT/corpus_sm90_edge.npz" --warps 8 --seed 0
# 2. reproducibility: capture again (the tool compiles its own kernels) and compare every word
python3 -m warpsim.hw capture --out /tmp/again.npz --warps 8 --seed 0
python3 - "$OUT/corpus.npz" /tmp/again.npz <<'PY' | tee "$OUT/reproduce.txt"
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
keys = [k for k in a.files if k != "manifest"]
bad = [k for k in keys if not np.array_equal(a[k], b[k])]
print(f"re-capture with the same seed: {len(keys) - len(bad)}/{len(keys)} arrays identical; differing: {bad[:10]}")
PY
# 3. SASS of every capture kernel, to see how each instruction is lowered on sm_90
cuobjdump -sass /tmp/capture.cubin | gzip -9 > "$OUT/capture_sass.txt.gz" || true
# 4. (DEEP=1) larger uncommitted sets, seed 1, to fit the dense floating-point models against
if [ "${DEEP:-0}" = 1 ]; then
  python3 -m warpsim.hw capture --out "$OUT/deep_f16x4_f64.npz" --warps 32 --seed 1 --match mma.sync --family f16x4 --family f64
  python3 -m warpsim.hw capture --out "$OUT/deep_f16_bf16_tf32.npz" --warps 32 --seed 1 --match mma.sync --family f16 --family bf16 --family tf32
  python3 -m warpsim.hw capture --out "$OUT/deep_fp8.npz" --warps 32 --seed 1 --match mma.sync --family fp8
fi
ls -la "$OUT"
