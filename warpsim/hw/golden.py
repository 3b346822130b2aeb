"""The one reader and writer of hardware-truth files (golden corpora).

A golden file is an ``.npz`` (a zip of ``.npy`` members) that keeps only what cannot be made
again: the words the GPU wrote, and inputs that came from elsewhere.  Inputs that a seeded
generator of :mod:`warpsim.hw` produced are stored as a *recipe* -- the generator's registered
name, its arguments and a SHA-256 of the words it produced at capture time -- and regenerated on
read.  A generator whose stream has changed (a numpy release, an edited generator) no longer
matches its hash, and reading the array raises :class:`GoldenStreamError` naming the file, the
array and the generator, instead of replaying against different inputs.

Stored words are grouped by element size, split into byte planes (all first bytes, then all
second bytes, ...) and compressed with LZMA, which is what compresses captured float words best
(measured on the corpora: about 15% below per-array zlib).

Readers see one mapping, whatever the file: :func:`open_golden` returns the same
``files`` / ``[name]`` / ``manifest`` interface for a compact file and for a plain ``.npz`` corpus
as the capture tools wrote them before (and as users' own captures may still be), so every corpus
(mma, wgmma, wgmma.sp, gemm, PTX captures, kernels) goes through this module.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import json
import lzma
import os
import zipfile
from collections.abc import Mapping

import numpy as np

FORMAT = "warpsim-golden/1"
HEADER = "__golden__"

#: Registered input generators: a stable name -> ``module:function`` (inside :mod:`warpsim.hw`).
#: A data file can only name these, never arbitrary code.  Each function takes the recorded
#: keyword arguments and returns ``{name: array}``.
GENERATORS = {
    "mma_entry": "warpsim.hw.inputs:corpus_entry",
    "wgmma_launch": "warpsim.hw.wgmma_cases:launch_inputs",
    "wgmma_sp_launch": "warpsim.hw.wgmma_sp_cases:launch_inputs",
    "gemm_set": "warpsim.hw.gemm_cases:set_arrays",
    "cutlass3_inputs": "warpsim.hw.gemm_cases:cutlass3_inputs",
    "ptx_capture_inputs": "warpsim.hw.ptx_cases:capture_inputs",
}


class GoldenStreamError(RuntimeError):
    """A generator no longer reproduces the inputs a golden file was captured with."""


def words_digest(a: np.ndarray) -> str:
    """SHA-256 (hex, 32 digits) of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:32]


def _generator(name: str):
    try:
        target = GENERATORS[name]
    except KeyError:
        raise GoldenStreamError(f"unknown input generator {name!r}; registered: {', '.join(sorted(GENERATORS))}") from None
    mod, fn = target.split(":")
    return getattr(importlib.import_module(mod), fn)


def _args_key(args: dict) -> str:
    return json.dumps(args, sort_keys=True)


@functools.lru_cache(maxsize=64)
def _run_generator(name: str, args_json: str) -> dict:
    out = _generator(name)(**json.loads(args_json))
    return {k: np.asarray(v) for k, v in out.items()}


def _shuffle(buf: np.ndarray, itemsize: int) -> bytes:
    if itemsize == 1:
        return buf.tobytes()
    return buf.reshape(-1, itemsize).T.tobytes()


def _unshuffle(data: bytes, itemsize: int) -> np.ndarray:
    b = np.frombuffer(data, np.uint8)
    if itemsize == 1:
        return b
    return b.reshape(itemsize, -1).T.reshape(-1)


