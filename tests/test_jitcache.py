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
