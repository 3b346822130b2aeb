"""`warpsim bench --quick` runs end to end and reports every family (no timing assertions)."""

import json

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
