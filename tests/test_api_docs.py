"""The API reference: every public name has a docstring with an example, every example runs as a
doctest, and the reference (pdoc, from the docstrings) builds without a warning.

Public names: ``__all__`` of :mod:`warpsim`, :mod:`warpsim.ptx`, :mod:`warpsim.triton` and
:mod:`warpsim.cuda`.  A function or class carries its example in its own docstring; a data name
(``CATALOG``, ``__version__``, ``TARGETS``) in its module's docstring.  The examples assume
``import numpy as np, warpsim`` (given to every doctest, as the reference says).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import re
import warnings

import numpy as np
import pytest

import warpsim
from warpsim.cli import docs as _docs

#: the public modules and the optional distribution each needs (CI installs them all with `.[test]`)
MODULES = {"warpsim": None, "warpsim.ptx": None, "warpsim.triton": "triton", "warpsim.cuda": "numba_cuda"}


def _available(dist):
    return dist is None or importlib.util.find_spec(dist) is not None


def _public():
    """(module name, public name, object) for every name of every public module, each object once."""
    seen, out = set(), []
    for mod_name, dist in MODULES.items():
        if not _available(dist):
            continue
        mod = importlib.import_module(mod_name)
        for name in mod.__all__:
            obj = getattr(mod, name)
            key = id(obj) if (inspect.isroutine(obj) or inspect.isclass(obj)) else (mod_name, name)
            if key not in seen:
                seen.add(key)
                out.append((mod_name, name, obj))
    return out


PUBLIC = _public()
_DATA = [(m, n) for m, n, o in PUBLIC if not (inspect.isroutine(o) or inspect.isclass(o))]


def _run(obj, name, module=None):
    finder = doctest.DocTestFinder(recurse=False)
    tests = finder.find(obj, name, module=module, extraglobs={"np": np, "warpsim": warpsim})
    tests = [t for t in tests if t.examples]
    assert tests, f"{name}: no example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for t in tests:
        runner.run(t, out=report.append)
    if runner.failures:
        pytest.fail("".join(report))


def test_public_names_are_all_covered():
    names = {f"{m}.{n}" for m, n, _ in PUBLIC}
    assert {"warpsim.mma", "warpsim.gemm", "warpsim.ptx.load", "warpsim.CATALOG"} <= names
    assert len(PUBLIC) >= 25


@pytest.mark.parametrize("mod_name,name,obj", [pytest.param(*p, id=f"{p[0]}.{p[1]}") for p in PUBLIC
                                               if inspect.isroutine(p[2]) or inspect.isclass(p[2])])
def test_public_name_has_a_docstring_with_a_running_example(mod_name, name, obj):
    doc = inspect.getdoc(obj) or ""
    assert ">>>" in doc, f"{mod_name}.{name}: add an example (>>>) to its docstring"
    _run(obj, f"{mod_name}.{name}", module=inspect.getmodule(obj))


@pytest.mark.parametrize("mod_name,name", [pytest.param(m, n, id=f"{m}.{n}") for m, n in _DATA])
def test_public_data_is_shown_in_its_module_docstring(mod_name, name):
    mod = importlib.import_module(mod_name)
    assert re.search(rf"^\s*>>> .*\b{re.escape(name)}\b", mod.__doc__ or "", re.M), \
        f"{mod_name}.{name}: show it in an example of {mod_name}'s docstring"


@pytest.mark.parametrize("mod_name", [m for m in MODULES if _available(MODULES[m])])
def test_module_docstring_examples_run(mod_name):
    mod = importlib.import_module(mod_name)
    if ">>>" in (mod.__doc__ or ""):
        _run(mod, mod_name, module=mod)


def test_api_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("pdoc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pages = _docs.build_api_reference(tmp_path)
    assert not caught, "\n".join(f"{w.category.__name__}: {w.message}" for w in caught)
    text = (tmp_path / "warpsim.html").read_text()
    for name in ("mma", "gemm", "wgmma", "parse", "Warp"):
        assert f'id="{name}"' in text, name
    assert {p.name for p in pages} >= {"warpsim.html", "ptx.html"}
