"""A scenario module's own code that raises once the run has started (its workload in
the middle of a case, its ``report()`` after the cases) is named in one line, with the
file and line that raised, not as the harness's internal error with a traceback; what
was measured is kept, and a failing ``report()`` costs neither the tables nor a
finished ``summary.json``."""

from __future__ import annotations

import json
import sys

import pytest

from ipc_bench import cli

HEAD = '''"""A scenario whose code raises."""
import dataclasses
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.scenario import steady_cases
NAME = "{name}"
'''

#: The cases of a scenario with a ``Failing`` workload: decode-steady's at 2 running.
CASES = '''
def cases(opts):
    return [dataclasses.replace(c, make_workload=lambda c=c: Failing(
                2, seed=opts.seed, vocab_size=c.make_workload().vocab_size))
            for c in steady_cases(opts, NAME, [2])]
'''

MIDRUN = HEAD + '''
class Failing(SteadyDecodeWorkload):
    def arrivals(self, step):
        if step >= 30:
            raise RuntimeError(f"boom at step {step}")
        return super().arrivals(step)
''' + CASES

UNDER = HEAD + '''
class Failing(SteadyDecodeWorkload):
    def arrivals(self, step):
        return super().arrivals(step) + ([self._make("x")] if step >= 30 else [])
''' + CASES

REPORT = HEAD + '''
def cases(opts):
    return steady_cases(opts, NAME, [2])

def report(summaries):
    raise ValueError("no figure for " + str(len(summaries)) + " cases")
'''

ARGS = ["--steps", "60", "--warmup-steps", "2", "--codecs", "msgpack", "--no-floor",
        "--no-single-process", "--quiet"]


@pytest.fixture
def scenarios(tmp_path, monkeypatch):
    """A user's scenarios folder with these modules, searched after the shipped ones."""
    from ipc_bench.harness.scenario import PACKAGE, scenarios_package

    user = tmp_path / "scenarios"
    user.mkdir()
    modules = {"raises_midrun": MIDRUN.replace("{name}", "raises-midrun"),
               "raises_under": UNDER.replace("{name}", "raises-under"),
               "raises_in_report": REPORT.replace("{name}", "raises-in-report")}
    for module, source in modules.items():
        (user / f"{module}.py").write_text(source)
    package = scenarios_package()
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(user)])
    yield user
    for module in modules:
        sys.modules.pop(f"{PACKAGE}.{module}", None)


def test_a_scenario_that_raises_mid_case_is_named_in_one_line(scenarios, tmp_path, capsys):
    run = tmp_path / "r"
    code = cli.main(["--scenario", "raises-midrun", "--policies", "send", *ARGS,
                     "--output", str(run)])
    err = capsys.readouterr().err
    why = ("the scenario's code raised RuntimeError: boom at step 30 "
           "(scenarios/raises_midrun.py line 10, in arrivals)")
    assert (code, err) == (1, f"bench.py: error: num_running=2/send/msgpack#0: {why}; "
                              f"partial results: {run}\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == (
        "failed", [f"num_running=2/send/msgpack#0: {why}"])


def test_a_harness_error_under_a_scenarios_call_keeps_its_traceback(scenarios, tmp_path,
                                                                    capsys):
    run = tmp_path / "r"
    code = cli.main(["--scenario", "raises-under", "--policies", "send", *ARGS,
                     "--output", str(run)])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("Traceback (most recent call last):"), err
    last = err.splitlines()[-1]
    assert last.startswith("bench.py: error under the scenario's code "
                           "(scenarios/raises_under.py line 9, in arrivals) in "
                           "num_running=2/send/msgpack#0: ValueError: could not convert "
                           "string to float: 'x'"), last
    assert last.endswith(f"; partial results: {run}"), last


def test_a_scenario_report_that_raises_costs_only_its_text(scenarios, tmp_path, capsys):
    run = tmp_path / "r"
    code = cli.main(["--scenario", "raises-in-report", *ARGS, "--output", str(run)])
    out, err = capsys.readouterr()
    why = ("the scenario's report() raised ValueError: no figure for 2 cases "
           "(scenarios/raises_in_report.py line 11, in report); the cases' results are "
           "complete")
    assert (code, err) == (1, f"bench.py: error: {why}\n")
    assert "num_running=2" in out and f"results: {run}" in out  # the tables printed
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"], len(summary["cases"])) == (
        "failed", [why], 2)
    assert summary["comparisons"]  # the checks across cases ran
