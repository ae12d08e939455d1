"""Request latencies (TTFT, TPOT, ITL, E2E): one definition (``metrics.LATENCY_MEANINGS``,
the summary-field table of docs/metrics.md), the terminal's Latency table in the report cell for
cell, ``itl.csv`` required where a case has ITL figures and its impossible values
left out with a warning, ``wall_s`` defined as it is measured, and an interrupted arm
named in the captions of a timed replay."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis.metrics import LATENCY_MEANINGS, TPOT_ITL_DIFFER, WALL_S_MEANING
from ipc_bench.analysis.pace import replay_pace
from ipc_bench.analysis.results import Results, load
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning
from manual import manual, page

#: The report option that draws no figure.
NO_FIGURES = "--no-figures"
#: The page of the manual with the summary-field table, and the whole manual.
METRICS = page("metrics.md")
MANUAL = manual()


@pytest.fixture(scope="module")
def timed_run(shared_timed_run):
    """A real timed replay of 6 requests of 8 output tokens (conftest's
    ``shared_timed_run``): (folder, stdout, send id, cached id)."""
    return shared_timed_run


def _copy(timed_run, tmp_path, change=lambda summary: None) -> Path:
    run = tmp_path / "run"
    shutil.copytree(timed_run[0], run)
    summary = json.loads((run / "summary.json").read_text())
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _report(run: Path, tmp_path: Path, capsys, *extra: str) -> tuple[int, str, str]:
    """``bench.py report RUN --output tmp_path/rep EXTRA``: (exit code, report.md, stderr).
    ``NO_FIGURES`` as ``extra`` where the edit takes the figures down no path of their
    own: a requests.csv cut short draws one request fewer, and a gap left out withholds
    the ITL figures as a negative one does (test_a_negative_itl_..., figures drawn)."""
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), *extra])
    err = capsys.readouterr().err
    md = (tmp_path / "rep" / "report.md").read_text() if code == 0 else ""
    return code, md, err


def test_readme_defines_each_latency_once_in_the_words_the_report_gives(timed_run):
    for name, meaning in LATENCY_MEANINGS.items():
        keys = ", ".join(f"`{name}_ms_{q}`" for q in ("mean", "p50", "p90", "p99"))
        assert f"| {keys} | {meaning}; mean, 50th, 90th and 99th percentile in ms " \
               "(timed replays and `soak`) |" in METRICS
        assert MANUAL.count(meaning) == 1, name
    assert MANUAL.count(TPOT_ITL_DIFFER) == 1
    assert "TPOT per request, then its mean and percentiles over requests; ITL over " \
           "all gaps" in METRICS
    _tpot_averages_requests_and_itl_averages_gaps(timed_run)


def test_wall_s_is_defined_as_the_loop_measures_it_everywhere():
    assert f"| `wall_s` | {WALL_S_MEANING} |" in METRICS
    assert WALL_S_MEANING.endswith("so there it runs from the first arrival to just after "
                                   "the last completion (the last step's row and the input "
                                   "oracle's last check: milliseconds past it)")
    doc = " ".join(Results.__doc__.split())
    assert ("wall_s s wall time of the scheduler loop, warm-up included: its start to "
            "just after its last step; timed replays: first arrival (arrival_s 0) to just "
            "after the last completion (metrics.WALL_S_MEANING)") in doc


def _tpot_averages_requests_and_itl_averages_gaps(timed_run):
    """The summary's figures are those definitions over the run's own records."""
    run, _, send, _ = timed_run
    entry = json.loads((run / "summary.json").read_text())["cases"][0]
    with open(run / "requests.csv", newline="") as f:
        reqs = [r for r in csv.DictReader(f) if r["case_id"] == send]
    with open(run / "itl.csv", newline="") as f:
        gaps = [float(r["itl_s"]) for r in csv.DictReader(f) if r["case_id"] == send]
    tpot = [(float(r["e2e_s"]) - float(r["ttft_s"])) / (int(r["num_output_tokens"]) - 1)
            for r in reqs]
    assert (len(reqs), len(gaps)) == (6, 6 * 7)  # 8 tokens, 7 gaps a request
    assert entry["tpot_ms_mean"] == pytest.approx(np.mean(tpot) * 1e3, rel=1e-12)
    assert entry["itl_ms_mean"] == pytest.approx(np.mean(gaps) * 1e3, rel=1e-12)
    assert entry["itl_ms_p50"] == pytest.approx(np.percentile(gaps, 50) * 1e3, rel=1e-12)


def test_the_report_gives_the_terminals_latency_table(timed_run, tmp_path, capsys):
    run, out, _, _ = timed_run
    code, md, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, "")
    title = "Latency (timed replay at 10x real time; TTFT from intended arrival)"
    printed = out.split(f"\n{title}\n", 1)[1].splitlines()
    assert printed[0].split("  ")[:1] == ["policy"]
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in printed[2:4]]
    assert [r[0] for r in rows] == ["send", "cached"] and len(rows[0]) == 10
    section = md.split("\n## Latency\n", 1)[1].split("\n## ", 1)[0]
    assert section.startswith(f"\n{title}.\n\n**trace=azure-conv-timed:6**\n\n"
                              "| rep | policy | codec | transport | TTFT p50 ms | "
                              "TTFT p99 ms | TPOT mean ms | ITL p50 ms | ITL p99 ms | "
                              "E2E p50 ms | E2E p99 ms |\n")
    for row in rows:
        assert "| 0 | " + " | ".join(row) + " |" in section
    for name, meaning in LATENCY_MEANINGS.items():
        assert f"`{name.upper()}`: {meaning}." in section
    assert TPOT_ITL_DIFFER in section
    # 6 requests a case, 42 gaps: each p99 the table prints is between its case's two
    # largest values, said in both (its TPOT is the mean: no TPOT p99 to name)
    few = ("A p99 over 100 or fewer values lies between its case's two largest values: "
           "read it as about the maximum, not as a tail percentile (here TTFT and E2E p99, "
           "over as few as 6 requests; ITL p99, over as few as 42 gaps).")
    assert f"\nNote: {few}\n" in out
    assert section.rstrip().endswith(f" {few}")
    # The finding's words follow each case's recorded pace: on an idle machine the
    # engine keeps up with the arrivals (5 ms apart), both cases arrival-bound; a loaded
    # one can leave a request waiting behind a slow step in a replay whose wall time the
    # load stretched past twice the arrivals' span, and the case is then load-bound by
    # its own records, with the words such a case has (a fixed arrival-bound sentence
    # assumed the machine never slows the engine below the trace's pace).
    cases = json.loads((run / "summary.json").read_text())["cases"]
    paces = [replay_pace(c) for c in cases]
    # msgpack's ° where its one-runner cases are shown marked (exactly 2 cores)
    clause = (rf"On `trace=azure-conv-timed:6` \(msgpack{one_runner_mark()}\), send ran "
              r"[\d.]+ s and cached [\d.]+ s of wall time, first arrival to last completion: ")
    withheld = (r"[\d,]+ and [\d,]+ tok/s \(wall\); arrival-bound: the trace's arrivals "
                r"set both, so no ratio or verdict\.\n")
    if "load-bound" not in paces:
        line = (r"\n- This is a timed replay: arrivals follow the trace's clock, so its "
                r"tokens/s \(wall\), every output token over the wall time from the first "
                r"arrival to the last completion, measures the arrivals, not throughput; the "
                r"latencies \(the Latency section\) are the result\. " + clause + withheld)
    elif "arrival-bound" in paces:
        line = (r"\n- This is a timed replay, load-bound in 1 of its 2 cases \([^\n]*\) and "
                r"arrival-bound in the others: [^\n]* " + clause + withheld)
    else:
        line = (r"\n- This is a timed replay, but load-bound: [^\n]* " + clause
                + r"[\d,]+ → [\d,]+ tok/s \(wall\), [^\n]*% \(one repetition, no "
                r"interval\)\.\n")
    assert re.search(line, md), (paces, md)


def test_a_missing_itl_csv_is_refused_where_a_case_has_itl_figures(timed_run, tmp_path,
                                                                    capsys):
    run = _copy(timed_run, tmp_path)
    (run / "itl.csv").unlink()
    code, _, err = _report(run, tmp_path, capsys)
    assert (code, err) == (2, f"bench.py report: error: {run}: not a complete run folder "
                              "(no itl.csv)\n")
    with pytest.raises(ResultsError) as exc:
        load(run)
    assert str(exc.value) == f"{run}: not a complete run folder (no itl.csv)"


def test_without_itl_figures_no_itl_csv_is_needed_nor_an_itl_panel_named(
        timed_run, tmp_path, capsys):
    def drop_itl(summary):
        for case in summary["cases"]:
            for key in [k for k in case if k.startswith("itl_ms_")]:
                del case[key]

    run = _copy(timed_run, tmp_path, drop_itl)
    (run / "itl.csv").unlink()
    code, md, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, "")
    assert "**TTFT distribution**\n\n![TTFT distribution](latency_cdfs.png)" in md
    assert "ITL distribution" not in md


def test_a_negative_itl_is_warned_about_and_left_out(timed_run, tmp_path, capsys):
    _, _, send, _ = timed_run
    run = _copy(timed_run, tmp_path)
    lines = (run / "itl.csv").read_text().splitlines()
    assert lines[1].startswith(f"{send},0,")
    lines[1] = f"{send},0,-1.0"
    (run / "itl.csv").write_text("\n".join(lines) + "\n")
    # the row is left out, naming its request, and the case's ITL figures, over it,
    # withheld: the case loads with its other 41 gaps and its other figures
    lines = [f"{run / 'itl.csv'}: case '{send}' has a negative itl_s (-1) in 1 row "
             "(request 0; left out)", _itl_withheld(run, send, 1)]
    code, md, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, "".join(f"bench.py report: warning: {ln}\n" for ln in lines))
    assert "at or below 0" not in md
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        loaded = load(run)
    assert [str(w.message) for w in caught] == lines
    _assert_itl_withheld(run, loaded, send, 41)
    assert float(loaded.itl[loaded.itl["case_id"] == send]["itl_s"].min()) >= 0


def test_an_interrupted_arm_is_named_not_said_not_to_have_run(timed_run, tmp_path, capsys):
    _, _, _, cached = timed_run

    def interrupt(summary):
        summary["cases"][1].update(complete=False, error="interrupted by SIGINT")
        summary["status"] = "incomplete"
        summary["problems"] = [f"{cached}: interrupted by SIGINT"]

    run = _copy(timed_run, tmp_path, interrupt)
    code, md, _ = _report(run, tmp_path, capsys)
    assert code == 0
    said = "`cached` did not finish: it ran but is left out, so no other line is set " \
           "against `send`."
    captions = [ln for ln in md.splitlines() if ln.startswith(
        ("Payload bytes per step", "Serializer time", "Output tokens/s of every case",
         "TTFT (from each"))]
    assert len(captions) == 4 and all(c.endswith(said) for c in captions), captions
    assert "Only `send` ran" not in md


def _loaded_lines(run: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        load(run)
    return [str(w.message) for w in caught]


def _edit_csv(path: Path, change) -> None:
    """Rewrite the CSV file ``path`` with its rows (dicts) ``change``d in place."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    change(rows)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _itl_withheld(run: Path, case_id: str, bad: int) -> str:
    """The warning that withholds the ITL figures of case ``case_id`` of ``run`` (42
    gaps as written), ``bad`` of its ``itl.csv`` rows left out as impossible."""
    return (f"{run / 'itl.csv'}: case '{case_id}' has itl_ms_* withheld (not quoted): "
            f"summary.json's are over its 42 rows, {bad} of them impossible (left out); "
            f"its other {42 - bad} rows are loaded")


