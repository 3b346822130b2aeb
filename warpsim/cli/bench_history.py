"""The history of ``warpsim bench`` runs (one JSON line per run) and the vector-ISA label that keeps
its comparisons like with like."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path


HISTORY = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "history.jsonl"


def _commit() -> str:
    """The commit measured: ``git rev-parse --short HEAD``, with ``+dirty`` when the tree differs from it (a copy
    of a working tree laid over an older commit, as a remote machine gets it, is not that commit)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=here)
        head = out.stdout.strip()
        if not head:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=30, cwd=here)
        return head + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def save_history(report: dict, path=HISTORY) -> dict:
    """Append one line {commit, time, report} to the JSON-lines history file; returns the line's object."""
    entry = {"commit": _commit(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "report": report}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(entry) + "\n")
    return entry


def history_series(entries, isa=None) -> tuple[list, dict]:
    """(x labels, {row name: [rate or None per entry]}) from history entries: one-thread warp-MMAs
    per second of the families, multiply-adds per second of the paths, of the GEMMs.  A label is the
    commit and, where recorded, the vector ISA of the run; isa: only the runs of that ISA label
    (e.g. "AVX2", "AVX-512", "AVX2 on AVX-512"), so like is compared with like."""
    labels, series = [], {}
    if isa is not None:
        entries = [e for e in entries if isa_label(e["report"].get("machine", {})) == isa]
    for i, ent in enumerate(entries):
        label = isa_label(ent["report"].get("machine", {}))
        labels.append(f"{ent.get('commit', '?')}" + (f" {label}" if label else ""))
        rep = ent["report"]
        rates = {}
        for r in rep.get("families", []):
            if r.get("available"):
                rates[r["family"]] = r["one_thread"]["mma_per_s"]
        for r in rep.get("paths", []) or []:
            if r.get("available"):
                rates[r["path"]] = r["macs_per_s"]
        for r in rep.get("gemms", []) or []:
            if r.get("available"):
                rates[r["gemm"]] = r["macs_per_s"]
        for name, v in rates.items():
            series.setdefault(name, [None] * i).append(v)
        for name, vals in series.items():
            if len(vals) < i + 1:
                vals.append(None)
    return labels, series


def plot_history(path_svg, history=HISTORY, isa=None) -> int:
    """Draw rate per row over the commits of the history file (SVG, log scale; isa: only the runs of
    that vector ISA label, see history_series); returns the rows drawn."""
    from .svg import line_chart

    entries = [json.loads(x) for x in Path(history).read_text().splitlines() if x.strip()]
    if not entries:
        raise ValueError(f"{history} holds no benchmark runs (run warpsim bench --save first)")
    labels, series = history_series(entries, isa)
    if not labels:
        raise ValueError(f"{history} holds no benchmark runs of vector ISA {isa!r}")
    Path(path_svg).write_text(line_chart(series, labels, "warpsim bench: rate per row over commits",
                                         "per second (log scale)"))
    return len(series)



def isa_label(machine: dict) -> str:
    """The vector ISA the kernels of a run were compiled for, with the host's when they differ ("AVX2 on
    AVX-512"); "" for runs recorded before the ISA was."""
    if "codegen_isa" not in machine:
        return ""
    host, code = machine["host_isa"], machine["codegen_isa"]
    return code if code == host else f"{code} on {host}"


def _isa_note(machine: dict) -> str:
    label = isa_label(machine)
    return f"; {label} code ({machine['codegen_cpu']}), CPU {machine['cpu_model']} ({machine['host_cpu']})" \
        if label else ""
