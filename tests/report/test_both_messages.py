"""The findings' encode, decode and build clauses quote both messages of a step summed
(the scheduler's SchedulerOutput and the runner's ModelRunnerOutput:
``encode_ns_per_step``, ``decode_ns_per_step``, ``build_ns_per_step``), so they name
both (the decode clause, after the encode one, as ``them``), with the interval of the
pair table's row of that same figure; the pair table's caption says that those rows sum both
directions. Checked on a small real run, the figures recomputed here from its
``summary.json``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats as sps

from analysis_run import run_bench
from ipc_bench.analysis import stats
from ipc_bench.analysis.results import Results, load
from ipc_bench.report import blocks, findings

#: Two repetitions of send and cached at 4 running, msgpack: each time clause carries
#: a Student-t interval over the two pairs.
ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--codecs", "msgpack",
        "--steps", "50", "--warmup-steps", "10", "--repeat", "2", "--no-single-process"]
BOTH = "the SchedulerOutput and the ModelRunnerOutput"
#: key -> (saves, spends, within noise, changes): the clause words, ``{}`` the µs; the
#: decode clause follows the encode one, which named both messages, so it says ``them``.
WORDS = {
    "encode_ns_per_step": (f"saves {{}} per step encoding {BOTH}",
                           f"spends {{}} more per step than send encoding {BOTH}",
                           f"encodes {BOTH} within noise of send's time per step",
                           f"changes encode time per step of {BOTH} by"),
    "decode_ns_per_step": ("saves {} per step decoding them",
                           "spends {} more per step than send decoding them",
                           "decodes them within noise of send's time per step",
                           "changes their decode time per step by"),
    "build_ns_per_step": (f"saves {{}} per step building {BOTH}",
                          f"spends {{}} more per step than send building {BOTH}",
                          f"builds {BOTH} within noise of send's time per step",
                          f"changes build time per step of {BOTH} by"),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("both-messages") / "run"
    run_bench(path, ARGS)
    return path


@pytest.fixture(scope="module")
def res(run_dir) -> Results:
    return load(run_dir)


def _pairs(run_dir: Path, key: str) -> list[tuple[float, float]]:
    """(send, cached) values of ``key`` per repetition, from ``summary.json``."""
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    by = {(c["policy"], c["repetition"]): float(c[key]) for c in cases}
    return [(by[("send", r)], by[("cached", r)]) for r in sorted({r for _, r in by})]


def _recorded(run_dir: Path, key: str) -> tuple[dict, int]:
    """``key``'s metric of the cached-against-send comparison ``summary.json`` recorded
    (Holm-adjusted) and the size of its family."""
    (c,) = [c for c in json.loads((run_dir / "summary.json").read_text())["comparisons"]
            if (c["baseline"], c["treatment"]) == ("send", "cached")]
    return c["metrics"][key], len(c["family"])


def _expected(pairs: list[tuple[float, float]], key: str,
              recorded: tuple[dict, int] | None = None) -> str:
    """The clause of ``key``: the mean difference (send - cached, µs, signed as the pair
    table's column) and cached/send's geometric mean with its 95 % Student-t interval,
    as % change; where that interval holds 0 % but reaches beyond 1.1x either way, an
    inconclusive change; where it excludes 0 % but the ``recorded`` comparison (metric,
    family size) finds no significant difference after Holm's correction, a change that
    says so in the short words the legend defines (``inconclusive: not significant after
    Holm`` where the interval reaches beyond 1.1x either way), and where it finds one significant,
    the saving or cost with ``significant after Holm (p, adjusted)``."""
    saves, spends, noise, changes = WORDS[key]
    diff_us = sum(s - c for s, c in pairs) / len(pairs) / 1e3
    # as the finding prints it: never rounded onto 0 (-0.004, not -0.00)
    diff = stats.point_text(diff_us + 0.0, 2, sign=True)
    logs = [math.log(c / s) for s, c in pairs]
    n = len(logs)
    mean = sum(logs) / n
    half = sps.t.ppf(0.975, n - 1) * math.sqrt(
        sum((x - mean) ** 2 for x in logs) / (n - 1) / n)
    lo, ratio, hi = math.exp(mean - half), math.exp(mean), math.exp(mean + half)
    # the ends as every interval prints them: one beyond 1000x or under 0.001x bounded
    # (stats.ratio_end: [<-99.9, >+99900.0] %), as two noisy pairs can give
    change = f"{100 * (ratio - 1):+.1f} % {stats.ratio_interval(lo, hi, percent=True)}"
    if lo <= 1.0 <= hi and (lo < 0.9 or hi > 1.1):  # holds 0 %, reaches beyond 1.1x either way
        return (f"{changes} {change} (send - cached: {diff} µs; "
                "inconclusive (interval beyond 1.1x either way))")
    if lo <= 1.0 <= hi:
        return f"{noise} ({change}; send - cached: {diff} µs)"
    m, family = recorded or ({}, 0)
    wide = "inconclusive: " if lo < 0.9 or hi > 1.1 else ""  # beyond 1.1x either way
    holm = (f"; {wide}not significant after Holm (p {m['p_value']:.3f}, adjusted "
            f"{m['p_adjusted']:.3f})" if m.get("significant") is False else "")
    if holm or (hi < 1.0) != (diff_us > 0):
        return f"{changes} {change} (send - cached: {diff} µs{holm})"
    # a saving or cost significant after Holm says so (two pairs rarely are)
    significant = (f"; significant after Holm (p {_p(m['p_value'])}, adjusted "
                   f"{_p(m['p_adjusted'])})" if m.get("significant")
                   and m.get("adjustment") == "holm" else "")
    return (saves if diff_us > 0 else spends).format(f"{abs(diff_us):.2f} µs") + \
        f" ({change}{significant})"


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def test_the_encode_decode_and_build_clauses_name_both_messages(run_dir, res):
    (finding,) = [f for f in findings.findings(res) if "cached sends" in f]
    for key in WORDS:
        clause = _expected(_pairs(run_dir, key), key, _recorded(run_dir, key))
        assert clause in finding, (clause, finding)
    assert "SchedulerOutput within noise" not in finding
    assert "SchedulerOutput (" not in finding


def test_one_repetitions_clauses_give_the_difference_alone(run_dir, res):
    one = type("R", (), {})()
    one.cases = res.cases[res.cases["repetition"] == 0]
    one.labels, one.metadata = res.labels, res.metadata
    tables = findings._pair_tables(one)
    (key,) = tables["tput"]
    got = findings._saving_clauses(tables, key)[1:]
    want = []
    for metric, (saves, spends, noise, _) in WORDS.items():
        ((send, cached),) = _pairs(run_dir, metric)[:1]
        diff_us = (send - cached) / 1e3
        if f"{abs(diff_us):.2f}" == "0.00":  # no saving or cost: the same time
            want.append(noise.replace("within noise of send's time per step",
                                      "in the same time per step as send")
                        + " (0.00 µs difference; one repetition, no interval)")
            continue
        want.append((saves if diff_us >= 0 else spends).format(f"{abs(diff_us):.2f} µs")
                    + " (one repetition, no interval)")
    assert got == want


def test_the_pair_tables_caption_says_its_times_sum_both_directions(res):
    caption = blocks._pair_table(res)[1][1]
    assert caption.endswith(
        "The build, encode and decode µs/step rows sum both directions: the scheduler's "
        "SchedulerOutput and the runner's ModelRunnerOutput.")