def _assert_itl_withheld(run: Path, loaded, case_id: str, gaps: int) -> None:
    """``loaded`` holds case ``case_id`` of ``run`` with ``gaps`` itl.csv rows, its ITL
    figures NaN (withheld) and its TTFT, TPOT and E2E figures those of summary.json."""
    entry = next(c for c in json.loads((run / "summary.json").read_text())["cases"]
                 if c["case_id"] == case_id)
    case = loaded.cases[loaded.cases["case_id"] == case_id].iloc[0]
    assert len(loaded.itl[loaded.itl["case_id"] == case_id]) == gaps
    for name in ("ttft", "tpot", "itl", "e2e"):
        for q in ("mean", "p50", "p90", "p99"):
            figure = f"{name}_ms_{q}"
            if name == "itl":
                assert case[figure] != case[figure], figure
            else:
                assert case[figure] == entry[figure], figure


def _wall_s(run: Path, case_id: str) -> float:
    cases = json.loads((run / "summary.json").read_text())["cases"]
    return next(c["wall_s"] for c in cases if c["case_id"] == case_id)


def test_an_itl_csv_cut_short_is_warned_about_as_steps_csv_is(timed_run, tmp_path, capsys):
    """Each request of n output tokens has n - 1 gaps: 6 requests of 8 tokens, 42 a
    case; an itl.csv cut after 40 whole rows lacks 2 of the send case's and all of
    cached's."""
    _, _, send, cached = timed_run
    run = _copy(timed_run, tmp_path)
    lines = (run / "itl.csv").read_text().splitlines(keepends=True)
    assert len(lines) == 1 + 84
    (run / "itl.csv").write_text("".join(lines[:41]))
    line = (f"{run / 'itl.csv'}: 40 of the 84 rows that requests.csv counts (n - 1 for a "
            f"request of n output tokens; 2 case(s) short: {send}: 40 of 42; {cached}: 0 "
            "of 42); loaded what is valid")
    code, md, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, f"bench.py report: warning: {line}\n")
    assert _loaded_lines(run) == [line]


