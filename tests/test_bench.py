"""`warpsim bench --quick` runs end to end and reports every family (no timing assertions)."""

import json

import pytest

from warpsim.cli import bench as _bench


def test_bench_quick_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert _bench.main(["--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [r["family"] for r in report["families"]]
    assert names == [name for name, _ in _bench.FAMILIES]
    for row in report["families"]:
        assert row["opcode"]
        if row["available"]:
            for key in ("one_thread", "all_cores"):
                assert row[key]["mma_per_s"] > 0
            assert row["numpy_f64_seconds"] > 0 and row["ratio_one_thread"] > 0
            # the input-class axis: ordinary always, subnormal for floats only, overflow not for b1
            cls = row["classes"]
            assert set(cls) <= set(_bench.CLASSES) and {"ordinary", "random", "special"} <= set(cls)
            assert ("subnormal" in cls) == (row["kind"] == "float")
            for x in cls.values():
                assert x["one_thread"]["mma_per_s"] > 0 and x["all_cores"]["ratio_to_numpy"] > 0
            assert row["worst_class"] in cls and row["class_spread"] >= 1.0
        else:
            assert row["reason"]
    assert "input classes" in capsys.readouterr().out
    assert {"import_s", "first_mma_cold_cache_s", "first_mma_warm_cache_s"} <= set(report["startup"])
    gemms = report["gemms"]
    assert [g["opcode"] for g in gemms] == list(dict.fromkeys(op for _, op, _, _ in _bench.GEMMS))
    for g in gemms:
        assert g["available"], g
        assert g["n"] == 128 and g["warpsim_s"] > 0 and g["numpy_f64_s"] > 0 and g["ratio"] > 0
    mem = report["memory"]
    assert mem["peak_rss_bytes"] > 0 and mem["warps"] > 0
    gm = report["gemm_memory"]
    assert gm["n"] == 256 and gm["peak_rss_bytes"] >= gm["rss_before_operands_bytes"] > 0
    assert gm["extra_bytes"] == gm["peak_rss_bytes"] - gm["rss_before_operands_bytes"] - gm["operand_and_result_bytes"]
    # the saved report renders as the README's Markdown tables without measuring again
    assert _bench.main(["--report", str(out), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.count("| --- ") >= 3 and all(f"| {name} |" in md for name, _ in _bench.FAMILIES)
    assert all(f"| {name} |" in md for name, *_ in _bench.PATHS) and "beyond its operands" in md
    paths = report["paths"]
    assert [p["path"] for p in paths] == [name for name, *_ in _bench.PATHS]
    for p in paths:
        assert p["available"], p
        assert p["macs_per_s"] > 0 and p["ratio"] > 0 and p["reference"]


def test_bench_history_save_and_plot(tmp_path):
    """--save appends one line per run with the commit; --plot draws one polyline per row over them."""
    hist = tmp_path / "history.jsonl"
    args = ["--quick", "--warps", "64", "--family", "tf32", "--family", "sm_89 fp8->f32", "--classes", "ordinary",
            "--no-startup", "--no-memory", "--no-gemm", "--save", str(hist)]
    assert _bench.main(args) == 0
    assert _bench.main(args) == 0
    lines = [json.loads(x) for x in hist.read_text().splitlines()]
    assert len(lines) == 2 and all(x["commit"] and x["report"]["families"] for x in lines)
    labels, series = _bench.history_series(lines)
    assert len(labels) == 2 and set(series) == {"tf32 m16n8k8", "sm_89 fp8->f32 m16n8k32"}
    assert all(len(v) == 2 and all(x > 0 for x in v) for v in series.values())
    svg = tmp_path / "h.svg"
    assert _bench.main(["--plot", str(svg), "--history", str(hist)]) == 0
    text = svg.read_text()
    assert text.startswith("<svg") and text.count("<polyline") == 2 and "sm_89 fp8" in text
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no benchmark runs"):
        _bench.main(["--plot", str(svg), "--history", str(empty)])


def test_readme_speed_tables_are_the_committed_report():
    """The README's speed tables are the committed full report rendered (no hand-edited figures), and
    that report measured every row the bench defines."""
    from pathlib import Path

    report = json.loads(_bench.SPEED_REPORT.read_text())
    text = (Path(_bench.__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split(_bench.README_BEGIN, 1)[1].split(_bench.README_END, 1)[0].strip("\n")
    assert block == _bench.format_markdown(report).rstrip("\n")
    assert not report["quick"]
    assert [r["family"] for r in report["families"]] == [n for n, _ in _bench.FAMILIES]
    assert [r["path"] for r in report["paths"]] == [n for n, *_ in _bench.PATHS]
    assert [r["gemm"] for r in report["gemms"]] == [n for n, *_ in _bench.GEMMS]
    assert all(r["available"] for r in report["families"] + report["paths"] + report["gemms"])
    assert report["memory"]["warps"] == 1_000_000 and report["gemm_memory"]["n"] == 4096


def test_bench_sfu_rows(tmp_path, capsys):
    """One row per special-function family: words/s and the ratio to numpy's function of the same inputs."""
    from warpsim.cli import bench_sfu

    out = tmp_path / "sfu.json"
    assert _bench.main(["--quick", "--family", "sfu", "--no-startup", "--no-memory", "--no-gemm", "--no-paths",
                        "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["families"] == []
    rows = report["sfu"]
    assert [r["family"] for r in rows] == [name for name, *_ in bench_sfu.ROWS]
    for r in rows:
        for key in ("one_thread", "all_cores"):
            assert r[key]["words_per_s"] > 0 and r[key]["numpy_words_per_s"] > 0
        assert r["ratio_one_thread"] > 0 and r["meets_ratio"] == (r["ratio_one_thread"] <= bench_sfu.TARGET_RATIO)
    assert "special function" in capsys.readouterr().out
    assert _bench.main(["--report", str(out), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert all(f"| {name} | `{form}` |" in md for name, form, *_ in bench_sfu.ROWS)
