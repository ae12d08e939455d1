"""The report shows the notes a run printed when it started (``note: ...``), and a
report of several runs says when they ran on other hosts (by the hostnames both
recorded; a run made with ``--no-hostname`` says nothing about its host)."""

from __future__ import annotations

import json

import pytest

from analysis_run import copy_as_another_run, run_bench
from ipc_bench import cli

SAME = "Same machine, software and commit by their metadata."
SHORT = "the trace has 6 requests, fewer than --max-requests 99,999: all 6 are replayed"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A logical replay of a 6-request trace asked for 99,999 requests."""
    base = tmp_path_factory.mktemp("notes")
    trace = base / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:40.{i * 5:02d}00000,40,8\n" for i in range(6)))
    run_bench(base / "a", ["--scenario", "azure-conv", "--trace", str(trace),
                           "--max-requests", "99999", "--codecs", "msgpack", "--no-floor",
                           "--no-single-process", "--warmup-steps", "2"])
    return base / "a"


def _copy(run, path, hostname, seconds=1.0):
    """Another run of ``run`` (started ``seconds`` later) at ``path``, on
    ``hostname`` (``None``: none recorded)."""
    copy_as_another_run(run, path, seconds)
    summary = json.loads((path / "summary.json").read_text())
    if hostname is None:
        summary["metadata"].pop("hostname", None)
    else:
        summary["metadata"]["hostname"] = hostname
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def _report(tmp_path, *runs, figures: bool = True) -> list[str]:
    """report.md of ``runs`` as lines; ``figures`` false: drawn with ``--no-figures``."""
    out = tmp_path / "rep"
    extra = [] if figures else ["--no-figures"]
    assert cli.main(["report", *map(str, runs), "--output", str(out), *extra]) == 0
    return (out / "report.md").read_text().splitlines()


def test_the_run_notes_are_in_its_section(run, tmp_path):
    assert json.loads((run / "summary.json").read_text())["metadata"]["notes"] == [SHORT]
    md = _report(tmp_path, run)
    at = md.index("## Notes")
    assert md[at:at + 5] == ["## Notes", "",
                             "Printed by the run when it started (`note:` lines):", "",
                             f"- {SHORT}"]
    assert at < md.index("## Findings")


def test_runs_on_other_hosts_are_said(run, tmp_path):
    a = _copy(run, tmp_path / "a", "host-a")
    b = _copy(run, tmp_path / "b", "host-b", seconds=2.0)
    md = _report(tmp_path, a, b, figures=False)
    assert SAME not in md
    assert "- b against a: hostname differs: host-b vs host-a" in md


@pytest.mark.parametrize("hosts", [("host-a", "host-a"), ("host-a", None), (None, None)],
                         ids=["same-host", "one-without", "both-without"])
def test_runs_on_one_host_or_without_hostname_are_the_same_machine(run, tmp_path, hosts):
    a = _copy(run, tmp_path / "a", hosts[0])
    b = _copy(a, tmp_path / "b", hosts[1])  # after a ended: the runs did not overlap
    md = _report(tmp_path, a, b, figures=False)
    assert SAME in md
    assert not any("hostname differs" in line for line in md)


def _git(path, **git):
    summary = json.loads((path / "summary.json").read_text())
    summary["metadata"]["git"] = git
    (path / "summary.json").write_text(json.dumps(summary))


def test_a_dirty_run_is_not_said_to_share_a_clean_runs_commit(run, tmp_path):
    # a tracked file differed from the commit as b ran: not the code a ran
    a = _copy(run, tmp_path / "a", "host-a")
    b = _copy(a, tmp_path / "b", "host-a")
    commit = "ee4a970315f1" + "0" * 28
    _git(a, commit=commit, dirty=False, untracked=0, branch="main")
    _git(b, commit=commit, dirty=True, untracked=0, branch="main")
    md = _report(tmp_path, a, b, figures=False)
    assert SAME not in md
    assert f"- b against a: git commit differs: {commit} (dirty) vs {commit}" in md
    rows = [line.split(" | ")[0::5] for line in md if line.startswith(("| a |", "| b |"))]
    assert rows == [["| a", "ee4a970315f1"], ["| b", "ee4a970315f1 (dirty)"]]
    assert "| git | ee4a970315f1 (dirty) on main |" in md


@pytest.mark.parametrize("digests,said", [
    (("1f" * 32, "9a" * 32),
     "- b against a: git uncommitted changes differ: same commit ee4a970315f1 (dirty), "
     "different uncommitted changes (diff sha256 9a9a9a9a9a9a vs 1f1f1f1f1f1f)"),
    (("1f" * 32, None),
     "- b against a: git uncommitted changes unknown: same commit ee4a970315f1 (dirty), "
     "but b recorded no digest of its uncommitted changes (a run made before the digest "
     "was recorded): the code that ran may differ"),
    (("1f" * 32, "1f" * 32),
     "Every run was made from uncommitted changes to that commit, the same "
     "changes by the SHA-256 of their diff."),
], ids=["different-changes", "unknown", "same-changes"])
def test_two_dirty_runs_of_one_commit_say_whether_their_changes_match(run, tmp_path,
                                                                       digests, said):
    a = _copy(run, tmp_path / "a", "host-a")
    b = _copy(a, tmp_path / "b", "host-a")
    commit = "ee4a970315f1" + "0" * 28
    for path, digest in zip((a, b), digests):
        _git(path, commit=commit, dirty=True, untracked=0, branch="main",
             **({"diff_sha256": digest} if digest else {}))
    md = _report(tmp_path, a, b, figures=False)
    assert said in md
    assert (SAME in md) == (digests[0] == digests[1])
