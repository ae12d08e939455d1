"""A hand-edited timed replay: its wall-time ``output_tokens_per_s`` is the output
tokens of all its requests (``requests.csv``) over its ``wall_s``, its ``wall_s``
is never shorter than the end of its last step (``steps.csv`` ``t_end_ns``), and its
request latencies (``ttft_ms_p50``...) are those its ``requests.csv`` and ``itl.csv``
rows give. A case whose figures break one is left out with one warning naming both
values, in the report and in ``results.load``; a ``tpot_s`` that is not ``(e2e_s -
ttft_s) / (n - 1)`` leaves its row out and withholds the figures over it, the case
loaded; the run as written loads clean."""

from __future__ import annotations

import csv
import json
import math
import shutil

import numpy as np
import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning
from test_hand_edited_summary import NO_FIGURES, _assert_left_out, _loaded, _report
from test_latency_figures import _edit_csv


@pytest.fixture(scope="module")
def timed_run(shared_timed_run):
    """A real timed replay of 6 requests of 8 output tokens (conftest's
    ``shared_timed_run``): (folder, send id, cached id)."""
    run, _, send, cached = shared_timed_run
    return run, send, cached


def _copy(timed_run, tmp_path, change=lambda case: None):
    """A copy of the run whose send case's summary entry is ``change``d; returns it
    and that entry as written."""
    src, send, _ = timed_run
    run = tmp_path / "run"
    shutil.copytree(src, run)
    summary = json.loads((run / "summary.json").read_text())
    change(summary["cases"][0])
    (run / "summary.json").write_text(json.dumps(summary))
    return run, summary["cases"][0]


