"""The fast kernels compute every input class themselves, bit for bit as the H100.

Special values (NaN payloads, infinities, signed zeros, subnormals, the largest finite values) and random
finite register words used to send a whole warp to the exact per-element kernel.  Now the fast kernels
decide every output themselves.  These tests replay the committed H100 words of the corpus's `special`,
`finite` (random finite words) and `tiny` distributions for every float catalog entry with the exact
generic kernel disabled, so they cannot pass through it silently, and check that the tensor-core kernel
saw warps with NaN / inf elements and handled them itself.
"""

import numpy as np
import pytest

import warpsim
from warpsim.cli import verify as _verify
from warpsim.engine import kernel, tensorcore
from warpsim.hw import Corpus
from warpsim.isa.catalog import BY_OPCODE

CORPUS = Corpus(_verify.default_corpus())
DISTS = ("special", "finite", "tiny")


def _float_entries():
    for idx, item in enumerate(CORPUS.manifest["entries"]):
        if BY_OPCODE[item["opcode"]].elem("a").is_float:
            yield pytest.param(idx, id=f"{item['opcode']}:sel{item['selector']}")


@pytest.fixture
def fast_only(monkeypatch):
    """Fail on any call of the exact generic kernel; count the tensor-core kernel's warps by kind."""
    def exact(*args, **kw):
        raise AssertionError("the exact generic kernel was called")

    monkeypatch.setattr(kernel, "_generic", exact)
    stats = {}
    monkeypatch.setattr(tensorcore, "STATS", stats)
    return stats


@pytest.mark.parametrize("idx", list(_float_entries()))
def test_special_and_random_words_take_the_fast_kernel(idx, fast_only):
    entry = CORPUS.entry(idx)
    ins = BY_OPCODE[entry["opcode"]]
    words = 0
    for name, start, count in entry["distributions"]:
        if name not in DISTS:
            continue
        sl = slice(start, start + count)
        e = entry["e"][sl] if "e" in entry else None
        d = warpsim.mma(ins.opcode, entry["a"][sl], entry["b"][sl], entry["c"][sl], e, selector=entry["selector"])
        bad = int(np.count_nonzero(d != entry["d"][sl]))
        assert bad == 0, f"{name}: {bad} of {d.size} words differ from the H100"
        words += d.size
    assert words > 0
    if kernel.plan(ins.opcode, entry["selector"], "sm_90").ftab is not None:
        assert fast_only.get("exact", 0) == 0
        assert fast_only.get("special", 0) > 0, "no warp with a NaN or inf element reached the fast kernel"


def test_random_words_single_warps_equal_the_batch(fast_only):
    """Uniformly random words (every NaN payload, inf, subnormal): one-warp calls (the small-call path)
    give the words of the batched call, for a tensor-core form, an f64 DMMA and an f16x4 chain."""
    rng = np.random.default_rng(0)
    for op in ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
               "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
               "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"):
        ins = BY_OPCODE[op]
        a, b, c = (rng.integers(0, 1 << 32, size=(6, 32, ins.words(r)), dtype=np.uint64).astype(np.uint32)
                   for r in "abc")
        d = warpsim.mma(op, a, b, c)
        for w in range(6):
            assert np.array_equal(warpsim.mma(op, a[w], b[w], c[w]), d[w])


def test_avx2_code_replays_the_h100_words():
    """The fast kernel compiled for AVX2 (no packed float64 <-> int64 conversions: its dot core sums in
    float64) gives the H100's words of f16 m16n8k16 -> f32 and f16 -> f16, every captured distribution."""
    import json
    import os
    import subprocess
    import sys

    from warpsim.engine import hostisa

    if "avx2" not in hostisa.host_features():
        pytest.xfail("this host has no AVX2: the AVX2 build cannot run here")
    code = """
import json, sys
from warpsim.cli import verify
from warpsim.engine import hostisa, tensorcore
from warpsim.hw import Corpus
corpus = Corpus(verify.default_corpus())
tensorcore.STATS = {}
out = {"isa": hostisa.describe()["codegen_isa"], "int64": tensorcore._packed_int64_conversions(), "rows": []}
for i, e in enumerate(corpus.manifest["entries"]):
    if e["opcode"] in sys.argv[1:]:
        r = verify.replay_entry(corpus.entry(i))
        out["rows"].append([e["opcode"], r.error, r.words, r.differ])
out["stats"] = tensorcore.STATS
print(json.dumps(out))
"""
    ops = ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"]
    # on a host whose widest vector ISA is AVX2 its own build is the AVX2 code (shared with the other tests' cache);
    # the haswell build there compiled every kernel again (~60 s of a cold suite on a 2-core Zen 3)
    wider = hostisa.vector_isa(hostisa.host_features()) != "AVX2"
    env = dict(os.environ, **(hostisa.avx2_environment() if wider else {}), NUMBA_NUM_THREADS="1")
    env.pop("WARPSIM_GENERIC", None)
    res = subprocess.run([sys.executable, "-c", code, *ops], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["isa"] == "AVX2" and out["int64"] is False
    assert sorted(r[0] for r in out["rows"]) == sorted(ops)
    for op, err, words, differ in out["rows"]:
        assert err is None and words > 0 and differ == 0, (op, err, words, differ)
    assert out["stats"].get("ordinary", 0) > 0 and out["stats"].get("special", 0) > 0