def test_a_requests_csv_cut_short_is_warned_about_as_steps_csv_is(timed_run, tmp_path,
                                                                   capsys):
    _, _, send, _ = timed_run
    run = _copy(timed_run, tmp_path)
    _edit_csv(run / "requests.csv", lambda rows: rows.pop(5))
    line = (f"{run / 'requests.csv'}: 11 of the 12 rows that summary.json counts (1 case(s) "
            f"short: {send}: 5 of 6); loaded what is valid")
    code, _, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert (code, err) == (0, f"bench.py report: warning: {line}\n")
    assert _loaded_lines(run) == [line]


def test_a_gap_longer_than_its_case_is_warned_about_and_left_out(timed_run, tmp_path,
                                                                 capsys):
    _, _, send, _ = timed_run
    run = _copy(timed_run, tmp_path)
    wall_s = _wall_s(run, send)
    # whole seconds past the replay's wall time, however long a loaded machine made it
    # (under a second when idle: a fixed 5 s assumed it stays so)
    longer = math.ceil(wall_s) + 5
    _edit_csv(run / "itl.csv", lambda rows: rows[0].update(itl_s=f"{longer}.0"))
    lines = [f"{run / 'itl.csv'}: case '{send}' has an itl_s longer than its wall_s "
             f"{wall_s:g} ({longer}) in 1 row (request 0; left out)",
             _itl_withheld(run, send, 1)]
    code, _, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert (code, err) == (0, "".join(f"bench.py report: warning: {ln}\n" for ln in lines))
    assert _loaded_lines(run) == lines
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        loaded = load(run)
    _assert_itl_withheld(run, loaded, send, 41)


