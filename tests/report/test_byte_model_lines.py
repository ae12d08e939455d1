"""The byte model's lines under the tables name the run's token-id distribution, and
packed's per-request basis."""

from __future__ import annotations

from ipc_bench.report.tables import format_byte_model


def _row(codec, token_ids, expected):
    return dict(workload="num_running=64", codec=codec, arm="send", policy="send",
                vocab_size=128_256, token_ids=token_ids, messages_checked=10, mismatches=0,
                model_send_minus_cached_bytes_per_request=3.25,
                uniform_send_minus_cached_bytes_per_request=4.975,
                expected_send_minus_cached_bytes_per_request=expected,
                measured_send_minus_cached_bytes_per_request=3.3)


def test_lines_name_the_distribution_and_the_packed_basis():
    text = format_byte_model([_row("msgpack", "zipf", 3.172), _row("packed", "zipf", 29.0)])
    assert text.strip().splitlines()[1:] == [
        "  [num_running=64] msgpack send: 10 of 10 messages exact (both directions); "
        "send - cached = 3.250 B per running "
        "request on these steps (zipf ids in a 128,256 vocabulary: 3.172 per id with its own "
        "framing, not the outer list's; measured over the run: 3.300)",
        "  [num_running=64] packed send: 10 of 10 messages exact (both directions); "
        "send - cached = 3.250 B per running "
        "request on these steps (one array('i') per request from 256 running on: 29.000; "
        "measured over the run: 3.300)"]


def test_rows_of_older_runs_read_as_uniform():
    row = _row("pickle", "uniform", None)
    del row["token_ids"], row["expected_send_minus_cached_bytes_per_request"]
    assert ("(uniform ids in a 128,256 vocabulary: 4.975 per id with its own framing, not "
            "the outer list's;") in format_byte_model([row])


def test_a_line_counts_both_directions_and_says_so():
    """One step's SchedulerOutput and ModelRunnerOutput are two messages under the
    case's arm: 200 steps are 400 messages, split by direction."""
    row = dict(_row("msgpack", "uniform", 4.975), messages_checked=400, mismatches=1,
               scheduler_outputs_checked=200, model_runner_outputs_checked=200)
    assert format_byte_model([row]).splitlines()[2].split(";")[0] == (
        "  [num_running=64] msgpack send: 399 of 400 messages exact (both directions: 200 "
        "SchedulerOutput, 200 ModelRunnerOutput)")


def _counted(per_direction, counted):
    return dict(_row("msgpack", "uniform", 4.975), messages_checked=2 * per_direction,
                mismatches=0, scheduler_outputs_checked=per_direction,
                model_runner_outputs_checked=per_direction, counted_steps=counted)


def test_a_line_says_which_steps_were_checked_and_why_that_many():
    """Cases of one run checked on other numbers of messages say why: a case that
    counted fewer steps than the capture keeps, the cap of 200 steps, or frames large
    enough that 8 MiB per direction holds fewer steps."""
    lines = [line.split(";")[0] for line in format_byte_model(
        [_counted(100, 100), _counted(200, 1000), _counted(22, 1000)]).splitlines()[2:]]
    head = "  [num_running=64] msgpack send: "
    assert lines == [
        head + "200 of 200 messages exact (both directions: 100 SchedulerOutput, 100 "
        "ModelRunnerOutput",
        head + "400 of 400 messages exact (both directions: 200 SchedulerOutput, 200 "
        "ModelRunnerOutput",
        head + "44 of 44 messages exact (both directions: 22 SchedulerOutput, 22 "
        "ModelRunnerOutput"]
    text = format_byte_model([_counted(100, 100), _counted(200, 1000), _counted(22, 1000)])
    assert "ModelRunnerOutput; every one of its 100 counted steps); send - cached" in text
    assert "ModelRunnerOutput; its only counted step); send - cached" in \
        format_byte_model([_counted(1, 1)])
    assert ("ModelRunnerOutput; 200 of its 1,000 counted steps, evenly spaced (at most 200 "
            "per case)); send - cached") in text
    assert ("ModelRunnerOutput; 22 of its 1,000 counted steps, evenly spaced: its frames "
            "are larger, and the capture keeps at most 8 MiB of them per direction); "
            "send - cached") in text
    # frames over 8 MiB / 20: the capture keeps 20 steps all the same
    assert ("ModelRunnerOutput; 20 of its 1,000 counted steps, evenly spaced: its frames "
            "are larger, and the capture keeps about 8 MiB of them per direction, but never "
            "fewer than 20 steps); send - cached") in format_byte_model([_counted(20, 1000)])


def test_the_report_rows_record_the_counted_steps(tmp_path_factory):
    """A run's byte-model rows carry each case's counted steps, which the captures
    record (``num_counted_steps``)."""
    import json

    from analysis_run import shared_run

    run = shared_run(tmp_path_factory, ["--scenario", "decode-steady", "--num-running", "4",
                                        "--steps", "30", "--warmup-steps", "5", "--codecs",
                                        "msgpack", "--no-floor", "--no-single-process"])
    rows = json.loads((run / "summary.json").read_text())["byte_model"]
    assert [(r["arm"], r["scheduler_outputs_checked"], r["counted_steps"])
            for r in sorted(rows, key=lambda r: r["arm"])] == [("cached", 30, 30),
                                                               ("send", 30, 30)]
