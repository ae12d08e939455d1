"""The tables a reader quotes apart from their notes name a model other than null after
the codec, as the findings' summary table does (``msgpack, emulated model``): the
comparison block's first line, the report's ``cached against send`` and ``Cases``
tables."""

from __future__ import annotations

import json

import pytest

from analysis_run import run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.report.tables import comparison_parts, model_words

#: The ° a one-runner case's comparison carries after its codec on exactly 2 cores.
M = one_runner_mark()
HEAD = ("cached vs send  [num_running=4]  {}: cached/send paired by repetition: "
        "geometric mean of the per-repetition ratios [95 % Student-t interval]; 2 pairs; "
        "verdicts Holm-adjusted over 7 timed metrics")


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """A two-repetition emulated run (msgpack and the single process), its stdout and
    its report's lines."""
    base = tmp_path_factory.mktemp("emulated")
    out = run_bench(base / "run", ["--scenario", "decode-steady", "--model", "emulated",
                                   "--num-running", "4", "--steps", "20", "--warmup-steps",
                                   "3", "--repeat", "2", "--codecs", "msgpack",
                                   "--no-floor"])
    assert cli.main(["report", str(base / "run"), "--output", str(base / "rep"),
                     "--no-figures"]) == 0
    return base, out, (base / "rep" / "report.md").read_text().splitlines()


def _section(md: list[str], head: str) -> list[list[str]]:
    """The table rows of section ``head`` as cells, header and rule left out."""
    start = md.index(head)
    end = next(i for i in range(start + 1, len(md)) if md[i].startswith("## "))
    rows = [ln.strip("|").split(" | ") for ln in md[start:end] if ln.startswith("| ")]
    return [[c.strip() for c in r] for r in rows
            if r[0].strip() not in ("workload", "rep") and not r[0].startswith("--")]


def test_the_comparison_blocks_first_line_names_the_emulated_model(emulated):
    _, out, _ = emulated
    lines = out.splitlines()
    assert HEAD.format(f"msgpack, emulated model{M}") in lines
    assert [ln.split(":")[0] for ln in lines if ln.startswith("cached vs send")] == [
        f"cached vs send  [num_running=4]  msgpack, emulated model{M}",
        "cached vs send  [num_running=4]  none, emulated model"]


def test_the_pair_and_case_tables_name_the_emulated_model_in_every_codec_cell(emulated):
    _, _, md = emulated
    pairs = _section(md, "## cached against send")
    assert len(pairs) == 14
    # (a timing row's codec cell marked ° on 2 cores: analysis.cores)
    assert {r[1].rstrip("°") for r in pairs[:9]} == {"msgpack, emulated model"}
    assert {r[1] for r in pairs[9:]} == {"none, emulated model"}
    cases = _section(md, "## Cases")
    # the transport without its cores mark (° on 2 cores: analysis.cores)
    assert sorted((r[1], r[2], r[3].rstrip("°")) for r in cases) == sorted(
        [(arm, "msgpack, emulated model", "ipc") for arm in ("send", "cached")] * 2
        + [(arm, "none, emulated model", "inproc") for arm in ("send", "cached")] * 2)
    header = next(ln for ln in md if ln.startswith("| rep | policy |"))
    assert header.split(" | ")[:4] == ["| rep", "policy", "codec", "transport"]


def test_the_null_model_adds_nothing_and_a_model_paired_apart_is_named_once(emulated):
    base, _, _ = emulated
    c = json.loads((base / "run" / "summary.json").read_text())["comparisons"][0]
    assert (c["codec"], c["model"], c["paired_apart"]) == ("msgpack", "emulated", [])
    assert comparison_parts(dict(c, model="null"))[0] == HEAD.format(f"msgpack{M}")
    assert comparison_parts(dict(c, model=None))[0] == HEAD.format(f"msgpack{M}")
    assert comparison_parts(dict(c, model="torch", paired_apart=["model"]))[0] == \
        HEAD.format(f"msgpack, torch model{M}")
    assert [model_words(m) for m in ("emulated", "fixed-step", "null", None, "")] == [
        ", emulated model", ", fixed-step model", "", "", ""]
