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


def test_a_debug_or_bounds_checked_build_is_stamped_apart_from_a_plain_one(monkeypatch):
    """numba's cache key leaves out debug info and bounds checks: a build made under NUMBA_ENABLE_PROFILING was
    loaded by later plain processes (a compiled sm_80 GEMM's launches 3x slower).  They join the stamp of the
    package's builds and the compiled kernels' host key (jitcache.build_flags)."""
    from numba.core import config

    from warpsim.ptx.native import kernel

    host_key = kernel._host.__wrapped__            # (remembered a process: the flags are its environment's)
    plain, host = _stamp(rt.find), host_key()
    for flag in ("DEBUGINFO_DEFAULT", "BOUNDSCHECK"):
        with monkeypatch.context() as m:
            m.setattr(config, flag, 1)
            assert _stamp(rt.find)[:2] == plain[:2] and _stamp(rt.find) != plain, flag
            assert host_key() != host, flag
    assert _stamp(rt.find) == plain and host_key() == host


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


def test_kernels_cached_by_two_processes_each_run_their_own_callees(tmp_path):
    """Two processes compiled one factory's closures (one qualified name, one argument type, different code) into
    two cached kernels, each in the same order, so numba gave both closures the same serial and so the same
    symbol; a third process loading both kernels ran the first one's closure in the second (seen: 644 for both,
    where the second is 1242).  With the package's function ids numbered from a random start
    (jitcache._process_unique_ids), each kernel runs its own."""
    import os
    import subprocess
    import sys
    import textwrap

    import warpsim

    (tmp_path / "factory.py").write_text(textwrap.dedent("""
        import warpsim
        import numpy as np
        from numba import njit


        def make(k):
            @njit
            def call(x):
                a = np.empty(x, np.int64)
                s = 0
                for i in range(x):
                    a[i] = (i * 7 + k) % 13
                for j in range(3):
                    for i in range(x):
                        s += a[i] * (j + k) ^ (s >> 3)
                        if s > 1000000:
                            s //= 7
                return s
            return call
        """))
    for k in (1, 2):
        (tmp_path / f"kernel{k}.py").write_text(
            f"from numba import njit\nfrom factory import make\nc = make({k})\n\n\n@njit(cache=True)\ndef kern(x):\n"
            "    return c(x)\n")
    root = os.path.dirname(os.path.dirname(warpsim.__file__))      # the package under test
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), root, os.environ.get("PYTHONPATH", "")]))

    def run(code):
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    own = [run(f"import kernel{k}; print(kernel{k}.kern(10))")[0] for k in (1, 2)]      # compiled, cached
    truth = run("import factory; print(factory.make(1)(10), factory.make(2)(10))")
    assert own == truth == ["644", "1242"], (own, truth)
    assert run("import kernel1, kernel2; print(kernel1.kern(10), kernel2.kern(10))") == truth     # both loaded


def test_a_forked_child_numbers_its_functions_apart_from_its_parent():
    """A forked child (the device's sweeps fork their workers) would go on from its parent's function ids, as a
    second child would: jitcache draws it a start of its own (os.register_at_fork)."""
    import subprocess
    import sys

    code = """
import os, sys
import warpsim
from numba.core import bytecode
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, str(next(bytecode.FunctionIdentity._unique_ids)).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(next(bytecode.FunctionIdentity._unique_ids), os.read(r, 64).decode())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    parent, child = (int(x) for x in done.stdout.split())
    assert abs(parent - child) >= jitcache._ID_SPACING - 1, (parent, child)
