"""Checks of ``summary.json``'s metadata and case entries, for ``results.load``:
each case's fields, identity and settings (``_case_problem``, ``_identity_problem``:
a known codec, policy and arm, numbers from 0 to ``MAX_CASE_VALUE``, a ``case_id``
that is a text that is not empty), the shapes and values of the metadata (``check_shapes``,
``_metadata_lines``), and the cases kept (``_valid_cases``), each entry left out said
in one line. It quotes values and raises as ``run_files`` does; ``row_checks`` and
``results`` build on it.
"""

from __future__ import annotations

import numbers
import re
from pathlib import Path
from typing import Any

from ipc_bench.analysis.run_files import ResultsError, _NULLABLE_INT_COLUMNS, _shown
from ipc_bench.analysis.stats import METHODS
from ipc_bench.engine.config import SEND
from ipc_bench.harness.environment import (REMOTE_RUNNERS_WORDS, iso_time,
                                           remote_runners_problem, remote_runners_shape)
from ipc_bench.harness.spec import NO_CODEC


def _figure(case, key: str) -> float | None:
    """The case's (a ``cases`` row's) ``key`` as a float, ``None`` when it is absent,
    null, NaN or not a number."""
    value = case.get(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        return None
    return float(value)


def _as_number(value: Any) -> Any:
    """A ``repetition`` or another figure from a table or summary.json as a number to
    compare (``0``, ``0.0`` and ``"0"`` alike), the value itself where it is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


#: Fields of a ``summary.json`` case that are numbers (or null) besides the metrics
#: of ``analysis.metrics.METRICS``: counts, times and the replay's speed.
_NUMERIC_CASE_FIELDS = ("repetition", "num_steps", "num_warmup_steps", "warmup_token_share",
                        "num_total_steps",
                        "counted_steps_asked", "max_steps", "output_len_mean", "wall_s",
                        "num_requests",
                        "num_rejected", "num_finished", "num_preemptions", "output_tokens",
                        "trace_speedup", "busy_output_tokens_per_s",
                        "requests_per_s", "total_tokens_per_s",
                        "input_oracle_interval", "num_spec_tokens", "case_elapsed_s",
                        "runner_wait_s",
                        "machine_busy_pct", "cpu_steal_pct", "num_cut_at_max_model_len",
                        "runner_gap_ns_median", "runner_gap_ns_p99",
                        "runner_gap_share_median", "runner_gap_share_p99",
                        "runner_step_ns_median", "step_ns_max", "step_ns_max_seq",
                        "output_tokens_per_s_without_longest", "between_steps_ns_max",
                        "between_steps_ns_max_seq",
                        # a timed replay's pace figures (``analysis.pace``)
                        "num_waiting_mean", "waiting_step_share", "last_arrival_s",
                        "arrival_span_share", "idle_s", "idle_share",
                        # a trace replay's stalled steps (``analysis.replay_stall``)
                        "stalled_steps", "stalled_step_share", "stall_unjudged_steps",
                        "stalled_step_ns_max", "stalled_step_ns_max_seq",
                        "stalled_step_ns_max_ratio", "output_tokens_per_s_without_stalled",
                        "step_ns_bin_ratio_max",
                        # each process's garbage collections and their time, per step
                        "sched_gc_collections_per_step", "runner_gc_collections_per_step",
                        "sched_gc_ns_per_step", "runner_gc_ns_per_step",
                        # what each p99 is over (the report's p99 notes)
                        "ttft_count", "tpot_count", "itl_count", "e2e_count",
                        "runner_gap_count")


#: Fields of a ``summary.json`` case that are percentages of the whole machine's CPU
#: time during the case (``harness.environment.cpu_usage_between``: busy and steal,
#: two disjoint parts of it): each from 0 to ``MAX_PERCENT``, and so is their sum.
_PERCENT_CASE_FIELDS = ("machine_busy_pct", "cpu_steal_pct")

#: The largest value of a ``_PERCENT_CASE_FIELDS`` field, and of their sum: the whole
#: machine's CPU time.
MAX_PERCENT = 100.0

#: The fields of a ``summary.json`` case that only the scheduler <-> runner hop of a
#: two-process case has (``analysis.summary._wire_bytes``, ``tp_figures``,
#: ``pp_figures``, ``frontend_figures``' whole control plane): a single-process case
#: (``transport`` ``harness.spec.INPROC``) sends no message between them, so it has
#: none of them (``_inproc_problem``). Its frontend hop's ``frontend_wire_bytes_per_step``
#: (``--frontend``: another process) it may have.
TWO_PROCESS_WIRE_FIELDS = ("sched_to_runner_wire_bytes_per_step",
                           "runner_to_sched_wire_bytes_per_step", "s2r_wire_bytes_total",
                           "r2s_wire_bytes_total", "zmtp_handshake_bytes",
                           "control_plane_wire_bytes_per_step",
                           "tp_s2r_wire_bytes_all_ranks_per_step",
                           "pp_s2r_wire_bytes_all_stages_per_step")

#: Fields of a ``summary.json`` case (or workload labels) that hold a whole number or
#: null: the report turns them into ``int`` (``At 4 running requests``, ``tp=2``), and
#: the counts of steps and requests the rows of ``steps.csv``, ``floor.csv`` and
#: ``requests.csv`` are checked against (``num_steps`` 1.5 read as 1 counted step in
#: one warning and as 1.5 in another).
_WHOLE_CASE_FIELDS = _NULLABLE_INT_COLUMNS + ("num_steps", "num_warmup_steps",
                                              "num_total_steps", "loop_steps",
                                              "num_requests")

#: The largest value a known numeric field may hold: above it, a value is an edit, not
#: a measurement (1e15 ns is 11 days; 1e15 bytes or tokens/s is beyond any machine),
#: and figures and sums of it overflow.
MAX_CASE_VALUE = 1e15

#: The statuses ``RunFolder`` writes (``status`` of ``summary.json``).
RUN_STATUSES = ("complete", "incomplete", "failed")


#: Fields every ``summary.json`` case names its place in the tables by: without them
#: a case's figures would join no row, or another's.
_IDENTITY_FIELDS = ("policy", "workload")

#: Fields of a ``summary.json`` case that, when there and not null, hold a text: the
#: tables and comparisons group the cases by them (the schedule digest: which cases'
#: token streams and floors compare; the token digest: which cases' outputs agree).
_TEXT_CASE_FIELDS = ("scenario", "transport", "model", "schedule_digest", "token_digest")


def known_codecs() -> tuple[str, ...]:
    """The ``codec`` values a case can have: the two-process codecs
    (``wire.codecs.CODECS``) and the single-process baseline's (``NO_CODEC``)."""
    from ipc_bench.wire.codecs import CODECS

    return (*CODECS, NO_CODEC)


def known_policies() -> tuple[str, ...]:
    """The ``policy`` values a case can have (``engine.config.POLICIES``)."""
    from ipc_bench.engine.config import POLICIES

    return tuple(POLICIES)


def known_arms() -> tuple[str, ...]:
    """The ``arm`` values a case can have, A/A copies (the name with ``'``) aside: the
    policies (``engine.config.POLICIES``), a ``--pp`` case's direct path
    (``engine.pipeline.DIRECT``), async scheduling (``harness.spec.ASYNC_ARM``) and
    the ``overhead`` scenario's instrumentations (``harness.spec.INSTRUMENTATIONS``).
    ``is_known_arm`` takes each of them with ``'`` too."""
    from ipc_bench.engine.config import POLICIES
    from ipc_bench.engine.pipeline import DIRECT
    from ipc_bench.harness.spec import ASYNC_ARM, INSTRUMENTATIONS

    return (*POLICIES, DIRECT, ASYNC_ARM, *INSTRUMENTATIONS)


def is_known_arm(arm: Any) -> bool:
    """Whether ``arm`` (a case's ``arm`` field) is one of ``known_arms``, or an A/A copy
    of one (``send'``)."""
    if not isinstance(arm, str):
        return False
    arms = known_arms()
    return arm in arms or (arm.endswith("'") and arm[:-1] in arms)


def _identity_problem(case: dict[str, Any], run_scenario: Any = None) -> str | None:
    """What is wrong with the fields a ``summary.json`` case is told apart by, in words
    after ``case 'ID' has`` (``no policy``, ``arm "banana", not one of ...``): a
    missing or empty ``policy`` or ``workload`` (``_IDENTITY_FIELDS``), or one that is
    not a text, or a ``policy`` not one of ``known_policies``; an ``arm`` (optional: an older case is its policy) that is not
    ``is_known_arm``; a ``codec`` that is not one of ``known_codecs``; a ``complete``
    that is not true or false; a ``scenario``, ``transport``, ``model``,
    ``schedule_digest`` or ``token_digest`` (``_TEXT_CASE_FIELDS``) there that is not a text, or a ``scenario`` other than the
    run's (``run_scenario``, its metadata's, when that is a text). ``None`` when all are
    as a run writes them."""
    for key in _IDENTITY_FIELDS:
        value = case.get(key)
        if value is None or value == "":
            return f"no {key}"
        if not isinstance(value, str):
            return f"{key} {_shown(value)}, not a text"
    for key in _TEXT_CASE_FIELDS:
        value = case.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key} {_shown(value)}, not a text"
    scenario = case.get("scenario")
    if isinstance(run_scenario, str) and scenario is not None and scenario != run_scenario:
        return (f"scenario {_shown(scenario)}, but the run's (metadata.scenario) is "
                f"{_shown(run_scenario)}")
    policy = case["policy"]
    if policy not in known_policies():
        return f"policy {_shown(policy)}, not one of {', '.join(known_policies())}"
    arm = case.get("arm")
    if arm not in (None, "") and not is_known_arm(arm):
        return (f"arm {_shown(arm)}, not one of {', '.join(known_arms())} "
                "(or an A/A copy of one, with ')")
    codec = case.get("codec")
    if codec not in known_codecs():
        return (f"codec {_shown(codec)}, not one of {', '.join(known_codecs())}"
                if "codec" in case else "no codec")
    done = case.get("complete")
    if not isinstance(done, bool):
        return (f"complete {_shown(done)}, not true or false" if "complete" in case
                else "no complete")
    return None