def _requests(run, case_id) -> list[dict]:
    with open(run / "requests.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["case_id"] == case_id]


def test_the_run_as_written_loads_clean(timed_run, tmp_path, capsys):
    run, send, _ = timed_run
    entry = json.loads((run / "summary.json").read_text())["cases"][0]
    tokens = sum(int(r["num_output_tokens"]) for r in _requests(run, send))
    assert (tokens, entry["num_requests"]) == (48, 6)
    assert entry["output_tokens_per_s"] == 48 / entry["wall_s"]
    assert _loaded(run) == []
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().err == ""


def test_a_wall_rate_typed_over_leaves_the_case_out(timed_run, tmp_path, capsys):
    _, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path, lambda c: c.update(output_tokens_per_s=12.5))
    wall_s = entry["wall_s"]
    line = (f"{run / 'summary.json'}: case '{send}' has output_tokens_per_s 12.5, but the "
            f"48 output tokens of its 6 requests in requests.csv over its wall_s "
            f"{wall_s:,.6g} make {48 / wall_s:,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_a_wall_s_typed_over_leaves_the_case_out(timed_run, tmp_path, capsys):
    _, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path, lambda c: c.update(wall_s=2.0))
    rate = entry["output_tokens_per_s"]
    line = (f"{run / 'summary.json'}: case '{send}' has output_tokens_per_s {rate:,.6g}, "
            "but the 48 output tokens of its 6 requests in requests.csv over its wall_s 2 "
            "make 24 (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_an_output_count_edited_in_requests_csv_leaves_the_case_out(
        timed_run, tmp_path, capsys):
    _, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path)
    with open(run / "requests.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    first = next(r for r in rows if r["case_id"] == send)
    first["num_output_tokens"] = "9"
    with open(run / "requests.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    rate, wall_s = entry["output_tokens_per_s"], entry["wall_s"]
    line = (f"{run / 'summary.json'}: case '{send}' has output_tokens_per_s {rate:,.6g}, "
            f"but the 49 output tokens of its 6 requests in requests.csv over its wall_s "
            f"{wall_s:,.6g} make {49 / wall_s:,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


@pytest.mark.parametrize("column, value, figure, what", [
    ("finish_reason", "", "num_finished", "5 rows with finish_reason length"),
    ("finish_reason", "rejected", "num_rejected", "1 row with finish_reason rejected"),
    ("max_tokens", "9", "num_cut_at_max_model_len",
     "1 row with finish_reason length short of their max_tokens"),
    ("preemptions", "2", "num_preemptions", "2 preemptions summed over its rows"),
], ids=["finished", "rejected", "cut", "preemptions"])
def test_a_request_count_not_its_rows_leaves_the_case_out(
        timed_run, tmp_path, capsys, column, value, figure, what):
    """``num_rejected``, ``num_finished``, ``num_cut_at_max_model_len`` and
    ``num_preemptions`` are counted from the requests' records: a row edited so that they are not leaves the
    case out, naming the figure and both counts."""
    _, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path)
    assert (entry["num_rejected"], entry["num_finished"],
            entry["num_cut_at_max_model_len"], entry["num_preemptions"]) == (0, 6, 0, 0)
    assert all(int(r["max_tokens"]) == 8 for r in _requests(run, send))
    _edit_requests(run, lambda rows: rows[0].update({column: value}))
    line = (f"{run / 'requests.csv'}: case '{send}' has {what} of its 6, but summary.json "
            f"has {figure} {entry[figure]} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_a_wall_s_shorter_than_its_last_step_leaves_the_case_out(
        timed_run, tmp_path, capsys):
    # wall_s and the rate edited together: they agree, but the steps ran longer
    _, send, cached = timed_run
    run, _ = _copy(timed_run, tmp_path,
                   lambda c: c.update(wall_s=0.001, output_tokens_per_s=48_000.0))
    with open(run / "steps.csv", newline="") as f:
        last_ns = max(int(r["t_end_ns"]) for r in csv.DictReader(f) if r["case_id"] == send)
    assert last_ns > 1_000_000
    line = (f"{run / 'summary.json'}: case '{send}' has wall_s 0.001, but its last step "
            f"ended {last_ns / 1e9:,.6g} s after the loop's start (steps.csv t_end_ns "
            f"{last_ns:,}) (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_a_wall_s_longer_than_the_whole_case_leaves_the_case_out(timed_run, tmp_path, capsys):
    # wall_s and the rate edited together (a slower replay typed in): they agree, and
    # the steps fit, but the case as a whole, processes included, took less time
    _, send, cached = timed_run

    def longer(c):
        wall = 10 * c["case_elapsed_s"]
        c.update(wall_s=wall, output_tokens_per_s=48 / wall)

    run, entry = _copy(timed_run, tmp_path, longer)
    assert entry["case_elapsed_s"] > 0
    line = (f"{run / 'summary.json'}: case '{send}' has wall_s {entry['wall_s']:,.6g}, but "
            f"the whole case took {entry['case_elapsed_s']:,.6g} s (case_elapsed_s) (left "
            "out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_the_wall_rate_counts_the_warm_up_tokens_over_the_whole_wall_time(timed_run):
    """One definition in the summary, the loader's check and docs/metrics.md: every request's
    output tokens, warm-up included, over ``wall_s``, which starts at the first
    arrival (the loop's start, warm-up included): not ``output_tokens``, the counted
    steps' tokens alone."""
    from ipc_bench.analysis.metrics import OUTPUT_TOKENS_MEANING
    from manual import page

    run, send, _ = timed_run
    entry = json.loads((run / "summary.json").read_text())["cases"][0]
    with open(run / "steps.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["case_id"] == send]
    warm = sum(int(r["num_output_tokens"]) for r in rows if r["counted"] != "1")
    counted = sum(int(r["num_output_tokens"]) for r in rows if r["counted"] == "1")
    # how many tokens the 2 warm-up steps sample follows the arrivals' wall clock
    assert (entry["num_warmup_steps"], warm + counted, entry["output_tokens"]) == (
        2, 48, counted)
    assert warm > 0
    assert entry["output_tokens_per_s"] == 48 / entry["wall_s"]
    assert entry["output_tokens_per_s"] != entry["output_tokens"] / entry["wall_s"]
    said = ("every request's output tokens, warm-up included, over the wall time from "
            "the first arrival to the last completion (`wall_s`, which includes the "
            "warm-up too;")
    assert said in OUTPUT_TOKENS_MEANING
    assert said in page("metrics.md")


def _values_s(run, case_id, column) -> list[float]:
    """The case's ``column`` values (s) in its ``requests.csv`` or, ``itl_s``,
    ``itl.csv`` rows, as written."""
    name = "itl.csv" if column == "itl_s" else "requests.csv"
    with open(run / name, newline="") as f:
        return [float(r[column]) for r in csv.DictReader(f) if r["case_id"] == case_id]


@pytest.mark.parametrize("figure, stat, column, source, rows", [
    ("ttft_ms_p50", 50, "ttft_s", "requests.csv", "6 rows with a ttft_s"),
    ("tpot_ms_mean", None, "tpot_s", "requests.csv", "6 rows with a tpot_s"),
    ("itl_ms_p99", 99, "itl_s", "itl.csv", "42 rows with an itl_s"),
    ("e2e_ms_p90", 90, "e2e_s", "requests.csv", "6 rows with an e2e_s"),
])
def test_a_latency_figure_typed_over_leaves_the_case_out(
        timed_run, tmp_path, capsys, figure, stat, column, source, rows):
    """The summary's latencies are recomputed from the rows (``np.percentile``'s
    linear interpolation, as the run computed them): one typed over is not quoted."""
    src, send, cached = timed_run
    values = np.array(_values_s(src, send, column)) * 1e3
    got = float(values.mean() if stat is None else np.percentile(values, stat))
    run, entry = _copy(timed_run, tmp_path, lambda c: c.update({figure: 99.0}))
    assert got == pytest.approx(
        json.loads((src / "summary.json").read_text())["cases"][0][figure], rel=1e-12)
    name = "mean" if stat is None else f"p{stat}"
    line = (f"{run / source}: case '{send}' has a {name} {column} of {got:,.6g} ms over "
            f"its {rows}, but summary.json has {figure} 99 (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_a_latency_figure_edited_past_its_sixth_digit_shows_the_digits_that_differ(
        timed_run, tmp_path):
    src, send, cached = timed_run
    want = json.loads((src / "summary.json").read_text())["cases"][0]["itl_ms_p99"]
    # 1e-8 up or down, whichever keeps the first 6 digits (a figure just under a
    # rounding boundary of its 6th digit would show the edit at 6 digits already)
    edited = next(e for e in (want * (1 + 1e-8), want * (1 - 1e-8))
                  if f"{e:,.6g}" == f"{want:,.6g}")
    run, _ = _copy(timed_run, tmp_path, lambda c: c.update(itl_ms_p99=edited))
    digits = next(d for d in range(6, 18) if f"{want:,.{d}g}" != f"{edited:,.{d}g}")
    assert digits > 6
    assert _loaded(run) == [
        f"{run / 'itl.csv'}: case '{send}' has a p99 itl_s of {want:,.{digits}g} ms over "
        f"its 42 rows with an itl_s, but summary.json has itl_ms_p99 "
        f"{edited:,.{digits}g} (left out)"]


def _assert_withheld(run, tmp_path, capsys, lines: list[str], case_id: str,
                     indexes: list[int], names: tuple[str, ...], entry: dict) -> None:
    """``bench.py report`` and the loader warn ``lines`` of ``run``, in that order; both
    cases load, ``case_id`` with the ``requests.csv`` rows ``indexes`` alone and its
    figures of the latencies ``names`` withheld (NaN), its others ``entry``'s; the
    report quotes none of the withheld figures and notes each line."""
    assert _report(run, tmp_path, capsys, NO_FIGURES) == (
        0, [f"bench.py report: warning: {line}" for line in lines])
    md = (tmp_path / "rep" / "report.md").read_text()
    for line in lines:
        assert f"> **Note:** Loading this run: {line}." in md
    assert _loaded(run) == lines
    with pytest.warns(ResultsWarning):
        loaded = load(run)
    assert len(set(loaded.cases["case_id"])) == 2
    kept = loaded.requests[loaded.requests["case_id"] == case_id]
    assert list(kept["index"]) == indexes
    case = loaded.cases[loaded.cases["case_id"] == case_id].iloc[0]
    for name in ("ttft", "tpot", "itl", "e2e"):
        for q in ("mean", "p50", "p90", "p99"):
            figure = f"{name}_ms_{q}"
            if name in names:
                assert case[figure] != case[figure], figure  # NaN: not quoted
            else:
                assert case[figure] == entry[figure], figure
    # the Latency table's row of the case: its withheld cells empty (no row: all are)
    section = md.split("\n## Latency\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines()
            if ln.startswith(f"| 0 | {case_id.split('/')[1]} |")]
    if set(names) == {"ttft", "tpot", "itl", "e2e"}:
        assert rows == []
        return
    row = rows[0]
    cells = [c.strip() for c in row.split("|")[5:-1]]
    shown = ("ttft_ms_p50", "ttft_ms_p99", "tpot_ms_mean", "itl_ms_p50", "itl_ms_p99",
             "e2e_ms_p50", "e2e_ms_p99")
    assert [c == "-" for c in cells] == [f.split("_")[0] in names for f in shown]


def _withheld_line(run, case_id, source, names, n, bad) -> str:
    figures = [f"{name}_ms_*" for name in names]
    said = figures[0] if len(figures) == 1 else ", ".join(figures[:-1]) + f" and {figures[-1]}"
    return (f"{run / source}: case '{case_id}' has {said} withheld (not quoted): "
            f"summary.json's are over its {n} rows, {bad} of them impossible (left out); "
            + ("its other row is loaded" if n - bad == 1 else
               f"its other {n - bad} rows are loaded"))


REQUEST_LATENCIES = ("ttft", "tpot", "e2e")
ALL_LATENCIES = REQUEST_LATENCIES[:2] + ("itl",) + REQUEST_LATENCIES[2:]


def _gaps_line(run, case_id, n, requests) -> str:
    """The warning on the ``n`` itl.csv rows of the ``requests`` (words) of case
    ``case_id`` left out of requests.csv: their gaps are left out with them."""
    return (f"{run / 'itl.csv'}: case '{case_id}' has gaps of a request left out of "
            f"requests.csv as impossible in {n} rows ({requests}; left out)")


def _gaps_withheld(run, case_id, bad) -> list[str]:
    """The lines that follow the requests.csv one: ITL withheld, ``bad`` of its 42
    gaps left out (7 per request of 8 tokens)."""
    return [_withheld_line(run, case_id, "itl.csv", ("itl",), 42, bad)]


def _assert_warned_and_kept(run, tmp_path, capsys, lines: list[str], kept: str) -> None:
    """``bench.py report`` and the loader warn ``lines`` of ``run``, in that order, and
    the loader keeps case ``kept`` alone."""
    assert _report(run, tmp_path, capsys, NO_FIGURES) == (
        0, [f"bench.py report: warning: {line}" for line in lines])
    assert _loaded(run) == lines
    with pytest.warns(ResultsWarning):
        loaded = load(run)
    assert set(loaded.cases["case_id"]) == set(loaded.requests["case_id"]) == {kept}


def _edit_requests(run, change) -> None:
    """Rewrite ``requests.csv`` of ``run`` with its rows (dicts) ``change``d."""
    with open(run / "requests.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    change(rows)
    with open(run / "requests.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_a_latency_edited_in_requests_csv_leaves_the_case_out(timed_run, tmp_path,
                                                              capsys):
    """A ``ttft_s`` and an ``e2e_s`` moved earlier together, by half that TTFT (its
    TPOT kept): no row is impossible, but the summary's TTFT figures are no longer its
    rows'."""
    src, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path)
    moved_s = []

    def earlier(rows):
        first = next(r for r in rows if r["case_id"] == send)
        moved_s.append(float(first["ttft_s"]) / 2)
        for key in ("ttft_s", "e2e_s"):
            first[key] = repr(float(first[key]) - moved_s[0])

    _edit_requests(run, earlier)
    got = float(np.mean(_values_s(run, send, "ttft_s"))) * 1e3
    assert got == pytest.approx(entry["ttft_ms_mean"] - moved_s[0] * 1e3 / 6, rel=1e-9)
    line = (f"{run / 'requests.csv'}: case '{send}' has a mean ttft_s of {got:,.6g} ms "
            f"over its 6 rows with a ttft_s, but summary.json has ttft_ms_mean "
            f"{entry['ttft_ms_mean']:,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_latency_figures_typed_over_in_every_case_are_refused(timed_run, tmp_path,
                                                              capsys):
    src, send, _ = timed_run
    run = tmp_path / "run"
    shutil.copytree(src, run)
    summary = json.loads((run / "summary.json").read_text())
    for case in summary["cases"]:
        case["ttft_ms_p50"] = 99.0
    (run / "summary.json").write_text(json.dumps(summary))
    got = float(np.percentile(_values_s(run, send, "ttft_s"), 50)) * 1e3
    # the loader takes the percentile of its own ms values and prints 6 significant
    # digits: the figure read back may differ from this one by up to one unit of its
    # 6th digit (half a unit of rounding, and the last bits of another sum)
    head = f"no case can be loaded: {run / 'requests.csv'}: case '{send}' has a p50 ttft_s of "
    tail = " ms over its 6 rows with a ttft_s, but summary.json has ttft_ms_p50 99 (and 1 more)"
    with pytest.raises(ResultsError) as exc:
        load(run)
    message = str(exc.value)
    assert message.startswith(head) and message.endswith(tail)
    unit = 10.0 ** (math.floor(math.log10(got)) - 5)
    assert abs(float(message[len(head):-len(tail)]) - got) <= unit
    assert _report(run, tmp_path, capsys, NO_FIGURES) == (
        2, [f"bench.py report: error: {message}"])


def test_a_tpot_that_is_not_its_gaps_mean_leaves_its_row_out(timed_run, tmp_path, capsys):
    """``tpot_s`` is ``(e2e_s - ttft_s) / (n - 1)`` (``metrics.LATENCY_MEANINGS``); a
    row that says otherwise is left out, naming its request, and the case's figures
    over requests.csv rows (TTFT, TPOT, E2E), which count it, are withheld, as are its
    7 gaps in itl.csv and so the ITL figures: the case loads with its other 5 rows and
    their 35 gaps."""
    src, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path)
    first = _requests(run, send)[0]
    want = (float(first["e2e_s"]) - float(first["ttft_s"])) / 7
    assert (first["index"], first["num_output_tokens"]) == ("0", "8")
    assert abs(float(first["tpot_s"]) - want) < 1e-15

    def tpot(rows):
        next(r for r in rows if r["case_id"] == send)["tpot_s"] = "0.5"

    _edit_requests(run, tpot)
    lines = [f"{run / 'requests.csv'}: case '{send}' has a tpot_s other than (e2e_s - "
             f"ttft_s) / (num_output_tokens - 1) in 1 row (request 0: tpot_s 0.5, the "
             f"formula {want:g}; left out)", _gaps_line(run, send, 7, "request 0"),
             _withheld_line(run, send, "requests.csv", REQUEST_LATENCIES, 6, 1),
             *_gaps_withheld(run, send, 7)]
    _assert_withheld(run, tmp_path, capsys, lines, send, [1, 2, 3, 4, 5],
                     ALL_LATENCIES, entry)


def test_latencies_typed_over_with_impossible_tpot_rows_are_withheld_not_quoted(
        timed_run, tmp_path, capsys):
    """``ttft_ms_p99`` and ``tpot_ms_mean`` typed into summary.json and 5 rows' tpot_s
    made 1 s: the figures over requests.csv rows are withheld, so 999 ms is not
    quoted, and so are the ITL figures, over those 5 requests' gaps too: the case's
    last row and its 7 gaps load."""
    src, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path,
                       lambda c: c.update(ttft_ms_p99=999, tpot_ms_mean=77))
    first = _requests(run, send)[0]
    want = (float(first["e2e_s"]) - float(first["ttft_s"])) / 7

    def tpot(rows):
        for row in [r for r in rows if r["case_id"] == send][:5]:
            row["tpot_s"] = "1.0"

    _edit_requests(run, tpot)
    lines = [f"{run / 'requests.csv'}: case '{send}' has a tpot_s other than (e2e_s - "
             f"ttft_s) / (num_output_tokens - 1) in 5 rows (requests 0, 1, 2, 3 and 4, the "
             f"first: tpot_s 1, the formula {want:g}; left out)",
             _gaps_line(run, send, 35, "requests 0, 1, 2, 3 and 4"),
             _withheld_line(run, send, "requests.csv", REQUEST_LATENCIES, 6, 5),
             *_gaps_withheld(run, send, 35)]
    _assert_withheld(run, tmp_path, capsys, lines, send, [5], ALL_LATENCIES, entry)


def test_an_itl_figure_typed_over_is_checked_though_a_tpot_row_is_impossible(
        timed_run, tmp_path, capsys):
    """``itl_ms_p99`` typed into summary.json and a row's tpot_s made 1 s: the figures
    over requests.csv rows are withheld, and the ITL figures, over itl.csv's rows, all
    possible, are still checked, though those of request 0 are left out with it: 999 ms
    is not theirs as written, so the case is left out."""
    src, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path, lambda c: c.update(itl_ms_p99=999))
    first = _requests(run, send)[0]
    want = (float(first["e2e_s"]) - float(first["ttft_s"])) / 7
    _edit_requests(run, lambda rows: rows[0].update(tpot_s="1.0"))
    got = float(np.percentile(_values_s(run, send, "itl_s"), 99)) * 1e3
    lines = [f"{run / 'requests.csv'}: case '{send}' has a tpot_s other than (e2e_s - "
             f"ttft_s) / (num_output_tokens - 1) in 1 row (request 0: tpot_s 1, the "
             f"formula {want:g}; left out)", _gaps_line(run, send, 7, "request 0"),
             _withheld_line(run, send, "requests.csv", REQUEST_LATENCIES, 6, 1),
             *_gaps_withheld(run, send, 7),
             f"{run / 'itl.csv'}: case '{send}' has a p99 itl_s of {got:,.6g} ms over its "
             f"42 rows with an itl_s, but summary.json has itl_ms_p99 999 (left out)"]
    _assert_warned_and_kept(run, tmp_path, capsys, lines, cached)


def test_logical_steps_out_of_order_leave_their_rows_out_naming_the_requests(
        timed_run, tmp_path, capsys):
    """A request's logical steps happen in order (arrival, first scheduled, first
    token, finish; -1: never): a ``first_token_step`` after its ``finish_step`` and a
    ``finish_step`` of -2 leave those rows out, naming their requests, with their gaps
    in itl.csv, and withhold the figures over those rows."""
    src, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path)
    rows = _requests(run, send)
    assert [r["index"] for r in rows] == ["0", "1", "2", "3", "4", "5"]
    assert all(0 <= int(r["first_token_step"]) <= int(r["finish_step"]) for r in rows)

    def edit(rows):
        for r in rows[1:3]:
            r["first_token_step"] = str(int(r["finish_step"]) + 1)
        rows[4]["finish_step"] = "-2"

    _edit_requests(run, edit)
    late = min(int(r["finish_step"]) for r in rows[1:3])
    lines = [f"{run / 'requests.csv'}: case '{send}' has a finish_step below -1 (-2) in 1 "
             "row (request 4; left out)",
             f"{run / 'requests.csv'}: case '{send}' has a finish_step before its "
             f"first_token_step (down to {late}) in 2 rows (requests 1 and 2; left out)",
             _gaps_line(run, send, 21, "requests 1, 2 and 4"),
             _withheld_line(run, send, "requests.csv", REQUEST_LATENCIES, 6, 3),
             *_gaps_withheld(run, send, 21)]
    _assert_withheld(run, tmp_path, capsys, lines, send, [0, 3, 5], ALL_LATENCIES, entry)


def test_a_tpot_of_a_one_token_request_leaves_its_row_out(timed_run, tmp_path):
    """A request of one output token has no TPOT (``tpot_s`` empty): one given with
    its count edited to 1 is no row a run writes (its 7 tokens moved to the next
    request, so the case's tokens agree with its rate, leave that one out too; their
    max_tokens moved with them, so that neither was cut short of it)."""
    _, send, _ = timed_run
    run, _ = _copy(timed_run, tmp_path)

    def one_token(rows):
        rows[1]["num_output_tokens"], rows[2]["num_output_tokens"] = "1", "15"
        rows[1]["max_tokens"], rows[2]["max_tokens"] = "1", "15"

    _edit_requests(run, one_token)
    tpot = float(_requests(run, send)[1]["tpot_s"])
    lines = [ln for ln in _loaded(run) if "tpot_s" in ln]
    assert lines == [
        f"{run / 'requests.csv'}: case '{send}' has a tpot_s other than (e2e_s - ttft_s) "
        f"/ (num_output_tokens - 1) in 2 rows (requests 1 and 2, the first: tpot_s "
        f"{tpot:g}, the formula none (1 output token); left out)"]


def test_a_warmup_token_share_not_its_rows_leaves_the_case_out(timed_run, tmp_path, capsys):
    _, send, cached = timed_run
    run, entry = _copy(timed_run, tmp_path, lambda c: c.update(warmup_token_share=0.01))
    with open(run / "steps.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["case_id"] == send]
    total = sum(int(r["num_scheduled_tokens"]) for r in rows)
    warm = sum(int(r["num_scheduled_tokens"]) for r in rows if r["warmup"] == "1")
    assert 0 < warm < total
    line = (f"{run / 'steps.csv'}: case '{send}' has {warm:,} of its {total:,} "
            f"num_scheduled_tokens in its warm-up rows ({warm / total:,.6g}), but "
            "summary.json has warmup_token_share 0.01 (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_a_replay_whose_warm_up_holds_most_of_its_tokens_is_warned(tmp_path):
    """Six 500-token prompts at one timestamp, 3 warm-up steps: the prefill is in the
    warm-up, the counted steps decode; the case says so (and the steady scenarios,
    whose warm-up holds their prefill by design, do not)."""
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     + "2023-11-16 18:15:46.6805900,500,12\n" * 6)
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "azure-conv-timed", "--trace", str(trace), "--codecs",
                    "msgpack", "--warmup-steps", "3", "--no-single-process",
                    "--policies", "send"])
    case = json.loads((run / "summary.json").read_text())["cases"][0]
    assert case["warmup_token_share"] > 0.9 and case["num_steps"] > 0
    assert (f"the 3 warm-up steps scheduled {100 * case['warmup_token_share']:.0f} % of the "
            "replay's tokens (most of its prefill): the per-step bytes and times, over "
            "counted steps, leave them out, while the latencies and tok/s (wall) count "
            "them; lower --warmup-steps to count them") in case["warnings"]
    from ipc_bench.analysis.summary import warmup_tokens_warning

    assert warmup_tokens_warning(dict(case, workload="num_running=4")) is None
    assert warmup_tokens_warning(dict(case, warmup_token_share=0.5)) is None
    # a logical-clock replay (no trace_speedup) has no latencies or wall tok/s
    assert warmup_tokens_warning(dict(case, trace_speedup=None)).endswith(
        "(most of its prefill): the per-step bytes, times and tok/s, over counted steps, "
        "leave them out; lower --warmup-steps to count them")


