"""Replay a golden-vector corpus through :func:`warpsim.mma` and count differing words."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import numpy as np

from ..api.mma import mma
from ..hw.golden import open_golden, repo_golden_dir
from ..isa.catalog import BY_OPCODE


def golden_dir() -> str:
    """Where the committed corpora are: ``$WARPSIM_GOLDEN_DIR`` if set, else ``tests/golden`` of the
    checkout this package runs from.  Installed wheels and sdists carry no corpora."""
    env = os.environ.get("WARPSIM_GOLDEN_DIR")
    if env:
        if not os.path.isdir(env):
            raise FileNotFoundError(f"WARPSIM_GOLDEN_DIR={env!r} is not a directory")
        return env
    here = repo_golden_dir()
    if here is None:
        raise FileNotFoundError(
            "no golden corpora here: they live in the repository's tests/golden/, not in the installed package; "
            "pass a corpus with `warpsim verify --corpus PATH`, or point WARPSIM_GOLDEN_DIR at a checkout's tests/golden")
    return here


def default_corpus() -> str:
    """Path of the H100 mma corpus (``corpus_sm90.npz`` in :func:`golden_dir`)."""
    path = os.path.join(golden_dir(), "corpus_sm90.npz")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no golden corpus at {path}; pass a corpus with `warpsim verify --corpus PATH`")
    return path


@dataclass
class EntryResult:
    opcode: str
    selector: int
    family: str
    sparse: bool
    words: int = 0
    differ: int = 0
    by_distribution: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.differ == 0


def skipped_distributions(ins) -> tuple[str, ...]:
    """Distributions whose hardware result warpsim does not model (none on sm_90)."""
    return ()


def replay_entry(entry: dict, arch: str = "sm_90") -> EntryResult:
    from ..isa.archs import available

    ins = BY_OPCODE[entry["opcode"]]
    res = EntryResult(ins.opcode, entry["selector"], ins.family, ins.is_sparse)
    if not available(ins, arch):
        res.error = f"not an opcode of {arch}"
        return res
    skip = skipped_distributions(ins)
    for name, start, count in entry["distributions"]:
        if name in skip:
            continue
        sl = slice(start, start + count)
        e = entry["e"][sl] if "e" in entry else None
        kw = {}
        if "s" in entry:   # block-scale registers, captured with the capture kernels' selectors
            from ..hw.capture import SCALE_SELECTORS

            s = entry["s"][sl]
            kw = dict(scale_a=np.ascontiguousarray(s[..., 0]), scale_b=np.ascontiguousarray(s[..., 1]),
                      byte_id_a=SCALE_SELECTORS[0], thread_id_a=SCALE_SELECTORS[1],
                      byte_id_b=SCALE_SELECTORS[2], thread_id_b=SCALE_SELECTORS[3])
        try:
            d = mma(ins.opcode, entry["a"][sl], entry["b"][sl], entry["c"][sl], e, selector=entry["selector"],
                    arch=arch, **kw)
        except NotImplementedError as exc:
            res.error = str(exc)
            return res
        bad = int(np.count_nonzero(d != entry["d"][sl]))
        res.words += d.size
        res.differ += bad
        res.by_distribution[name] = bad
    return res


def corpus_arch(manifest: dict) -> str:
    """The modelled target a corpus was captured on: the GPU's compute capability (the hardware
    wrote the words, whatever the build target), else its build target, else ``"sm_90"``;
    ValueError if that is not a modelled target (then pass ``arch`` explicitly)."""
    from ..numerics.arch import check_arch

    cc, target = manifest.get("compute_capability"), manifest.get("target")
    if cc and target:
        # an arch-specific build (sm_120a) on its own GPU (compute capability 12.0): the a-target,
        # whose catalog is the GPU's plus the arch-specific forms
        t = check_arch(target)
        if t.startswith(check_arch(cc)):
            return t
    return check_arch(cc or target or "sm_90")


def replay_wgmma(path, *, match=(), progress=False):
    """Replay a wgmma corpus (manifest entries with a ``spec``) through :func:`warpsim.wgmma`."""
    import json

    from ..api.wgmma import corpus_call, wgmma

    z = open_golden(path)
    man = z.manifest
    out = []
    items = [(i, e) for i, e in enumerate(man["entries"]) if all(m in e["spec"] for m in match)]
    for n, (i, ent) in enumerate(items):
        op, d, a, b, kw = corpus_call(z, i, ent["spec"])
        ins = BY_OPCODE[op]
        res = EntryResult(ent["spec"], 0, f"wg-{ins.family}", ins.is_sparse)
        got = wgmma(op, d, a, b, **kw)
        hw = z[f"{i}.dout"]
        res.words, res.differ = int(hw.size), int(np.count_nonzero(got != hw))
        for g, meta in enumerate(ent["meta"]):
            k = meta.get("dist") or meta.get("probe", "probe").split(" part")[0]
            res.by_distribution[k] = res.by_distribution.get(k, 0) + int(np.count_nonzero(got[g] != hw[g]))
        out.append(res)
        if progress:
            print(f"\r[{n + 1}/{len(items)}] {op}".ljust(100)[:100], end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return out


def replay(path=None, *, match=(), arch=None, progress=False):
    """Replay every corpus entry whose opcode contains all of ``match``; returns a list of EntryResult.
    ``arch`` (default: the architecture the corpus records) names the model to compare with.
    A wgmma corpus (``tests/golden/wgmma_sm90a*.npz``) is replayed through :func:`warpsim.wgmma`."""
    from ..hw import Corpus

    if path is not None:
        with open_golden(path) as z:
            first = (z.manifest or {}).get("entries", [])[:1]
        if first and "spec" in first[0]:
            return replay_wgmma(path, match=match, progress=progress)
    corpus = Corpus(path or default_corpus())
    if arch is None:
        arch = corpus_arch(corpus.manifest)
    out = []
    items = [(i, e) for i, e in enumerate(corpus.manifest["entries"]) if all(m in e["opcode"] for m in match)]
    for n, (i, _) in enumerate(items):
        out.append(replay_entry(corpus.entry(i), arch))
        if progress:
            print(f"\r[{n + 1}/{len(items)}] {out[-1].opcode}".ljust(100)[:100], end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return out


def summary_table(results) -> str:
    """Per-family table: entries, words compared, differing words, status."""
    fams = {}
    for r in results:
        key = (r.family, "sparse" if r.sparse else "dense")
        f = fams.setdefault(key, [0, 0, 0, 0, set()])
        f[0] += 1
        f[1] += r.words
        f[2] += r.differ
        f[3] += r.ok
        if r.error:
            f[4].add(r.error.split(":")[0][:60])
    lines = [f"{'family':<8} {'form':<7} {'entries':>7} {'words':>9} {'differ':>7}  status"]
    for (fam, form), (n, words, differ, ok, errs) in sorted(fams.items()):
        status = "bit-exact" if ok == n else (f"{n - ok} entries not modelled" if errs and differ == 0 else f"{n - ok} entries differ")
        lines.append(f"{fam:<8} {form:<7} {n:>7} {words:>9} {differ:>7}  {status}")
    return "\n".join(lines)