def _case_id_parts(case_id: Any) -> tuple[str, str, int, str] | None:
    """The arm, codec, repetition and workload labels a run's ``case_id`` names
    (``harness.spec.CaseSpec.case_id``: ``LABELS/ARM/CODEC#REPETITION``, ``LABELS`` in
    the scenario's order, ``num_running=4``), or ``None`` for an id not of that form
    with a known arm and codec (one a test or an older tool wrote: nothing to check it
    against)."""
    if not isinstance(case_id, str):
        return None
    parts = case_id.rsplit("/", 2)
    if len(parts) != 3:
        return None
    codec, sep, repetition = parts[2].rpartition("#")
    if not sep or codec not in known_codecs() or not is_known_arm(parts[1]) \
            or not repetition.isdecimal():
        return None
    return parts[1], codec, int(repetition), parts[0]


def _arm_problem(case: dict[str, Any]) -> str | None:
    """Where a case's ``workload``, ``arm``, ``codec`` or ``repetition`` is not the one
    its ``case_id`` names (``_case_id_parts``: a hand edit that swapped two cases'
    labels and left their ids, or typed another workload into an id; the workload's
    labels in any order, as ``workload`` has them sorted), or its ``arm`` is a
    policy's (or its A/A copy's) other than its ``policy``, in words after ``case 'ID'
    has`` (``arm "cached", but its case_id names arm send``, ``workload
    "num_running=4", but its case_id names workload num_running=8``); ``None``
    otherwise."""
    arm = case.get("arm") or None
    policy = case["policy"]
    if isinstance(arm, str) and arm.rstrip("'") in known_policies() \
            and arm.rstrip("'") != policy:
        return f"arm {_shown(arm)}, but policy {_shown(policy)}"
    named = _case_id_parts(case.get("case_id"))
    if named is None:
        return None
    workload = case.get("workload")
    if isinstance(workload, str) and sorted(workload.split(",")) != sorted(
            named[3].split(",")):
        return f"workload {_shown(workload)}, but its case_id names workload {named[3]}"
    for key, value, want in (("arm", arm, named[0]), ("codec", case.get("codec"), named[1]),
                             ("repetition", case.get("repetition"), named[2])):
        if value is not None and value != want:
            return f"{key} {_shown(value)}, but its case_id names {key} {want}"
    return None


def _value_problem(key: str, value: Any, whole: bool = False) -> str | None:
    """Why ``value`` of the known numeric field ``key`` is not one, in words
    (``output_tokens_per_s "fast", not a number``); ``None`` when it is a number from
    0 to ``MAX_CASE_VALUE`` (a whole one when ``whole``), or null."""
    if value is None:
        return None
    shown = f"{key} {_shown(value)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{shown}, not a number"
    if value != value or value in (float("inf"), float("-inf")):
        return f"{shown}, not a finite number"
    if whole and value != int(value):
        return f"{shown}, not a whole number"
    if value < 0:
        return f"{shown}, a negative number"
    if value > MAX_CASE_VALUE:
        return f"{shown}, more than {MAX_CASE_VALUE:.0e}"
    return None


def _percent_problem(case: dict[str, Any]) -> str | None:
    """Why the ``_PERCENT_CASE_FIELDS`` of ``case`` (each already a number from 0 to
    ``MAX_CASE_VALUE``, or null) are not shares of the machine's CPU time, in words
    after ``case 'ID' has`` (``machine_busy_pct 150, more than 100 (a percentage of the
    machine's CPU time)``): one above ``MAX_PERCENT``, or the two summed above it (busy
    and steal are disjoint parts of it; within 1e-9, as the two are divided apart).
    ``None`` when they are."""
    said = []
    for key in _PERCENT_CASE_FIELDS:
        value = case.get(key)
        if value is not None and value > MAX_PERCENT:
            return (f"{key} {_shown(value)}, more than {MAX_PERCENT:g} (a percentage of "
                    "the machine's CPU time)")
        if value is not None:
            said.append(f"{key} {_shown(value)}")
    if len(said) == 2 and sum(case[k] for k in _PERCENT_CASE_FIELDS) > MAX_PERCENT + 1e-9:
        return (f"{' and '.join(said)}, more than {MAX_PERCENT:g} together (parts of the "
                "machine's CPU time)")
    return None


#: ``case_elapsed_s`` and ``runner_wait_s`` are each rounded to the millisecond
#: (``cli.execute``): the wait, a part of the whole case, may pass it by that much.
WAIT_ROUNDING_S = 1e-3