def test_request_rows_more_than_the_summary_counts_are_left_out_with_its_latencies(
        timed_run, tmp_path, capsys):
    """Send's first request written 3 times more: 9 rows of a case of 6 requests, which
    the latency figures would draw as its own (n=9). Its rows and gaps are left out
    and its latency figures withheld, each said; cached's load."""
    _, send, cached = timed_run
    run, _ = _copy(timed_run, tmp_path)
    def repeat_first(rows):
        rows[1:1] = [dict(rows[0])] * 3

    _edit_csv(run / "requests.csv", repeat_first)
    assert len(_requests(run, send)) == 9
    lines = _loaded(run)
    assert lines == [
        f"{run / 'requests.csv'}: case '{send}' has 9 rows, more than the 6 requests "
        "summary.json counts (num_requests) (its rows left out)",
        f"{run / 'requests.csv'}: case '{send}' has ttft_ms_*, tpot_ms_* and e2e_ms_* "
        "withheld (not quoted): its 9 rows here left out, the case having more rows than "
        "summary.json counts in requests.csv or itl.csv (said above); none of its rows is "
        "loaded",
        f"{run / 'itl.csv'}: case '{send}' has itl_ms_* withheld (not quoted): its 42 rows "
        "here left out, the case having more rows than summary.json counts in requests.csv "
        "or itl.csv (said above); none of its rows is loaded"]
    loaded = load(run)
    assert set(loaded.requests["case_id"]) == set(loaded.itl["case_id"]) == {cached}
    send_case = loaded.cases[loaded.cases["case_id"] == send].iloc[0]
    assert send_case["ttft_ms_p50"] != send_case["ttft_ms_p50"]  # NaN: withheld


def test_gap_rows_more_than_the_requests_give_are_left_out(timed_run, tmp_path, capsys):
    """One of cached's gaps written 5 times more: 47 rows where its 6 requests of 8
    tokens give 42."""
    _, send, cached = timed_run
    run, _ = _copy(timed_run, tmp_path)
    _edit_csv(run / "itl.csv", lambda rows: rows.extend(
        [dict(next(r for r in rows if r["case_id"] == cached))] * 5))
    assert _loaded(run)[0] == (
        f"{run / 'itl.csv'}: case '{cached}' has 47 rows, more than the 42 gaps its "
        "requests.csv rows give (n - 1 for a request of n output tokens; its rows left "
        "out)")
    assert cached not in set(load(run).itl["case_id"])
