"""Soak runs one case (one policy, one codec, once): what would add another is refused
before anything runs, one line, exit 2, never dropped; the choices of that one case are
kept."""

from __future__ import annotations

import pytest

from ipc_bench import cli
from ipc_bench.cli import run as cli_run
from ipc_bench.cli.options import build_parser
from ipc_bench.harness.scenario import discover

HEAD = "bench.py: error: scenario soak runs one case (one policy, one codec)"

REFUSED = [
    (["--repeat", "2"], f"{HEAD} once: drop --repeat 2"),
    (["--repeat", "3"], f"{HEAD} once: drop --repeat 3"),
    (["--aa"], f"{HEAD}, not a policy against a copy of itself: drop --aa"),
    (["--aa", "--policies", "cached"],
     f"{HEAD}, not a policy against a copy of itself: drop --aa"),
    (["--policies", "send,cached"],
     f"{HEAD}: give one policy, --policies send or --policies cached, not --policies "
     "send,cached (without --policies it runs send)"),
    (["--policies", "cached,send", "--async-scheduling"],
     f"{HEAD}: give one policy, --policies cached, not --policies cached,send (without "
     "--policies it runs cached)"),
    (["--codecs", "msgpack,pickle"],
     f"{HEAD}: give one codec, e.g. --codecs msgpack, not --codecs msgpack,pickle "
     "(without --codecs it runs msgpack)"),
    (["--codecs", "pickle,msgpack", "--policies", "cached"],
     f"{HEAD}: give one codec, e.g. --codecs pickle, not --codecs pickle,msgpack "
     "(without --codecs it runs msgpack)"),
    (["--ci-method", "sign"], f"{HEAD}, compared with nothing: drop --ci-method sign"),
    (["--order-seed", "3"], f"{HEAD}, in no order: drop --order-seed 3"),
    # the user trial's command: the first thing that would be dropped is named
    (["--max-requests", "30", "--trace-speedup", "20", "--repeat", "2",
      "--async-scheduling", "--codecs", "msgpack,pickle"],
     f"{HEAD} once: drop --repeat 2"),
]


@pytest.mark.parametrize("extra,line", REFUSED, ids=[" ".join(e) for e, _ in REFUSED])
def test_soak_refuses_what_it_would_drop_before_anything_runs(extra, line, tmp_path, capsys):
    trace = tmp_path / "conv.csv"  # never read: the refusal comes first
    run = tmp_path / "run"
    code = cli.main(["--scenario", "soak", "--trace", str(trace), "--output", str(run),
                     *extra])
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (2, [line], "")
    assert not run.exists()


def _soak_cases(tmp_path, *extra: str) -> list[tuple[str, str, str, bool]]:
    """(case id, policy, codec, async) of each case soak builds for these options,
    checked as ``bench.py`` checks them before a run."""
    trace = tmp_path / "conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,374,44\n"
                     "2023-11-16 18:15:47.6805900,20,4\n")
    parser = build_parser()
    args = parser.parse_args(["--scenario", "soak", "--trace", str(trace), *extra])
    module = discover()["soak"]
    cli_run._check_options(args, parser, module)
    cases = module.cases(cli_run._scenario_options(args))
    return [(c.case_id, c.policy, c.codec, bool(c.async_scheduling)) for c in cases]


def test_soak_runs_the_one_case_asked_for(tmp_path):
    assert _soak_cases(tmp_path) == [("trace=soak:2/send/msgpack#0", "send", "msgpack",
                                      False)]
    assert _soak_cases(tmp_path, "--repeat", "1", "--policies", "cached",
                       "--codecs", "pickle") == [
        ("trace=soak:2/cached/pickle#0", "cached", "pickle", False)]
    # --async-scheduling chooses the one case: cached with async scheduling, without
    # the synchronous twin the other scenarios pair with it
    assert _soak_cases(tmp_path, "--async-scheduling") == [
        ("trace=soak:2/cached+async/msgpack#0", "cached", "msgpack", True)]
    assert _soak_cases(tmp_path, "--async-scheduling", "--policies", "cached",
                       "--codecs", "pickle") == [
        ("trace=soak:2/cached+async/pickle#0", "cached", "pickle", True)]
    assert _soak_cases(tmp_path, "--ci-method", "t") == [
        ("trace=soak:2/send/msgpack#0", "send", "msgpack", False)]


@pytest.mark.parametrize("extra", [["--num-spec-tokens", "2"], ["--num-spec-tokens", "1,2"],
                                   ["--no-floor"], ["--no-single-process"],
                                   ["--ci-method", "t"]])
def test_soak_takes_what_chooses_its_one_case_or_leaves_out_what_it_does_not_run(
        extra, tmp_path):
    parser = build_parser()
    args = parser.parse_args(["--scenario", "soak", "--trace", str(tmp_path / "t.csv"),
                              *extra])
    cli_run._check_options(args, parser, discover()["soak"])  # no UsageError
