"""The package's numba cache is keyed by the sources its kernels may inline (engine/jitcache.py): an edit to a
callee in another file must recompile the kernels above it, not load machine code built from the old source."""

from numba import njit
from numba.core import caching

from warpsim.engine import hostfpu, jitcache
from warpsim.ptx.native import rt


def _stamp(fn):
    loc = caching.FunctionCache(fn.py_func)._impl.locator
    assert type(loc).__name__.startswith("Stamped"), type(loc).__name__
    return loc.get_source_stamp()


def test_package_kernels_are_stamped_with_the_sources_of_their_layer_and_those_below():
    engine, ptx = jitcache._STAMPS
    assert _stamp(hostfpu.fp_env_ok)[1] == engine[1]
    assert _stamp(rt.find)[1] == ptx[1] != engine[1]


def test_an_edit_in_the_engine_changes_the_stamps_of_the_engine_and_of_the_ptx_runtime(monkeypatch):
    before_engine, before_ptx = _stamp(hostfpu.fp_env_ok), _stamp(rt.find)
    real = jitcache._layer_files
    # as if a file of the engine layer held other source
    monkeypatch.setattr(jitcache, "_layer_files", lambda layer: real(layer) + [__file__] * ("engine" in layer))
    monkeypatch.setattr(jitcache, "_STAMPS", jitcache._layer_stamps())
    after_engine, after_ptx = _stamp(hostfpu.fp_env_ok), _stamp(rt.find)
    assert after_engine[0] == before_engine[0] and after_engine[1] != before_engine[1]
    assert after_ptx[0] == before_ptx[0] and after_ptx[1] != before_ptx[1]


def test_an_edit_in_the_ptx_layer_leaves_the_engine_stamp_alone(monkeypatch):
    before_engine, before_ptx = _stamp(hostfpu.fp_env_ok), _stamp(rt.find)
    real = jitcache._layer_files
    monkeypatch.setattr(jitcache, "_layer_files", lambda layer: real(layer) + [__file__] * ("ptx" in layer))
    monkeypatch.setattr(jitcache, "_STAMPS", jitcache._layer_stamps())
    assert _stamp(hostfpu.fp_env_ok) == before_engine
    assert _stamp(rt.find)[1] != before_ptx[1]


def test_a_function_outside_the_package_keeps_numbas_own_locator():
    @njit(cache=True)
    def f(x):
        return x + 1

    loc = caching.FunctionCache(f.py_func)._impl.locator
    assert not type(loc).__name__.startswith("Stamped")


def test_two_processes_building_for_two_cpus_at_once_keep_both_cache_entries(tmp_path):
    """numba read, extended and wrote a function's cache index without a lock: of two processes compiling the same
    functions at once for two CPUs (the host's build and an AVX2 one), the later write dropped the other's entry
    for most functions (26 of 40 in a trial) and the next process compiled them again.  Saved under the index's
    lock (jitcache._locked_save), every index keeps both entries, each naming a data file of its own."""
    import os
    import subprocess
    import sys

    from warpsim.engine.hostisa import avx2_environment

    n = 30
    body = "".join(f"\n@njit(cache=True)\ndef f{i}(x):\n    s = 0\n    for j in range(x):\n        s += j * {i} + (j >> 3)\n"
                   f"    return s\n" for i in range(n))
    (tmp_path / "racing.py").write_text("from numba import njit\n" + body)
    code = f"import warpsim, racing\nfor i in range({n}):\n    getattr(racing, f'f{{i}}')(10)\n"
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = [subprocess.Popen([sys.executable, "-c", code], env=e, cwd=tmp_path, stderr=subprocess.PIPE)
            for e in (env, dict(env, **avx2_environment()))]
    for p in runs:
        err = p.communicate(timeout=600)[1]
        assert p.returncode == 0, err.decode()[-2000:]
    sys.path.insert(0, str(tmp_path))
    try:
        import racing
    finally:
        sys.path.remove(str(tmp_path))
    for i in range(n):
        index = getattr(racing, f"f{i}")._cache._cache_file._load_index()
        assert len(index) == 2 and len(set(index.values())) == 2, (i, index)