def _wait_problem(case: dict[str, Any]) -> str | None:
    """Why ``case``'s ``runner_wait_s`` (already a number from 0 to ``MAX_CASE_VALUE``,
    or null or absent: a summary written before it) is not a part of its
    ``case_elapsed_s``, in words after ``case 'ID' has`` (``runner_wait_s 5, more than
    its case_elapsed_s 3 (the whole case, the wait included)``); ``None`` when it is,
    or either is null or absent."""
    wait_s, elapsed_s = case.get("runner_wait_s"), case.get("case_elapsed_s")
    if wait_s is None or elapsed_s is None or wait_s <= elapsed_s + WAIT_ROUNDING_S:
        return None
    return (f"runner_wait_s {_shown(wait_s)}, more than its case_elapsed_s "
            f"{_shown(elapsed_s)} (the whole case, the wait included)")


def _inproc_problem(case: dict[str, Any]) -> str | None:
    """Why ``case``, a single-process one (``transport`` ``harness.spec.INPROC``), has
    a field it cannot have, in words after ``case 'ID' has``: the first of
    ``TWO_PROCESS_WIRE_FIELDS`` there and not null (``sched_to_runner_wire_bytes_per_step
    403.36, but its transport is "inproc" (one process: no scheduler <-> runner
    wire)``). ``None`` for another case, or when it has none."""
    from ipc_bench.harness.spec import INPROC

    if case.get("transport") != INPROC:
        return None
    for key in TWO_PROCESS_WIRE_FIELDS:
        if case.get(key) is not None:
            return (f"{key} {_shown(case[key])}, but its transport is {_shown(INPROC)} "
                    "(one process: no scheduler <-> runner wire)")
    return None


def _token_bytes_problem(case: dict[str, Any]) -> str | None:
    """Why ``case``'s token-id byte figures (``stats.TOKEN_BYTES_KEYS``: what send's
    new_token_ids add per counted step) cannot be its, in words after ``case 'ID'
    has``: one above 0 in a case whose policy is not send (no other policy's
    SchedulerOutput carries them: ``summary.attach_token_bytes`` writes 0), or the two
    together more than its whole SchedulerOutput (``sched_to_runner_payload_bytes_per_
    step``, over the same counted steps), of which they are a part. ``None`` when they
    can be, or are absent."""
    from ipc_bench.analysis.stats import TOKEN_BYTES_KEYS

    values = {k: _figure(case, k) for k in TOKEN_BYTES_KEYS}
    if case.get("policy") != SEND:
        for key, value in values.items():
            if value:
                return (f"{key} {value:,.6g}, but its policy is {_shown(case.get('policy'))} "
                        "(only send's SchedulerOutput carries new_token_ids)")
        return None
    payload = _figure(case, "sched_to_runner_payload_bytes_per_step")
    total = sum(v for v in values.values() if v is not None)
    if payload is not None and total > payload * (1 + 1e-9) + 1e-9:
        return (" and ".join(f"{k} {v:,.6g}" for k, v in values.items() if v is not None)
                + f", more than its whole SchedulerOutput, "
                f"sched_to_runner_payload_bytes_per_step {payload:,.6g}")
    return None


#: Fields a ``summary.json`` case and its entry in ``metadata.cases`` (the settings it
#: ran with, ``harness.environment``) both record, which a run writes equal.
SETTINGS_FIELDS = ("policy", "arm", "codec", "repetition", "trace_speedup",
                   "async_scheduling")


def _settings_problem(case: dict[str, Any], setting: Any) -> str | None:
    """Where a case (one ``_case_problem`` passed) records one of ``SETTINGS_FIELDS``
    other than its entry in ``metadata.cases`` (``setting``) says it ran with (a hand
    edit of one of the two, e.g. a timed replay's ``trace_speedup`` typed over): ``case
    'ID' has trace_speedup 1000, but metadata.cases records 100``. ``None`` where they
    agree, or where either lacks the field. The model too (``_model_problem``)."""
    if not isinstance(setting, dict):
        return None
    for key in SETTINGS_FIELDS:
        mine, ran = case.get(key), setting.get(key)
        if mine is None or ran is None or (key == "arm" and "" in (mine, ran)):
            continue  # an arm left empty is its policy's
        same = (_as_number(mine) == _as_number(ran)
                if key in ("repetition", "trace_speedup") else mine == ran)
        if not same:
            return (f"case {str(case['case_id'])!r} has {key} {_shown(mine)}, but "
                    f"metadata.cases records {_shown(ran)}")
    return _model_problem(case, setting)


def _model_problem(case: dict[str, Any], setting: dict[str, Any]) -> str | None:
    """Where a case names another model than its entry in ``metadata.cases``
    (``setting``; its ``model.name``) records: its ``model`` (a text) is not that name,
    or its ``emulated`` mark (``analysis.summary._model_marks``: true in an emulated
    case, absent in any other) says the emulated model ran where the name is another,
    or not where it is ``emulated`` (``case 'ID' has emulated true, but metadata.cases
    records model.name "null"``): its step times would be read as another model's.
    ``None`` where they agree, or where either lacks the field."""
    model = setting.get("model")
    ran = model.get("name") if isinstance(model, dict) else None
    if not isinstance(ran, str):
        return None
    name, mine = f"case {str(case['case_id'])!r}", case.get("model")
    if isinstance(mine, str) and mine != ran:
        return (f"{name} has model {_shown(mine)}, but metadata.cases records "
                f"model.name {_shown(ran)}")
    mark = case.get("emulated")
    if mark is not None and bool(mark) != (ran == "emulated"):
        return (f"{name} has emulated {_shown(mark)}, but metadata.cases records "
                f"model.name {_shown(ran)}")
    return None


def _case_id_problem(case: dict) -> str | None:
    """What is wrong with the ``case_id`` of a ``summary.json`` case (an object), in
    the words that follow ``has``: ``no case_id`` (missing), ``case_id null, not a
    text``, ``an empty case_id``, ``case_id 5, not a text``; ``None`` for a text that
    is not empty."""
    if "case_id" not in case:
        return "no case_id"
    name = case["case_id"]
    if name == "":
        return "an empty case_id"
    if not isinstance(name, str):
        return f"case_id {_shown(name)}, not a text"
    return None