def _is_text(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "U"


def _text_bytes(a: np.ndarray) -> tuple[str, np.ndarray]:
    """A text array as (kind, UTF-8 bytes): a 0-d string ("str", e.g. a JSON manifest) or an
    array of strings ("strs", stored as a JSON list)."""
    data = str(a) if a.ndim == 0 else json.dumps(a.tolist())
    return ("str" if a.ndim == 0 else "strs"), np.frombuffer(data.encode(), np.uint8)


def save_golden(path, arrays: Mapping[str, np.ndarray], *, recipes=(), info: dict | None = None, check=True) -> dict:
    """Write ``arrays`` compactly; each ``recipe`` names arrays that a generator makes again.

    ``recipes``: ``[{"generator": name, "args": {...}, "arrays": {stored_name: generator_key}}]``.
    With ``check`` (the default) every recipe is run now and must reproduce the given arrays word
    for word, so a file is never written that cannot be read back.  Returns size statistics.
    """
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    entries: dict[str, dict] = {}
    gens = []
    covered = set()
    for r in recipes:
        args = r["args"]
        gid = len(gens)
        gens.append({"generator": r["generator"], "args": args})
        made = _run_generator(r["generator"], _args_key(args)) if check else None
        for name, key in r["arrays"].items():
            if name not in arrays:
                raise KeyError(f"recipe names {name!r}, which is not among the arrays")
            a = arrays[name]
            if made is not None:
                g = made.get(key)
                if g is None or g.shape != a.shape or not np.array_equal(g.astype(a.dtype), a):
                    raise GoldenStreamError(f"{path}: generator {r['generator']}({args}) does not reproduce {name!r}")
            entries[name] = {"dtype": a.dtype.str, "shape": list(a.shape), "gen": gid, "key": key,
                             "sha256": words_digest(a)}
            covered.add(name)
    # stored arrays, grouped by element size into one LZMA stream each
    groups: dict[int, list[str]] = {}
    for name, a in arrays.items():
        if name in covered:
            continue
        if _is_text(a):
            kind, a = _text_bytes(a)
            entries[name] = {"dtype": kind, "shape": list(arrays[name].shape), "sha256": words_digest(a)}
        else:
            entries[name] = {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": words_digest(a)}
        arrays[name] = a
        groups.setdefault(a.dtype.itemsize, []).append(name)
    members = {}
    stats = {"stored_words_bytes": 0, "generated_bytes": 0}
    for itemsize, names in sorted(groups.items()):
        flat = [np.ascontiguousarray(arrays[n]).reshape(-1).view(np.uint8) for n in names]
        off = 0
        for n, f in zip(names, flat):
            entries[n].update(blob=f"blob{itemsize}", offset=off // itemsize, count=f.size // itemsize)
            off += f.size
        planes = [np.concatenate(flat) if flat else np.zeros(0, np.uint8)]
        data = lzma.compress(_shuffle(planes[0], itemsize), preset=9 | lzma.PRESET_EXTREME)
        members[f"blob{itemsize}"] = np.frombuffer(data, np.uint8)
        stats["stored_words_bytes"] += off
    stats["generated_bytes"] = sum(int(np.prod(e["shape"])) * np.dtype(e["dtype"]).itemsize
                                   for e in entries.values() if "gen" in e)
    header = {"format": FORMAT, "arrays": entries, "generators": gens, "info": info or {}}
    members[HEADER] = np.frombuffer(json.dumps(header, separators=(",", ":")).encode(), np.uint8)
    tmp = f"{path}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        for name, m in members.items():
            buf = io.BytesIO()
            np.save(buf, m, allow_pickle=False)
            z.writestr(name + ".npy", buf.getvalue())
    os.replace(tmp, path)
    stats["file_bytes"] = os.path.getsize(path)
    return stats


class GoldenFile(Mapping):
    """A golden file opened for reading: ``files``, ``f[name]``, ``manifest``, ``info``.

    Arrays are decoded (or regenerated and checked against their recorded hash) on first access.
    """

    def __init__(self, path):
        self.path = str(path)
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"no golden file at {self.path}")
        self._zip = np.load(self.path, allow_pickle=False)
        self.compact = HEADER in self._zip.files
        if self.compact:
            head = json.loads(bytes(self._zip[HEADER]).decode())
            if head.get("format") != FORMAT:
                raise ValueError(f"{self.path}: golden format {head.get('format')!r}, this warpsim reads {FORMAT!r}")
            self._entries = head["arrays"]
            self._gens = head["generators"]
            self.info = head.get("info", {})
            self.files = list(self._entries)
        else:
            self._entries, self._gens, self.info = {}, [], {}
            self.files = list(self._zip.files)
        self._blobs: dict[str, np.ndarray] = {}

    # --- Mapping ---
    def __getitem__(self, name):
        if not self.compact:
            return self._zip[name]
        try:
            e = self._entries[name]
        except KeyError:
            raise KeyError(f"{name!r} is not in {self.path}") from None
        if "gen" in e:
            return self._generated(name, e)
        blob = self._blob(e["blob"])
        itemsize = 1 if e["dtype"] in ("str", "strs") else np.dtype(e["dtype"]).itemsize
        raw = blob[e["offset"] * itemsize:(e["offset"] + e["count"]) * itemsize]
        if e["dtype"] == "str":
            return np.array(bytes(raw).decode())
        if e["dtype"] == "strs":
            return np.array(json.loads(bytes(raw).decode()), dtype=str).reshape(e["shape"])
        return raw.copy().view(np.dtype(e["dtype"])).reshape(e["shape"])

    def __iter__(self):
        return iter(self.files)

    def __len__(self):
        return len(self.files)

    def __contains__(self, name):
        return name in self.files

    # --- context manager, like numpy's NpzFile ---
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._zip.close()

    @property
    def manifest(self):
        """The capture's own manifest (JSON stored under ``manifest``), parsed; None without one."""
        if "manifest" not in self.files:
            return None
        m = self["manifest"]
        return json.loads(bytes(m).decode() if m.dtype == np.uint8 else str(m))

    def recipe(self, name):
        """(generator name, args) that make ``name`` again, or None for stored words."""
        e = self._entries.get(name, {})
        if "gen" not in e:
            return None
        g = self._gens[e["gen"]]
        return g["generator"], g["args"]

    def _blob(self, key):
        if key not in self._blobs:
            data = lzma.decompress(bytes(self._zip[key]))
            self._blobs[key] = _unshuffle(data, int(key[4:]))
        return self._blobs[key]

    def _generated(self, name, e):
        g = self._gens[e["gen"]]
        made = _run_generator(g["generator"], _args_key(g["args"]))
        a = made.get(e["key"])
        where = f"{os.path.basename(self.path)}[{name!r}] from generator {g['generator']}({g['args']})"
        if a is None:
            raise GoldenStreamError(f"{where}: the generator no longer makes {e['key']!r}")
        a = a.astype(np.dtype(e["dtype"]), copy=False)
        if list(a.shape) != e["shape"] or words_digest(a) != e["sha256"]:
            raise GoldenStreamError(
                f"{where}: the generated words differ from those captured on the hardware (recorded "
                f"sha256 {e['sha256']}, now {words_digest(a)}, shape {list(a.shape)} vs {e['shape']}). "
                "A numpy release or an edit changed the generator's stream; restore it, or re-capture.")
        a = a.copy()
        a.setflags(write=True)
        return a

    def verify_digests(self):
        """Decode every array and compare with the digest recorded when the file was written.

        Returns the list of names whose words differ (empty when the file reads back exactly)."""
        bad = []
        for name, e in self._entries.items():
            a = self[name]
            if e["dtype"] in ("str", "strs"):
                a = _text_bytes(a)[1]
            if words_digest(a) != e["sha256"]:
                bad.append(name)
        return bad


def open_golden(path) -> GoldenFile:
    """Open a golden file (compact or a plain capture ``.npz``) for reading."""
    return GoldenFile(path)


def repo_golden_dir():
    """``tests/golden`` of the checkout this package was imported from, or None (installed wheels
    carry no corpora)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    d = os.path.join(here, "tests", "golden")
    return d if os.path.isdir(d) else None
