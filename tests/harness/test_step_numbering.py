"""How the lines that name a case's step number it: the runner's failure says so in the
words of the interrupt line, one shared phrase (``errors.STEP_NUMBERING``)."""

from ipc_bench.cli import execute
from ipc_bench.errors import STEP_NUMBERING, runner_failed_text
from ipc_bench.harness.scheduler_loop import runner_failure
from ipc_bench.wire.control import ErrorReport


def test_the_runner_failure_line_says_how_its_step_is_numbered():
    assert runner_failed_text(634, "DecodeError: truncated") == (
        "runner failed at step 634 (steps.csv seq: warm-up and uncounted steps included): "
        "DecodeError: truncated")
    error = runner_failure(ErrorReport("RunnerError: injected failure", 82))
    assert (str(error), error.step) == (
        "runner failed at step 82 (steps.csv seq: warm-up and uncounted steps included): "
        "RunnerError: injected failure", 82)


def test_a_failure_reported_before_any_step_names_no_step_number():
    error = runner_failure(ErrorReport("ConfigError: refused"))
    assert (str(error), error.step) == (
        "runner failed before its first step: ConfigError: refused", -1)


def test_the_interrupt_line_and_the_runner_failure_share_one_phrase():
    assert execute.STEP_NUMBERING is STEP_NUMBERING
    assert STEP_NUMBERING == "steps.csv seq: warm-up and uncounted steps included"