def _entries_without_id(summary: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """The case ids (``WORKLOAD/ARM/CODEC#REPETITION``, as a run names a case) of the
    entries of ``summary``'s ``cases`` whose ``case_id`` is missing, null, empty or not
    a text (``_case_id_problem``), from their ``workload``, arm (else policy), codec
    and repetition, each with its index and that problem: the rows of such a case are
    listed, though under no id, and are said so (``_unlisted_rows``). A workload of
    several labels is matched in any order (``_listed_without_id``)."""
    out: dict[str, tuple[int, str]] = {}
    for i, case in enumerate(summary.get("cases") or []):
        problem = _case_id_problem(case) if isinstance(case, dict) else None
        if problem is None:
            continue
        arm, codec = case.get("arm") or case.get("policy"), case.get("codec")
        workload, rep = case.get("workload"), case.get("repetition", 0)
        if not all(isinstance(v, str) and v for v in (arm, codec, workload)) \
                or isinstance(rep, bool) or not isinstance(rep, int):
            continue
        out.setdefault(f"{workload}/{arm}/{codec}#{rep}", (i, problem))
    return out


def _listed_without_id(case: str, entries: dict[str, tuple[int, str]]
                       ) -> tuple[int, str] | None:
    """The entry of ``entries`` (``_entries_without_id``) that ``case``, a case id of
    the CSV files' rows, names: the same arm, codec and repetition, and the same
    workload labels in any order; ``None`` where none does."""
    head, _, rep = case.rpartition("#")
    labels, _, rest = head.partition("/")
    for key, found in entries.items():
        k_head, _, k_rep = key.rpartition("#")
        k_labels, _, k_rest = k_head.partition("/")
        if (k_rep, k_rest) == (rep, rest) and \
                sorted(k_labels.split(",")) == sorted(labels.split(",")):
            return found
    return None


def _case_problem(case: Any, index: int, labels: dict[str, Any] | None = None,
                  run_scenario: Any = None) -> str | None:
    """Why the ``index``-th entry of ``summary.json``'s ``cases`` cannot be loaded, in
    words (``case 'ID' has output_tokens_per_s "fast", not a number``): it is not an
    object; its ``case_id`` is missing, empty or not a text; its identity or ``complete``
    is not one a run writes (``_identity_problem``, against the run's scenario
    ``run_scenario``); one of its known numeric fields (``_NUMERIC_CASE_FIELDS``, the
    metrics) holds something other than a number from 0 to ``MAX_CASE_VALUE`` or null;
    its percentages of the machine's CPU time are not shares of it (``_percent_problem``);
    its wait for runners started by hand is longer than the whole case (``_wait_problem``);
    it is a single-process case with a field only two processes have
    (``_inproc_problem``); its token-id bytes are not send's or pass its whole
    SchedulerOutput (``_token_bytes_problem``); one of
    ``_WHOLE_CASE_FIELDS``, there or in its workload ``labels`` (the metadata's),
    is not a whole number; its workload, arm, codec or repetition is not the one its
    ``case_id`` names (``_arm_problem``); or another of its fields is NaN or infinite. ``None``
    when it can."""
    from ipc_bench.analysis.metrics import METRICS

    if not isinstance(case, dict):
        return f"cases[{index}] is {_shown(case)}, not an object"
    problem = _case_id_problem(case)
    if problem:
        return f"cases[{index}] has {problem}"
    name = f"case {case['case_id']!r}"
    problem = _identity_problem(case, run_scenario)
    if problem:
        return f"{name} has {problem}"
    for key in (*_NUMERIC_CASE_FIELDS, *METRICS):
        problem = _value_problem(key, case.get(key))
        if problem:
            return f"{name} has {problem}"
    problem = (_percent_problem(case) or _wait_problem(case) or _inproc_problem(case)
               or _token_bytes_problem(case))
    if problem:
        return f"{name} has {problem}"
    for key in _WHOLE_CASE_FIELDS:
        problem = _value_problem(key, case.get(key), whole=True)
        if problem:
            return f"{name} has {problem}"
    problem = _arm_problem(case)
    if problem:
        return f"{name} has {problem}"
    for key, value in (labels or {}).items():
        problem = (_value_problem(key, value, whole=True) if key in _WHOLE_CASE_FIELDS
                   else None)
        if problem:
            return f"{name} has label {problem}"
    for key, value in case.items():  # warnings: read by _warnings_lines
        if key not in _LIST_CASE_FIELDS and isinstance(value, float) and (
                value != value or abs(value) == float("inf")):
            return f"{name} has {key} {_shown(value)}, not a finite number"
    return None


#: Fields of ``summary.json``'s ``metadata`` the report reads, with the type each must
#: have (``check_shapes``): anything else is dropped with a warning.
_METADATA_SHAPES = {"git": dict, "gpu": dict, "virtualization": dict, "packages": dict,
                    "options": dict, "trace": dict, "remote_runners": dict, "gpus": list,
                    "notes": list, "cases": list}

#: Fields of ``_METADATA_SHAPES``' objects that the report reads as texts (or null):
#: a field of another type is dropped with a warning (``check_shapes``).
_METADATA_OBJECT_TEXTS = {"git": ("commit", "branch", "diff_sha256"),
                          "trace": ("path", "resolved_path", "sha256")}


def _is_whole(value: Any) -> bool:
    """A whole number (JSON's ``true`` and ``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A number (JSON's ``true`` and ``false`` are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text_or_null(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_scalar(value: Any) -> bool:
    """A text, a number or true or false: what the Environment table shows as
    ``key=value`` (an object or a list would show as Python writes it)."""
    return isinstance(value, (str, int, float))


#: Tests (with what a value must be, in words) that ``check_shapes`` puts values
#: inside the metadata and ``metadata.cases`` to.
_TEXT = (lambda v: isinstance(v, str), "a text")
_TEXT_OR_NULL = (_text_or_null, "a text or null")
_WHOLE = (_is_whole, "a whole number")
_WHOLE_OR_NULL = (lambda v: v is None or _is_whole(v), "a whole number or null")
_NUMBER = (_is_number, "a number")
_NUMBER_OR_NULL = (lambda v: v is None or _is_number(v), "a number or null")
_FLAG = (lambda v: isinstance(v, bool), "true or false")
_SCALAR = (_is_scalar, "a text, a number, true or false")

#: Fields of ``summary.json``'s ``metadata`` that the report shows as texts (the
#: title's and the headings' scenario, the Environment table's machine and software):
#: a value of another type, null included (a run never writes one), is dropped with a
#: warning (``check_shapes``).
_METADATA_TEXTS = ("scenario", "hostname", "python_version", "python_implementation",
                   "executable", "platform", "kernel", "cpu_model", "cpu_governor",
                   "arm_order")

#: The values of ``_METADATA_SHAPES``' objects the Environment table shows as
#: ``key=value`` (``collect_metadata``: ``_gpu_info``, ``_virtualization``,
#: ``_packages``), each with the test it must pass; ``None``: a field not named here,
#: tested as the ``None`` entry says. A value that fails is dropped with a warning.
_METADATA_OBJECT_VALUES = {
    "gpu": {"name": _TEXT, "count": _WHOLE, "cuda": _TEXT_OR_NULL, "capability": _TEXT,
            "driver": _TEXT, None: _SCALAR},
    "virtualization": {"product_name": _TEXT, "sys_vendor": _TEXT,
                       "cpu_hypervisor_flag": _FLAG, "systemd_detect_virt_vm": _TEXT,
                       "systemd_detect_virt_container": _TEXT, None: _SCALAR},
    "packages": {None: _TEXT},
}


def _key_path(prefix: str, key: str) -> str:
    """``prefix.key`` where ``key`` is a plain name (letters, digits, ``_.+-``), else
    ``prefix[KEY]``, ``KEY`` quoted as a warning line quotes a value (``_shown``)."""
    if re.fullmatch(r"[A-Za-z0-9_.+-]+", key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{_shown(key)}]"


def _numbers(value: Any) -> bool:
    """A list of numbers from 0 to ``MAX_CASE_VALUE`` (a whole number beyond a float's
    range would not go into one)."""
    return isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_CASE_VALUE
        for v in value)


def _seed(value: Any) -> bool:
    """A seed as ``--seed`` / ``--order-seed`` take it: a whole number in [0, 2**63)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


#: Fields of ``summary.json``'s ``metadata`` the report reads as values, with the test
#: each must pass and what it must be (``check_shapes``): anything else is dropped
#: with a warning (``collect_metadata`` writes them).
_METADATA_VALUES = {
    "load_avg": (_numbers, "a list of load averages"),
    "cpu_count": (lambda v: isinstance(v, int) and not isinstance(v, bool)
                  and 1 <= v <= MAX_CASE_VALUE, "a whole number of CPUs"),
    "command_line": (lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
                     "a list of texts"),
    # the folder the command line runs in: the report's ``cd`` before it
    "cwd": (lambda v: isinstance(v, str) and v.startswith("/") and "\0" not in v,
            "an absolute folder path"),
    "ci_method": (lambda v: v in METHODS, f"one of {', '.join(METHODS)}"),
    "seed": (_seed, "a whole number from 0 to 2**63 - 1"),
    "order_seed": (_seed, "a whole number from 0 to 2**63 - 1"),
    "start_time_utc": (lambda v: iso_time(v) is not None, "an ISO 8601 time"),
    "end_time_utc": (lambda v: iso_time(v) is not None, "an ISO 8601 time"),
    "aa": (lambda v: isinstance(v, bool), "true or false"),
    "cpu_affinity": (lambda v: isinstance(v, list) and all(_is_whole(c) for c in v),
                     "a list of whole numbers (CPU ids)"),
    "cpu_freq_mhz": (_is_number, "a number (MHz)"),
    "niceness": (_is_whole, "a whole number"),
    "remote_runners": (remote_runners_shape, REMOTE_RUNNERS_WORDS),
}

#: ``_METADATA_VALUES`` fields whose absence says something (no ``remote_runners``: the
#: run spawned its runners): one that fails its test is left out as null, which says
#: nothing (``environment._runners``: neither way).
_METADATA_NULL_WHEN_LEFT_OUT = ("remote_runners",)

#: Fields of ``summary.json``'s ``metadata`` that a run always writes as an object:
#: null is as wrong there as another type (``check_shapes``).
_METADATA_NEVER_NULL = ("options",)

#: ``_METADATA_VALUES`` fields that a run never writes as null, so that null is a hand
#: edit and fails their test as another value does (``start_time_utc``: written as the
#: run starts, ``environment.collect_metadata``; ``end_time_utc``: absent until the run
#: ends, ``run_folder.RunWriter.finish``); the others' null says "not known".
_METADATA_VALUES_NEVER_NULL = ("start_time_utc", "end_time_utc")

#: Top-level fields of ``summary.json`` that name a case when set, a text
#: (``check_shapes``): a run that failed in it, or was running it.
_CASE_NAMING_FIELDS = ("running_case", "failed_case")


def _label_values(value: Any) -> bool:
    """Workload labels as a run writes them: an object of texts and numbers (the tables
    group cases by its values)."""
    return isinstance(value, dict) and all(
        v is None or isinstance(v, (str, int, float)) for v in value.values())


#: Fields of a ``metadata.cases`` entry (what a case ran with, ``cli.execute``) that
#: the loader and the report read, with the test each must pass where it is there and
#: what it must be (``_setting_problem``): the objects, the texts the cases are told
#: apart by, ``cpu_affinity`` (as ``--cpu-affinity`` reads it, each process's set).
_SETTING_SHAPES = {
    "labels": (_label_values, "an object of texts and numbers"),
    "scheduler": (lambda v: isinstance(v, dict), "an object"),
    "model": (lambda v: isinstance(v, dict), "an object"),
    **{key: (lambda v: isinstance(v, str), "a text")
       for key in ("policy", "arm", "codec", "transport", "count")},
    "cpu_affinity": (lambda v: v is None or (isinstance(v, list) and all(
        isinstance(s, str) for s in v)), "null or a list of texts"),
}

#: Fields of a ``metadata.cases`` entry's ``model`` that the report reads as texts
#: (or null): the model's name and the token-id histogram's path and digest.
_MODEL_TEXTS = ("name", "token_ids", "token_ids_sha256")

#: The values of a ``metadata.cases`` entry (``cli.execute``: ``CaseSpec``'s fields,
#: its ``SchedulerConfig`` and ``ModelConfig``) that the Configuration table shows as
#: ``key=value``, each with the test it must pass where it is there: a value that fails
#: is dropped with a warning (``_setting_value_lines``), the rest of the entry kept.
#: ``"scheduler"`` and ``"model"``: their objects' fields (``None``: one not named).
_SETTING_VALUES = {
    **dict.fromkeys(("warmup_steps", "repetition", "input_oracle_interval"), _WHOLE),
    **dict.fromkeys(("max_steps", "counted_steps", "tp", "pp"), _WHOLE_OR_NULL),
    **dict.fromkeys(("peer_timeout_s", "startup_timeout_s"), _NUMBER),
    "trace_speedup": _NUMBER_OR_NULL,
    **dict.fromkeys(("stream", "async_scheduling", "frontend", "floor", "no_floor"), _FLAG),
    "scheduler": {"vllm_layout": _TEXT, None: _WHOLE},
    "model": {**dict.fromkeys(("vocab_size", "hash_window", "seed", "num_threads"), _WHOLE),
              **dict.fromkeys(("step_time_ms", "spec_acceptance"), _NUMBER),
              **dict.fromkeys(("step_wait", "preset", "device", "attention", "roofline"),
                              _TEXT),
              "cuda_graphs": _FLAG,
              "cuda_graph_sizes": (lambda v: isinstance(v, list) and all(map(_is_whole, v)),
                                   "a list of whole numbers"),
              None: (lambda v: _is_scalar(v) or v is None, "a text, a number, true, false "
                     "or null")},
}


def _value_lines(obj: dict[str, Any], tests: dict, where: str, path: Path,
                 after: str = "") -> list[str]:
    """Drop from ``obj`` (in place) each value that fails its test in ``tests`` (a
    field's own, else the ``None`` entry's; a field with neither is not tested), and
    one warning line for each: ``PATH: WHERE.KEY is VALUE, not WORDS (AFTER; left
    out)`` (``metadata.gpu.count is "two", not a whole number (left out)``)."""
    out = []
    for key in list(obj):
        test = tests.get(key, tests.get(None))
        if isinstance(test, tuple) and isinstance(key, str) and not test[0](obj[key]):
            out.append(f"{path}: {_key_path(where, key)} is {_shown(obj.pop(key))}, not "
                       f"{test[1]} ({after}left out)")
    return out


def _setting_value_lines(entry: dict[str, Any], index: int, path: Path) -> list[str]:
    """Drop from ``entry`` (the ``index``-th of ``metadata.cases``, one the report
    keeps) each ``_SETTING_VALUES`` value of the wrong type, its ``scheduler``'s and
    its ``model``'s included; one warning line each (``metadata.cases[0].counted_steps
    is "many", not a whole number or null (case 'ID'; left out)``)."""
    where, after = f"metadata.cases[{index}]", f"case {entry['case_id']!r}; "
    out = _value_lines(entry, _SETTING_VALUES, where, path, after)
    for key in ("scheduler", "model"):
        if isinstance(entry.get(key), dict):
            out += _value_lines(entry[key], _SETTING_VALUES[key], f"{where}.{key}", path,
                                after)
    return out


def _setting_problem(entry: dict[str, Any]) -> str | None:
    """What is wrong with a ``metadata.cases`` entry (an object with a text ``case_id``)
    that the report would read, in words after ``has``: a ``_SETTING_SHAPES`` field
    that fails its test (``labels "x", not an object of texts and numbers``), or a
    ``_MODEL_TEXTS`` field of its model that is not a text or null
    (``model.name 5, not a text``); ``None`` when there is none."""
    for key, (test, words) in _SETTING_SHAPES.items():
        if key in entry and not test(entry[key]):
            return f"{key} {_shown(entry[key])}, not {words}"
    model = entry.get("model") or {}
    for key in _MODEL_TEXTS:
        if not _text_or_null(model.get(key)):
            return f"model.{key} {_shown(model[key])}, not a text"
    return None


#: ``summary.json``'s top-level lists (``check_shapes``) and what each entry must be.
_LIST_SHAPES = {"problems": str, "comparisons": dict, "byte_model": dict}

#: Fields every ``comparisons`` entry has (``stats.compare_cases``), with their types.
_COMPARISON_SHAPES = {"baseline": str, "treatment": str, "workload": str, "codec": str,
                      "method": str, "n_pairs": int, "metrics": dict}


def _shape_problem(value: Any, kind: type) -> bool:
    return not isinstance(value, kind) or (kind is int and isinstance(value, bool))


def check_shapes(summary: dict[str, Any], path: Path) -> list[str]:
    """Drop from ``summary`` (in place) what a hand edit left in a shape the report
    cannot read: ``metadata`` that is not an object (or is missing: said, read as
    empty), a field of it of another shape (``_metadata_lines``), a ``running_case``
    or ``failed_case`` that is not a text (``_CASE_NAMING_FIELDS``), a
    ``_LIST_SHAPES`` list that is not a list or its entries of another type, a
    ``comparisons`` entry without ``_COMPARISON_SHAPES``' fields or whose ``metrics``
    are not objects. Returns one warning line per thing dropped."""
    out = []
    if "metadata" not in summary:
        out.append(f"{path}: metadata is missing (read as empty: no environment, options "
                   "or labels)")
    elif not isinstance(summary["metadata"], dict):
        out.append(f"{path}: metadata is {_shown(summary['metadata'])}, not an "
                   "object (left out)")
        summary["metadata"] = {}
    out += _metadata_lines(summary.get("metadata") or {}, path)
    for key in _CASE_NAMING_FIELDS:
        if not _text_or_null(summary.get(key)):
            out.append(f"{path}: {key} is {_shown(summary.pop(key))}, not a case id (a "
                       "text) (left out)")
    for key, kind in _LIST_SHAPES.items():
        value = summary.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            out.append(f"{path}: {key} is {_shown(summary.pop(key))}, not a list "
                       "(left out)")
            continue
        kept = []
        for i, entry in enumerate(value):
            bad = _shape_problem(entry, kind)
            if not bad and key == "comparisons":
                bad = (any(_shape_problem(entry.get(f), t)
                           for f, t in _COMPARISON_SHAPES.items())
                       or any(not isinstance(m, dict) for m in entry["metrics"].values()))
            if bad:
                out.append(f"{path}: {key}[{i}] is {_shown(entry)}, not "
                           f"{'a text' if kind is str else 'a recorded comparison' if key == 'comparisons' else 'an object'} "
                           "(left out)")
            else:
                kept.append(entry)
        summary[key] = kept
    return out


def _metadata_lines(meta: dict[str, Any], path: Path) -> list[str]:
    """Drop from a summary's ``metadata`` (in place) a ``_METADATA_SHAPES`` field of
    another type, a text of one of another type (``_METADATA_OBJECT_TEXTS``), an entry
    of ``gpus`` that is not an object, a ``_METADATA_TEXTS`` field that is not a text,
    an entry of ``notes`` that is not a text, a value of ``gpu``, ``virtualization`` or
    ``packages`` of the wrong type (``_METADATA_OBJECT_VALUES``), a
    ``_METADATA_VALUES`` field that fails its test (null passes, but for
    ``_METADATA_VALUES_NEVER_NULL``: ``metadata.start_time_utc is null, not an ISO 8601
    time (left out)``), an ``end_time_utc`` before the ``start_time_utc``, a null
    ``_METADATA_NEVER_NULL`` field, and a ``metadata.cases`` entry that is not an
    object with a text ``case_id``, has a field of the wrong kind or repeats an
    earlier one's ``case_id``, and a setting of a kept entry of the wrong type
    (``_kept_settings``). A dropped ``_METADATA_NULL_WHEN_LEFT_OUT`` field
    (``remote_runners``) is kept as null; an object ``remote_runners`` is named by its
    first bad part (``environment.remote_runners_problem``: ``metadata.remote_runners.
    ports.ctls is -1, not a port number (1-65535) (metadata.remote_runners left
    out)``). Returns one warning line per thing dropped (``check_shapes``)."""
    out = []
    for key, kind in _METADATA_SHAPES.items():
        if key in meta and meta[key] is not None and _shape_problem(meta[key], kind):
            out.append(f"{path}: metadata.{key} is {_shown(meta.pop(key))}, not "
                       f"{'an object' if kind is dict else 'a list'} (left out)")
            if key in _METADATA_NULL_WHEN_LEFT_OUT:
                meta[key] = None
    if isinstance(meta.get("gpus"), list):  # nvidia-smi's, one object per GPU
        gpus = meta["gpus"]
        out += [f"{path}: metadata.gpus[{i}] is {_shown(gpu)}, not an object (left out)"
                for i, gpu in enumerate(gpus) if not isinstance(gpu, dict)]
        meta["gpus"] = [gpu for gpu in gpus if isinstance(gpu, dict)]
    for key, fields in _METADATA_OBJECT_TEXTS.items():
        for name in fields if isinstance(meta.get(key), dict) else ():
            if not _text_or_null(meta[key].get(name)):
                out.append(f"{path}: metadata.{key}.{name} is "
                           f"{_shown(meta[key].pop(name))}, not a text (left out)")
    for key in _METADATA_TEXTS:
        if key in meta and not isinstance(meta[key], str):
            out.append(f"{path}: metadata.{key} is {_shown(meta.pop(key))}, not a text "
                       "(left out)")
    if isinstance(meta.get("notes"), list):  # the `note:` lines the run printed
        notes = meta["notes"]
        out += [f"{path}: metadata.notes[{i}] is {_shown(note)}, not a text (left out)"
                for i, note in enumerate(notes) if not isinstance(note, str)]
        meta["notes"] = [note for note in notes if isinstance(note, str)]
    for key, tests in _METADATA_OBJECT_VALUES.items():
        if isinstance(meta.get(key), dict):
            out += _value_lines(meta[key], tests, f"metadata.{key}", path)
    for key, (test, words) in _METADATA_VALUES.items():
        if key in meta and (meta[key] is not None or key in _METADATA_VALUES_NEVER_NULL) \
                and not test(meta[key]):
            part = remote_runners_problem(meta[key], _shown) if key == "remote_runners" else ""
            out.append(f"{path}: metadata.{key}.{part} (metadata.{key} left out)" if part
                       else f"{path}: metadata.{key} is {_shown(meta.pop(key))}, not "
                       f"{words} (left out)")
            meta.pop(key, None)
            if key in _METADATA_NULL_WHEN_LEFT_OUT:
                meta[key] = None
    start, end = iso_time(meta.get("start_time_utc")), iso_time(meta.get("end_time_utc"))
    if start is not None and end is not None and end < start:
        out.append(f"{path}: metadata.end_time_utc is {_shown(meta.pop('end_time_utc'))}, "
                   f"before its start_time_utc {_shown(meta['start_time_utc'])} (left out)")
    for key in _METADATA_NEVER_NULL:
        if key in meta and meta[key] is None:
            out.append(f"{path}: metadata.{key} is null, not an object (left out)")
            del meta[key]
    if isinstance(meta.get("cases"), list):
        meta["cases"], lines = _kept_settings(meta["cases"], path)
        out += lines
    return out


def _kept_settings(entries: list, path: Path) -> tuple[list[dict], list[str]]:
    """The entries of ``metadata.cases`` (``entries``) that the report can read, and one
    line per entry left out: one that is not an object with a text ``case_id``, one
    with a field of the wrong kind (``_setting_problem``: ``metadata.cases[0] (case
    'ID') has labels "x", not an object of texts and numbers``), or one whose
    ``case_id`` an earlier entry has (``case 'ID' is listed again as
    metadata.cases[3]``). The case's own results (``cases``) are loaded all the same:
    only what it ran with goes unshown. A kept entry's settings of the wrong type are
    dropped from it, one line each (``_setting_value_lines``)."""
    kept, lines, seen = [], [], set()
    for i, c in enumerate(entries):
        if not (isinstance(c, dict) and isinstance(c.get("case_id"), str)):
            lines.append(f"{path}: metadata.cases[{i}] is {_shown(c)}, not a case with a "
                         "case_id (left out)")
            continue
        problem = _setting_problem(c)
        if problem is not None:
            lines.append(f"{path}: metadata.cases[{i}] (case {c['case_id']!r}) has "
                         f"{problem} (left out)")
        elif c["case_id"] in seen:
            lines.append(f"{path}: case {c['case_id']!r} is listed again as "
                         f"metadata.cases[{i}] (left out)")
        else:
            lines += _setting_value_lines(c, i, path)
            kept.append(c)
            seen.add(c["case_id"])
    return kept, lines


def _valid_cases(summary: dict[str, Any], path: Path) -> tuple[list[dict], list[str]]:
    """The entries of ``summary``'s ``cases`` that can be loaded (``_case_problem``,
    given each case's workload labels from the metadata) and one line per entry left
    out, naming it and the field. Left out too: an entry whose ``case_id`` an earlier
    one has, or whose arm (else policy), workload, codec and repetition an earlier one
    has (the tables would average the two; the first is kept), and a case whose
    ``complete`` is false in a run whose ``status`` is ``complete`` (a run is complete
    only when every case finished) or true beside an ``error`` (the harness records an
    error only for a case that did not finish); said too, a case of the metadata's grid that
    ``cases`` lacks in such a run (removed by hand). Raises ``ResultsError`` (one line) when ``cases``
    is not a list, when it is missing or empty under ``status`` ``complete``, or when
    it had entries and none can be loaded."""
    status = summary.get("status")
    if "cases" not in summary and status == "complete":
        raise ResultsError(f"{path}: cases is missing, but status is complete")
    cases = summary.get("cases", [])
    if not isinstance(cases, list):
        raise ResultsError(f"{path}: cases is {_shown(cases)}, not a list")
    if not cases and status == "complete":
        raise ResultsError(f"{path}: cases is empty, but status is complete")
    meta = summary.get("metadata")
    settings = {c.get("case_id"): c
                for c in ((meta.get("cases") if isinstance(meta, dict) else None) or [])
                if isinstance(c, dict) and isinstance(c.get("case_id"), str)}
    labels = {k: c.get("labels") for k, c in settings.items()
              if isinstance(c.get("labels"), dict)}

    def problem(case: Any, i: int) -> str | None:
        name = case.get("case_id") if isinstance(case, dict) else None
        own = labels.get(name) if isinstance(name, str) else None
        return (_case_problem(case, i, own if isinstance(own, dict) else None,
                              meta.get("scenario") if isinstance(meta, dict) else None)
                or _settings_problem(case, settings.get(name) if isinstance(name, str)
                                     else None))

    valid, lines, whys, seen = [], [], [], set()
    places: dict[tuple, str] = {}  # (arm, workload, codec, repetition) -> case_id
    for i, case in enumerate(cases):
        why = problem(case, i)
        if why is None:
            name = case.get("case_id")
            shown = f"case {name!r}" if isinstance(name, str) else f"cases[{i}]"
            place = (case.get("arm") or case["policy"], case["workload"], case["codec"],
                     case.get("repetition") or 0)
            if isinstance(name, str) and name in seen:
                why = f"case {name!r} is listed again as cases[{i}]"
            elif place in places:
                why = (f"{shown} has the arm, workload, codec and repetition of case "
                       f"{places[place]!r} ({', '.join(str(p) for p in place)})")
            elif case["complete"] is False and status == "complete":
                why = f"{shown} has complete false, but status is complete"
            elif case["complete"] is True and case.get("error"):
                why = (f"{shown} has complete true, but an error {_shown(case['error'])}: "
                       "a case that ended so did not finish")
            else:
                places[place] = name
        if why is None:
            valid.append(case)
            seen.add(case.get("case_id"))
        else:
            lines.append(f"{path}: {why} (left out)")
            whys.append(why)
    if cases and not valid:
        more = f" (and {len(cases) - 1} more)" if len(cases) > 1 else ""
        raise ResultsError(f"no case can be loaded: {path}: {whys[0]}{more}")
    if status == "complete" and len(cases) < len(settings):  # entries removed
        listed = {c.get("case_id") for c in cases if isinstance(c, dict)}
        lacking = [repr(name) for name in settings if name not in listed]
        if lacking:  # one line: a run set complete by hand can lack many
            which = (f"case {lacking[0]} of metadata.cases has" if len(lacking) == 1 else
                     f"cases {', '.join(lacking[:-1])} and {lacking[-1]} of "
                     "metadata.cases have")
            lines.append(f"{path}: {which} no entry in cases, but status is complete "
                         "(every planned case finished)")
    return valid, lines


def _no_floor_lines(valid: list[dict], path: Path) -> list[str]:
    """Drop (in place) from the cases ``valid`` a ``no_floor`` that is there but is not
    true or false (a hand edit: ``"yes"``, ``1``, ``null``), with one line per case
    naming it and the value: the tables then infer it from the case, as for a summary
    written before it was recorded (``report.tables.ran_with_no_floor``)."""
    out = []
    for case in valid:
        if "no_floor" in case and not isinstance(case["no_floor"], bool):
            out.append(f"{path}: case {case['case_id']!r} has no_floor "
                       f"{_shown(case.pop('no_floor'))}, not true or false (read as "
                       "absent: inferred from the case's settings)")
    return out


#: Case fields that repeat a workload label (``_label_field_lines``): read as absent
#: where they are there but the case's workload has no such label.
_LABEL_FIELDS = ("num_running", "trace")


def _preset_lines(valid: list[dict], metadata: Any, path: Path) -> list[str]:
    """Set (in place) the ``emulated_preset`` of each emulated case of ``valid`` to the
    preset its entry in ``metadata.cases`` records (``model.preset``, what its runner
    was started with; ``model.name`` ``emulated``) where a hand edit made the two
    differ, or made it not a text, with one line per case naming both and the one used
    (``RUN/summary.json: case 'ID' has emulated_preset "llama-3.1-8b", but
    metadata.cases records model.preset "llama-3.2-1b" (read as "llama-3.2-1b", the
    metadata's)``): the report names the preset in its EMULATED note and marks, and
    would name a model the run did not emulate. A case without the field (a run
    written before it was recorded) or an entry without the preset is left as it is.
    The GPU's name and figures (``emulated_gpu``, ``emulated_memory_bandwidth_bytes_
    per_s``...) are recorded in the case alone; ``emulated_step_ns_per_step``, the
    roofline's mean time, is checked against ``steps.csv`` (``STEP_MEANS``)."""
    settings = metadata.get("cases") if isinstance(metadata, dict) else None
    presets = {c["case_id"]: c["model"]["preset"] for c in settings or []
               if isinstance(c, dict) and isinstance(c.get("case_id"), str)
               and isinstance(c.get("model"), dict) and c["model"].get("name") == "emulated"
               and isinstance(c["model"].get("preset"), str)}
    out = []
    for case in valid:
        want = presets.get(case["case_id"])
        have = case.get("emulated_preset")
        if want is None or have is None or have == want:
            continue
        case["emulated_preset"] = want
        out.append(f"{path}: case {case['case_id']!r} has emulated_preset {_shown(have)}, "
                   f"but metadata.cases records model.preset {_shown(want)} (read as "
                   f"{_shown(want)}, the metadata's)")
    return out


def _label_field_lines(valid: list[dict], metadata: Any, path: Path) -> list[str]:
    """Set (in place) each field of the cases ``valid`` that repeats one of its workload
    labels (``num_running``, ``trace``: ``metadata.cases[].labels``, which its
    ``workload`` names as ``k=v``) to the label's value where a hand edit made them
    differ, or left the field null or out, with one line per field naming the case,
    both values and the one used (``RUN/summary.json: case 'ID' has num_running 5, but
    its workload is num_running=4 (read as 4, its workload's)``; ``has num_running
    null``, ``has no num_running``): the tables go by the workload, the findings'
    words by the field, and the two would name different batches (or the findings
    would lose the workload's). A ``trace`` that is there (not null) in a case whose
    workload has no trace label (a steady case: ``num_running=4``) is dropped the same
    way, read as absent, with one line (``case 'ID' has trace 5, but its workload is
    num_running=4, without a trace (read as absent, its workload's)``): a text there
    would make the case a trace replay (``summary.is_replay``), anything else a column
    of mixed kinds; so is a ``num_running`` that is there in a case whose workload has
    no num_running label (a replay: ``trace=azure-conv:300``; ``case 'ID' has
    num_running 5, but its workload is trace=azure-conv:300, without a num_running
    (read as absent, its workload's)``): the findings would name a batch the replay
    never asked for."""
    settings = metadata.get("cases") if isinstance(metadata, dict) else None
    labels = {c["case_id"]: c["labels"] for c in settings or []
              if isinstance(c, dict) and isinstance(c.get("labels"), dict)
              and isinstance(c.get("case_id"), str)}
    out = []
    for case in valid:
        workload = str(case["workload"]).split(",")
        for key, want in (labels.get(case["case_id"]) or {}).items():
            have = case.get(key)
            if have == want or f"{key}={want}" not in workload:
                continue
            shown = f"no {key}" if key not in case else f"{key} {_shown(have)}"
            case[key] = want
            out.append(f"{path}: case {case['case_id']!r} has {shown}, but its workload "
                       f"is {case['workload']} (read as {_shown(want)}, its workload's)")
        for key in _LABEL_FIELDS:
            if case.get(key) is not None \
                    and not any(part.startswith(key + "=") for part in workload):
                out.append(f"{path}: case {case['case_id']!r} has {key} "
                           f"{_shown(case.pop(key))}, but its workload is "
                           f"{case['workload']}, without a {key} (read as absent, its "
                           "workload's)")
    return out


#: Case fields that hold a list, read (and their wrong values warned about) by
#: ``_warnings_lines``, not left out with their case as a NaN elsewhere is.
_LIST_CASE_FIELDS = ("warnings",)

#: Entries of a case's ``warnings`` named, at most, in the line about those that are
#: not texts (``_warnings_lines``).
WARNINGS_SHOWN = 3


def _warnings_lines(valid: list[dict], path: Path) -> list[str]:
    """Read, in place, the ``warnings`` of the cases ``valid`` as the report can show
    them (a list of texts, ``analysis.summary.noise_warnings``'), with one line per
    case whose ``warnings`` were not: one that is not a list (``5``, ``"x"``) is read as
    absent (``RUN/summary.json: case 'ID' has warnings 5, not a list (read as absent:
    no warnings recorded)``); entries of a list that are not texts are left out of it,
    its texts kept (``case 'ID' has warnings[0] 1 and warnings[1] null, not texts (left
    out of its warnings)``; the first ``WARNINGS_SHOWN`` named, then how many more).
    A NaN or infinite one is not a list either (``has warnings NaN, not a list``).
    A ``warnings`` null is as absent, as a run writes none."""
    out = []
    for case in valid:
        value = case.get("warnings")
        name = f"{path}: case {case['case_id']!r} has warnings"
        if value is None:
            continue
        if not isinstance(value, list):
            out.append(f"{name} {_shown(case.pop('warnings'))}, not a list (read as "
                       "absent: no warnings recorded)")
            continue
        bad = [(i, w) for i, w in enumerate(value) if not isinstance(w, str)]
        if not bad:
            continue
        case["warnings"] = [w for w in value if isinstance(w, str)]
        named = [f"warnings[{i}] {_shown(w)}" for i, w in bad[:WARNINGS_SHOWN]]
        if len(bad) > WARNINGS_SHOWN:
            named.append(f"{len(bad) - WARNINGS_SHOWN:,} more")
        listed = named[0] if len(named) == 1 else \
            f"{', '.join(named[:-1])} and {named[-1]}"
        out.append(f"{path}: case {case['case_id']!r} has {listed}, "
                   f"{'not a text' if len(bad) == 1 else 'not texts'} (left out of its "
                   "warnings)")
    return out


def _family_gap_lines(summary: dict[str, Any], valid: list[dict], path: Path) -> list[str]:
    """One line per timed metric that a recorded send/cached comparison of ``summary``
    tested (its ``family``, Holm-adjusted together) while a case it compares, of
    ``valid``, has no value of it (a hand edit took it out): the pair table shows no
    pair of it where a case lacks it, while the findings' verdicts and their legend
    count it among the metrics tested. ``RUN/summary.json: case 'ID' has no
    sched_cpu_ns_per_step, a timed metric its recorded comparison of send and cached
    tested (counted in the Holm adjustment its verdicts give): the pair table leaves
    out the pairs without it`` (``cases 'A', 'B' and 3 more have no ..., a timed
    metric their recorded comparisons ...``: the first ``WARNINGS_SHOWN`` named)."""
    from ipc_bench.analysis.stats import COMPARED_GROUP, arms_by_repetition
    from ipc_bench.engine.config import CACHED

    groups = arms_by_repetition([c for c in valid if c.get("policy")], COMPARED_GROUP)
    missing: dict[str, list[str]] = {}
    for comp in summary.get("comparisons") or []:
        if (comp.get("baseline"), comp.get("treatment")) != (SEND, CACHED):
            continue
        arms = groups.get(tuple(comp.get(k) for k in COMPARED_GROUP), {})
        reps = comp.get("repetitions")
        for arm in (SEND, CACHED):
            for rep, case in arms.get(arm, {}).items():
                if isinstance(reps, list) and rep not in reps:
                    continue
                for key in comp.get("family") or []:
                    if isinstance(key, str) and case.get(key) is None:
                        missing.setdefault(key, []).append(case["case_id"])
    out = []
    for key, ids in missing.items():
        named = [repr(i) for i in dict.fromkeys(ids)]
        more = len(named) - WARNINGS_SHOWN
        if more > 0:
            named = named[:WARNINGS_SHOWN] + [f"{more:,} more"]
        listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        one = len(named) == 1
        its, comparison = ("its", "comparison") if one else ("their", "comparisons")
        out.append(f"{path}: {'case' if one else 'cases'} {listed} "
                   f"{'has' if one else 'have'} no {key}, a timed metric {its} recorded "
                   f"{comparison} of {SEND} and {CACHED} tested (counted in the Holm "
                   f"adjustment {its} verdicts give): the pair table leaves out the "
                   "pairs without it")
    return out


def _left_out_ids(summary: dict[str, Any], valid: list[dict]) -> set[str]:
    """The ``case_id`` of every case of ``summary`` left out (``_valid_cases``) that
    names one and that no loaded case shares."""
    kept = {c.get("case_id") for c in valid}
    return {c["case_id"] for c in summary.get("cases") or []
            if isinstance(c, dict) and isinstance(c.get("case_id"), str)
            and c["case_id"] not in kept}
