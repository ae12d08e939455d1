"""scripts/variant_table.py without pyperf runs: which benchmarks variants share, and the
table's bytes and sums on given medians."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("variant_table",
                                              ROOT / "scripts" / "variant_table.py")
vt = importlib.util.module_from_spec(spec)
sys.modules["variant_table"] = vt
spec.loader.exec_module(vt)


def test_variants_that_cannot_differ_share_a_benchmark():
    assert vt.bench_key("build", 16, "send", "packed", "zipf") == \
        ("build", 16, "send", "pickle", "uniform")
    assert vt.bench_key("encode r2s", 16, "cached", "packed", "zipf") == \
        ("encode r2s", 16, "send", "pickle", "zipf")
    assert vt.bench_key("decode s2r", 16, "cached", "packed", "zipf") == \
        ("decode s2r", 16, "cached", "packed", "uniform")
    assert vt.bench_key("decode s2r", 16, "send", "packed", "zipf") == \
        ("decode s2r", 16, "send", "packed", "zipf")
    keys = {vt.bench_key(w, *v) for v in vt.variants(vt.BATCH_SIZES) for w in vt.WHATS}
    # slots and replicated build msgpack's Structs: their build is msgpack's
    assert vt.bench_key("build", 16, "send", "slots", "zipf") == \
        ("build", 16, "send", "msgpack", "uniform")
    assert len(keys) == 250


def test_table_rows_at_one_running_request(capsys):
    means = {vt.bench_name(vt.bench_key(w, 1, p, c, t)): 1e-6
             for p in vt.POLICIES for c in vt.CODECS for t in vt.TOKEN_IDS for w in vt.WHATS}
    vt.print_table([1], means, only=["send msgpack uniform", "send packed uniform"])
    vt.print_compact([1], {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[2:4] == [
        "| 1 | send | msgpack | uniform | 112 | 97 | 1.0 | 1.0 | 1.0 | 1.0 | 1.0 | 5.0 |",
        "| 1 | send | packed | uniform | 250 | 381 | 1.0 | 1.0 | 1.0 | 1.0 | 1.0 | 5.0 |"]
    assert lines[7:9] == ["| 1 | msgpack | uniform | 112 | 108 | 97 | - | - |",
                          "| 1 | msgpack | zipf | 112 | 108 | 97 | - | - |"]
    # slots: a 28-byte step under cached (nothing per request), 4 more per token id
    # under send; replicated: 18 bytes (step, no arrival, 8-byte digest); both reply
    # 4 bytes per token in 12
    assert lines[13:17] == ["| 1 | slots | uniform | 32 | 28 | 12 | - | - |",
                            "| 1 | slots | zipf | 32 | 28 | 12 | - | - |",
                            "| 1 | replicated | uniform | 18 | 18 | 12 | - | - |",
                            "| 1 | replicated | zipf | 18 | 18 | 12 | - | - |"]


def test_figure_is_a_png(tmp_path):
    means = {vt.bench_name(vt.bench_key(w, b, p, c, "uniform")): 1e-6
             for b in (1, 16) for p in vt.POLICIES for c in vt.CODECS for w in vt.WHATS}
    vt.plot([1, 16], means, str(tmp_path / "v.png"))
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stateful_codecs_time_consecutive_steps():
    """slots and replicated cannot repeat one step: each loop is the next whole step,
    and the case restarts (untimed) every RESTART steps."""
    for codec in ("slots", "replicated"):
        for what in ("encode s2r", "decode s2r", "encode r2s", "decode r2s"):
            call = vt._call(what, 4, "send", codec, "uniform")
            assert isinstance(call, vt._Stateful)
            call.RESTART = 2
            assert call.run(3) > 0 and call.left == 1
            assert call.sched.step == vt.STEPS  # restarted once: steps 0..59, then one
