"""The package's folders are its layers: no import cycle, and no import that goes up.

Every ``import`` statement of every module under ``warpsim/`` is read with ``ast`` -- at module
level and inside functions alike, since a lazy import is still a dependency -- and resolved to
the warpsim module it names.  The layer order (lowest first) is::

    isa <- numerics <- engine <- {ptx, hw} <- api <- warpsim (the facade __init__) <- {triton, cuda}
        <- {cli, hw.offline, hw.device} <- hw.__main__ <- __main__

A module may import modules of its own folder and of lower layers; ``ptx`` and ``hw`` share a
rank and may not import each other.  Cycles are looked for among modules, within a folder too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "warpsim"

#: rank of each top-level folder (and of the facade and __main__); imports go to lower ranks only
LAYERS = {"isa": 0, "numerics": 1, "engine": 2, "ptx": 3, "hw": 3, "api": 4, "": 5, "cli": 6, "__main__": 7,
          # workstation tools run after a GPU capture (packing, replay, fitting): they use the public API
          "hw.offline": 6,
          # scripts run on the GPU machine (captures, the exhaustive SFU sweep): like offline/, they may compare the
          # GPU's words with any model the package has (hw/device/sfu_sweep.py runs ptx/sfu_ops.py's rows), and
          # `python -m warpsim.hw` (hw/__main__.py) dispatches to them, from above
          "hw.device": 6, "hw.__main__": 6.5,
          # the Triton front end (the public module warpsim.triton): uses the facade, the CLI uses it
          "triton": 5.5,
          # the CUDA C++ / numba-cuda front end (the public module warpsim.cuda): over warpsim.ptx, the CLI uses it
          "cuda": 5.5}

#: known upward imports that this test tolerates for now, each with the reason.  An entry here
#: is a debt, not a rule: remove it when the import is gone.
#: imports against the layer order that are accepted, each with its reason (none today)
TOLERATED: dict = {}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = PKG) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """(imported warpsim module, line) for every import statement in the file, lazy ones included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "warpsim":
                    found.append((_deepest(alias.name, known), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "warpsim":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"   # `from pkg import submodule` names the submodule
                found.append((sub if sub in known else _deepest(target, known), node.lineno))
    return found


def _deepest(dotted: str, known: set[str]) -> str:
    parts = dotted.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    if not parts:
        raise AssertionError(f"import of {dotted!r}: no such warpsim module")
    return ".".join(parts)


def graph(root: Path = PKG) -> dict[str, list[tuple[str, int]]]:
    """module -> [(imported module, line)], warpsim modules only, self-imports dropped."""
    mods = modules(root)
    known = set(mods)
    return {name: sorted({(t, ln) for t, ln in imports(name, path, known) if t != name}) for name, path in mods.items()}


def layer(name: str) -> tuple[int, str]:
    """(rank, folder) of a module: warpsim.engine.kernel -> (2, 'engine'); the facade -> (5, '')."""
    parts = name.split(".")
    folder = parts[1] if len(parts) > 1 else ""
    if ".".join(parts[1:3]) in LAYERS:          # a sub-folder with a layer of its own
        folder = ".".join(parts[1:3])
    if folder not in LAYERS:
        raise AssertionError(f"{name}: folder {folder!r} has no layer; add it to LAYERS (known: {sorted(LAYERS)})")
    return LAYERS[folder], folder


def upward_imports(g) -> list[str]:
    """'module:line imports target (folder -> folder)' for every import of a higher or sibling layer."""
    bad = []
    for src, edges in g.items():
        (rs, fs) = layer(src)
        for dst, line in edges:
            rd, fd = layer(dst)
            if fd != fs and rd >= rs:
                bad.append((src, dst, f"{src}:{line} imports {dst} ({fs or 'warpsim'} -> {fd or 'warpsim'})"))
    return bad


def cycles(g) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def _cycle_report(g, comp) -> str:
    inside = set(comp)
    return "; ".join(f"{s}:{ln} -> {d}" for s in comp for d, ln in g[s] if d in inside)


# --- the package --------------------------------------------------------------------------------

def test_every_module_parses_and_has_a_layer():
    g = graph()
    assert "warpsim.engine.kernel" in g and "warpsim.api.mma" in g and "warpsim.cli.main" in g
    for name in g:
        layer(name)


def test_no_import_cycle():
    g = graph()
    found = cycles(g)
    assert not found, "import cycles: " + " | ".join(_cycle_report(g, c) for c in found)


def test_no_import_goes_up_the_layers():
    bad = [msg for src, dst, msg in upward_imports(graph()) if (src, dst) not in TOLERATED]
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_tolerated_imports_are_named_with_a_reason():
    assert isinstance(TOLERATED, dict)
    for (src, dst), why in TOLERATED.items():
        assert src.startswith("warpsim.") and dst.startswith("warpsim.") and why


# --- the checker on synthetic packages: it must be able to fail ----------------------------------

def _package(tmp_path, files: dict[str, str]) -> Path:
    root = tmp_path / "warpsim"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
    return root


def test_checker_finds_a_lazy_cycle(tmp_path):
    root = _package(tmp_path, {
        "engine/kernel.py": "from .tensorcore import x\n",
        "engine/tensorcore.py": "def f():\n    from .kernel import _named\n",
        "engine/gemm.py": "from .kernel import y\n",
    })
    g = graph(root)
    assert cycles(g) == [["warpsim.engine.kernel", "warpsim.engine.tensorcore"]]
    assert "warpsim.engine.tensorcore:2 -> warpsim.engine.kernel" in _cycle_report(g, cycles(g)[0])


def test_checker_finds_upward_and_sibling_imports(tmp_path):
    root = _package(tmp_path, {
        "isa/layouts.py": "import numpy\nfrom . import bits\n",
        "isa/bits.py": "",
        "api/mma.py": "from ..engine import kernel\n",
        "engine/kernel.py": "from ..isa.layouts import pack\n",
        "ptx/regfile.py": "def run():\n    x = 1\n    from ..api.mma import mma\n",
        "hw/gemm.py": "import warpsim.ptx.regfile\n",
        "cli/main.py": "from .. import api\nfrom warpsim.api import mma\n",
    })
    msgs = [m for _, _, m in upward_imports(graph(root))]
    assert msgs == ["warpsim.hw.gemm:1 imports warpsim.ptx.regfile (hw -> ptx)",
                    "warpsim.ptx.regfile:3 imports warpsim.api.mma (ptx -> api)"], msgs
    assert cycles(graph(root)) == []


def test_checker_rejects_an_unknown_folder(tmp_path):
    root = _package(tmp_path, {"extra/thing.py": "", "isa/a.py": "from .missing import x\n"})
    with pytest.raises(AssertionError, match="folder 'extra' has no layer"):
        layer("warpsim.extra.thing")
    g = graph(root)
    assert ("warpsim.isa", 1) in g["warpsim.isa.a"]   # an unknown submodule resolves to its package