def test_a_gap_longer_than_its_request_is_warned_about_and_left_out(timed_run, tmp_path):
    """A request's gaps sum to its e2e_s - ttft_s: no one gap is longer. The gap typed
    in lies between that span and the case's wall_s (the first request's span can end
    within a millisecond of the case's end), so only the request's check can refuse it."""
    _, _, send, _ = timed_run
    run = _copy(timed_run, tmp_path)
    first = next(r for r in csv.DictReader(open(run / "requests.csv", newline=""))
                 if r["case_id"] == send and r["index"] == "0")
    span, wall_s = float(first["e2e_s"]) - float(first["ttft_s"]), _wall_s(run, send)
    gap = span + min(0.001, (wall_s - span) / 2)
    assert span < gap < wall_s
    _edit_csv(run / "itl.csv", lambda rows: rows[0].update(itl_s=repr(gap)))
    assert _loaded_lines(run) == [
        f"{run / 'itl.csv'}: case '{send}' has an itl_s longer than its request's e2e_s - "
        f"ttft_s ({gap:g}) in 1 row (request 0; left out)", _itl_withheld(run, send, 1)]


def test_impossible_request_latencies_are_warned_about_and_left_out(timed_run, tmp_path,
                                                                    capsys):
    _, _, send, _ = timed_run
    run = _copy(timed_run, tmp_path)
    wall_s = _wall_s(run, send)

    def edit(rows):
        rows[0]["ttft_s"] = "-0.2"
        rows[1]["e2e_s"] = "99"
        rows[2]["e2e_s"] = repr(float(rows[2]["ttft_s"]) / 2)

    _edit_csv(run / "requests.csv", edit)
    with open(run / "requests.csv", newline="") as f:
        half = float(list(csv.DictReader(f))[2]["e2e_s"])
    where = f"{run / 'requests.csv'}: case '{send}' has"
    lines = [f"{where} a negative ttft_s (-0.2) in 1 row (request 0; left out)",
             f"{where} an e2e_s shorter than its ttft_s ({half:g}) in 1 row (request 2; "
             "left out)",
             f"{where} an e2e_s longer than its wall_s {wall_s:g} (99) in 1 row (request 1; "
             "left out)",
             # their gaps go with them, counted and named
             f"{run / 'itl.csv'}: case '{send}' has gaps of a request left out of "
             "requests.csv as impossible in 21 rows (requests 0, 1 and 2; left out)",
             # then the figures over those rows, withheld: the case loads with the others
             f"{where} ttft_ms_*, tpot_ms_* and e2e_ms_* withheld (not quoted): "
             "summary.json's are over its 6 rows, 3 of them impossible (left out); its "
             "other 3 rows are loaded", _itl_withheld(run, send, 21)]
    code, md, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, "".join(f"bench.py report: warning: {ln}\n" for ln in lines))
    assert _loaded_lines(run) == lines
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        loaded = load(run)
    kept = loaded.requests[loaded.requests["case_id"] == send]
    assert list(kept["index"]) == [3, 4, 5]
    # the gaps of the requests left out feed neither the ITL figures nor the CDF: 7 of
    # each kept request's 8 tokens, as itl.csv holds them
    gaps = loaded.itl[loaded.itl["case_id"] == send]
    assert list(gaps["index"]) == [3] * 7 + [4] * 7 + [5] * 7
    with open(run / "itl.csv", newline="") as f:
        written = [float(r["itl_s"]) for r in csv.DictReader(f)
                   if r["case_id"] == send and r["index"] in ("3", "4", "5")]
    assert list(gaps["itl_s"]) == written
    case = loaded.cases[loaded.cases["case_id"] == send].iloc[0]
    assert [case[f"{n}_ms_p50"] != case[f"{n}_ms_p50"]
            for n in ("ttft", "tpot", "itl", "e2e")] == [True, True, True, True]
    # every latency of send withheld: the Latency table shows cached's row alone
    section = md.split("\n## Latency\n", 1)[1].split("\n## ", 1)[0]
    assert [ln.split("|")[2].strip() for ln in section.splitlines()
            if ln.startswith("| 0 |")] == ["cached"]


def test_an_empty_itl_csv_is_refused_as_a_missing_one_is(timed_run, tmp_path, capsys):
    run = _copy(timed_run, tmp_path)
    (run / "itl.csv").write_bytes(b"")
    code, _, err = _report(run, tmp_path, capsys)
    assert (code, err) == (2, f"bench.py report: error: {run}: not a complete run folder "
                              "(itl.csv is empty)\n")
    with pytest.raises(ResultsError) as exc:
        load(run)
    assert str(exc.value) == f"{run}: not a complete run folder (itl.csv is empty)"


def test_summary_json_records_the_end_of_warm_up_pause(timed_run):
    # The pause (heap collected and frozen after --warmup-steps 2) is the harness's: a
    # timed replay's clock stops during it, and summary.json says how long it was.
    run = timed_run[0]
    for entry in json.loads((run / "summary.json").read_text())["cases"]:
        assert isinstance(entry["warmup_pause_s"], float) and entry["warmup_pause_s"] > 0
    assert ("| `warmup_pause_s` | the harness's pause at the end of warm-up, in s: the "
            "scheduler collects and freezes its heap") in METRICS
    assert "\n## The replay clock\n" in METRICS
