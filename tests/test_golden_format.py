"""The compact golden format (warpsim.hw.golden): every committed capture reads back to the words
recorded when it was converted, regenerated inputs are checked against their hashes, and a changed
generator stream fails loudly, naming the file, the array and the generator."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from warpsim.hw import golden
from warpsim.hw.golden import GoldenStreamError, open_golden, save_golden, words_digest

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(str(p.relative_to(ROOT)) for p in list((ROOT / "tests" / "golden").glob("*.npz"))
               + list((ROOT / "tests" / "ptx" / "data").glob("*.npz")))


def test_every_committed_capture_is_compact():
    assert len(FILES) >= 21
    for f in FILES:
        assert open_golden(ROOT / f).compact, f"{f} is a plain .npz: write it with warpsim.hw.golden.save_golden"


@pytest.mark.parametrize("path", FILES)
def test_every_array_reads_back_to_its_recorded_words(path):
    """Each array's SHA-256 was taken from the words of the file it was converted from (or the
    capture that wrote it); decoding and regenerating must give those words exactly."""
    z = open_golden(ROOT / path)
    assert z.verify_digests() == []


def test_corpora_stay_within_the_size_budget():
    """tests/golden/README.md: committed captures at most 24 MB (16.0 MB converted + this round's)."""
    total = sum(os.path.getsize(ROOT / f) for f in FILES)
    assert total <= 24_000_000, f"committed captures take {total} bytes; the budget is 24 MB"


def test_tracked_tree_within_budget():
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    total = sum(os.path.getsize(ROOT / f.decode()) for f in files if f and (ROOT / f.decode()).exists())
    # 30 MB until the fourth round; the special-function tables the package runs on add 4 MB (README)
    assert total <= 34_000_000, f"the tracked tree is {total} bytes; the budget is 34 MB"


# --- the format itself, on small synthetic files ------------------------------------------------

def test_round_trip_of_stored_arrays(tmp_path):
    rng = np.random.default_rng(5)
    arrays = {"w": rng.integers(0, 2**32, (3, 32, 4), dtype=np.uint64).astype(np.uint32),
              "h": rng.integers(0, 2**16, 100, dtype=np.uint16), "q": np.arange(7, dtype=np.uint64) << np.uint64(40),
              "b": np.arange(9, dtype=np.uint8), "s": np.array([-1, 2, -3], np.int32),
              "manifest": np.array(json.dumps({"x": 1})), "empty": np.zeros((0, 4), np.uint32)}
    save_golden(tmp_path / "f.npz", arrays)
    z = open_golden(tmp_path / "f.npz")
    assert z.compact and set(z.files) == set(arrays)
    for k, v in arrays.items():
        assert z[k].dtype == v.dtype and z[k].shape == v.shape and np.array_equal(z[k], v), k
    assert z.manifest == {"x": 1} and z.verify_digests() == []


def test_plain_npz_reads_through_the_same_reader(tmp_path):
    np.savez(tmp_path / "old.npz", manifest=np.array('{"entries": []}'), **{"0.d": np.arange(4, dtype=np.uint32)})
    z = open_golden(tmp_path / "old.npz")
    assert not z.compact and z.manifest == {"entries": []} and list(z["0.d"]) == [0, 1, 2, 3]


def _corpus_entry(tmp_path, seed):
    from warpsim.hw.inputs import corpus_entry
    op = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    made = corpus_entry(op, 0, ["normal", "special"], 2, seed)
    recipe = {"generator": "mma_entry", "arrays": {"0.a": "a", "0.b": "b", "0.c": "c"},
              "args": {"opcode": op, "selector": 0, "distributions": ["normal", "special"], "warps": 2, "seed": seed}}
    arrays = {"0.a": made["a"], "0.b": made["b"], "0.c": made["c"], "0.d": np.arange(2 * 32 * 4, dtype=np.uint32)}
    return arrays, recipe


def test_recipes_are_not_stored_and_regenerate(tmp_path):
    arrays, recipe = _corpus_entry(tmp_path, 3)
    stats = save_golden(tmp_path / "c.npz", arrays, recipes=[recipe])
    assert stats["stored_words_bytes"] == arrays["0.d"].nbytes          # only the hardware's words
    z = open_golden(tmp_path / "c.npz")
    assert z.recipe("0.a")[0] == "mma_entry" and z.recipe("0.d") is None
    for k, v in arrays.items():
        assert np.array_equal(z[k], v)


def test_a_changed_generator_stream_fails_loudly_naming_the_corpus(tmp_path, monkeypatch):
    arrays, recipe = _corpus_entry(tmp_path, 3)
    save_golden(tmp_path / "c.npz", arrays, recipes=[recipe])
    from warpsim.hw import inputs

    real = inputs.generate

    def drifted(ins, selector, dist, warps, base_seed=0):      # a "numpy release" that changes the stream
        return real(ins, selector, dist, warps, base_seed + 1)

    monkeypatch.setattr(inputs, "generate", drifted)
    golden._run_generator.cache_clear()
    z = open_golden(tmp_path / "c.npz")
    with pytest.raises(GoldenStreamError, match=r"c\.npz\['0\.a'\] from generator mma_entry.*differ"):
        z["0.a"]
    assert np.array_equal(z["0.d"], arrays["0.d"])                 # stored words are unaffected
    golden._run_generator.cache_clear()


def test_writer_refuses_a_recipe_that_does_not_reproduce(tmp_path):
    arrays, recipe = _corpus_entry(tmp_path, 3)
    arrays["0.b"] = arrays["0.b"].copy()
    arrays["0.b"][0, 0, 0] ^= 1
    with pytest.raises(GoldenStreamError, match="does not reproduce '0.b'"):
        save_golden(tmp_path / "c.npz", arrays, recipes=[recipe])
    assert not (tmp_path / "c.npz").exists()


def test_only_registered_generators_run(tmp_path):
    save_golden(tmp_path / "x.npz", {"a": np.zeros(1, np.uint32)},
                recipes=[{"generator": "mma_entry", "args": {}, "arrays": {}}], check=False)
    with pytest.raises(GoldenStreamError, match="unknown input generator 'os.system'"):
        golden._generator("os.system")


def test_stream_digests_are_of_the_words():
    a = np.arange(4, dtype=np.uint32)
    assert words_digest(a) != words_digest(a.astype(np.uint64))     # dtype is part of the digest
    assert words_digest(a) != words_digest(a.reshape(2, 2))         # and the shape


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no golden file"):
        open_golden(tmp_path / "nope.npz")


def test_sdist_and_wheel_carry_no_captures(tmp_path):
    """The corpora stay in the repository: the source distribution (and so the wheel built from it)
    holds no capture file."""
    import tarfile

    import sys

    r = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta as b; print(b.build_sdist({str(tmp_path)!r}))"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    name = r.stdout.strip().splitlines()[-1]
    with tarfile.open(tmp_path / name) as t:
        names = t.getnames()
    assert any(n.endswith("warpsim/hw/golden.py") for n in names)
    # the special-function tables are the model itself (package data the MUFU rows read), not captures
    assert not [n for n in names if n.endswith(".npz") and "/numerics/sfu_data/" not in n]
    assert any(n.endswith("warpsim/numerics/sfu_data/tables.npz") for n in names)


@pytest.mark.parametrize("name", ["corpus_sm90.npz", "corpus_sm90_edge.npz", "wgmma_sm90a_numerics.npz",
                                  "wgmma_sp_sm90a.npz"])
def test_corpora_replay_from_the_compact_files_with_the_fast_paths_off(name):
    """WARPSIM_GENERIC=1 forces the exact kernels: the compact files replay bit for bit through them
    too (the other corpora: `WARPSIM_GENERIC=1 warpsim verify --corpus F` for each, recorded in
    tests/golden/README.md)."""
    import sys

    env = dict(os.environ, WARPSIM_GENERIC="1")
    r = subprocess.run([sys.executable, "-m", "warpsim", "verify", "-q", "--corpus", str(ROOT / "tests" / "golden" / name)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = [line.split() for line in r.stdout.splitlines()[2:] if line.strip()]
    assert rows and all(row[-1] == "bit-exact" and row[-2] == "0" for row in rows), r.stdout


def test_text_arrays_round_trip(tmp_path):
    """0-d strings (manifests) and arrays of strings (form names) come back as they went in."""
    arrays = {"manifest": np.array('{"a": 1}'), "names": np.array(["div.s32", "rem.u64", "ü"]),
              "grid": np.array([["a", "bb"], ["ccc", ""]])}
    save_golden(tmp_path / "t.npz", arrays)
    z = open_golden(tmp_path / "t.npz")
    for k, v in arrays.items():
        assert z[k].shape == v.shape and (z[k] == v).all() and z[k].dtype.kind == "U", k
    assert z.verify_digests() == []
