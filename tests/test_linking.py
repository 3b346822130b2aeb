"""engine/linking.py's link-only helpers: built only to be linked into their callers (no machine code of their own)."""

import numpy as np
import pytest
from numba import njit

from warpsim.engine import linking


@linking.link_only
@njit(nogil=True)
def _sum_of_squares(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * x[i]
    return s


@njit(nogil=True)
def _plus_one(x):
    return _sum_of_squares(x) + 1.0


@linking.link_only
@njit(nogil=True)
def _halves(x):
    return x * 0.5


def _in_the_jit(cres):
    return cres.library._codegen._engine.is_symbol_defined(cres.fndesc.llvm_func_name)


def test_a_link_only_helper_runs_in_its_caller_without_code_of_its_own():
    assert _plus_one(np.arange(5.0)) == 31.0
    (helper,) = _sum_of_squares.overloads.values()
    (caller,) = _plus_one.overloads.values()
    assert helper.library._warpsim_link_only and not _in_the_jit(helper)
    assert not caller.library._warpsim_link_only and _in_the_jit(caller)


def test_a_link_only_helper_called_from_python_first_gets_an_ordinary_build():
    assert _halves(3.0) == 1.5
    (cres,) = _halves.overloads.values()
    assert not cres.library._warpsim_link_only and _in_the_jit(cres)


def test_a_cached_function_is_not_link_only():
    with pytest.raises(ValueError, match="cache=True"):
        linking.link_only(njit(cache=True)(_sum_of_squares.py_func))
