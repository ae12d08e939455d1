"""Loading run folders (``ipc_bench.harness.run_folder`` writes them; its docstring
gives the layout and the format history): ``read_summary`` and, into pandas, ``load``.

``load`` refuses or leaves out what a hand edit made inconsistent (its docstring lists
each check), so that no finding quotes a figure its run did not measure: it reads the
files with ``run_files``, checks ``summary.json``'s metadata and case entries with
``metadata_checks``, and each case's figures against its rows with ``row_checks``. A run
folder that is a copy of another one given is refused: the same start time
(``check_copies``) or the same per-step timings (``check_copied_steps``). A run that is
not complete is said in one line (``status_line``, ``incomplete_run_line``,
``run_state``).
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import os
import re
import stat
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ipc_bench.analysis.metadata_checks import (RUN_STATUSES, _METADATA_VALUES,
                                                _entries_without_id, _family_gap_lines,
                                                _key_path, _label_field_lines,
                                                _left_out_ids, _listed_without_id,
                                                _no_floor_lines, _preset_lines,
                                                _valid_cases, _warnings_lines,
                                                check_shapes)
from ipc_bench.analysis.row_checks import (FLOOR_FIGURES, _checked_frontend,
                                           _checked_latencies, _disagreeing_cases,
                                           _frontend_disagreeing, _has_itl,
                                           _impossible_latencies, _impossible_steps,
                                           _long_steps, _read_frontend, _refuse_none_left,
                                           _rows, _short_floor, _short_frontend,
                                           _short_itl, _short_requests, _short_steps,
                                           _surplus_floor, _surplus_latency_rows,
                                           _without_cases)
from ipc_bench.analysis.run_files import (ResultsError, ResultsWarning, WrittenFloat,
                                          _BOOL_COLUMNS, _NULLABLE_INT_COLUMNS,
                                          _PRESENT_IF_TRUE, _STR_COLUMNS, _concat,
                                          _count_lines, _cut_quote, _json_kind, _read_csv,
                                          _read_rows, _refuse_emptied, _shown,
                                          _summary_size_problem, _too_many_digits,
                                          _unpadded_size, dangling_link)
from ipc_bench.harness.environment import iso_time
from ipc_bench.harness.run_folder import (CASE_KEYS, CLAIM_FILE, FORMAT_VERSION,
                                          PARTIAL_STEPS, REQUEST_COLUMNS, STEPS_HEADER,
                                          run_in_progress)
from ipc_bench.harness.spec import NO_CODEC


#: The codec of single-process cases (no IPC, no serialization; 0 bytes per step).
SINGLE_PROCESS_CODEC = NO_CODEC


class RunStatusWarning(ResultsWarning):
    """A run folder loaded is not complete: still running, stopped (killed) or failed
    (one line, ``status_line``: its ``Results.status_detail`` and the cases loaded), or
    is complete but recorded a problem as it ended (``complete_problems_line``: its
    tables lost on a full stdout). ``warnings.simplefilter("ignore",
    RunStatusWarning)`` silences it alone."""


class IncompleteRunWarning(ResultsWarning):
    """A run reported that is not complete and was not read as still going (killed,
    stopped, failed): one line, ``incomplete_run_line``'s, which
    ``report.document.write_report`` issues once per such run after ``load``'s own
    warnings, and ``bench.py report`` prints on stderr as ``bench.py microbench`` prints
    its line of such a run (a ``RunStatusWarning``, which ``bench.py report`` leaves to
    the report's note, it is not)."""


class Summary(dict):
    """A parsed ``summary.json`` (``read_summary``): its top-level object, and in
    ``repeated`` one warning line for each key an object of the file gives twice or
    more, of which the last value is read (``PATH: key metadata is given 2 times (the
    last one read)``)."""

    repeated: list[str] = []
    #: The warning line where the file read is a leftover ``summary.json.PID.tmp``
    #: (``leftover_summary``; also first in ``repeated``, the lines ``load`` issues
    #: before it checks the file), else ``None``.
    leftover: str | None = None


#: The temporary file ``run_folder.write_json_atomic`` writes a summary to before it
#: replaces ``summary.json`` with it: ``summary.json.PID.tmp``.
_SUMMARY_TMP = re.compile(r"summary\.json\.([0-9]{1,10})\.tmp")


def _pid_runs(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):  # no such pid can run
        return False
    return True


def leftover_summary(run_dir: Path) -> Summary | None:
    """The summary a run wrote whole but did not put in place: a ``summary.json.PID.tmp``
    of ``run_dir`` that a run killed (SIGKILL, a power cut) between the end of its
    write and its ``os.replace`` left, read (as ``summary.json`` is) in its stead, its
    ``leftover`` the one-line warning that says so (``RUN/summary.json.4242.tmp is
    read in place of summary.json, which it is newer than: the run (pid 4242, no
    longer running) wrote it whole but was stopped before it replaced summary.json``);
    ``None`` where there is none such.

    Why the reader rolls it forward rather than leave it: the writer (``RunWriter``)
    rewrites the summary after every file of a case is written, and only fsyncs the
    temporary file whole before the rename, so such a file is the run's newest state,
    every row it lists on disk already; ``summary.json`` is the state before it, which
    leaves out the case the run finished last (a report of a run killed during its
    last write would say that no case finished). No order of the writer closes the
    window (the rename is one step after a whole write), and a reader that moved the
    file into place would change a folder it only reads. It is taken only where all of
    this holds, else the folder is read as it is: no run holds the folder's claim
    (``run_in_progress``: a live writer's file may be half written) and no process of
    that pid runs here; it is no older than ``summary.json`` (a folder without one is
    no run folder: ``check_run_dir``); it parses whole (a cut one does not: its
    object's closing brace is the last thing written) as an object of this format
    version. Of several, the newest is taken."""
    try:
        names = [e.name for e in os.scandir(run_dir) if _SUMMARY_TMP.fullmatch(e.name)]
    except OSError:
        return None
    if not names or run_in_progress(run_dir):
        return None
    try:
        current = os.stat(run_dir / "summary.json").st_mtime_ns
    except OSError:  # no run folder (a run killed before its first summary measured nothing)
        return None
    found = []
    for name in names:
        try:
            mtime = os.stat(run_dir / name).st_mtime_ns
        except OSError:
            continue
        if mtime >= current:
            found.append((mtime, name))
    for _, name in sorted(found, reverse=True):
        pid = int(_SUMMARY_TMP.fullmatch(name).group(1))
        if _pid_runs(pid):
            continue
        try:
            data = _read_summary_file(run_dir / name)
        except (ResultsError, OSError):  # cut short, another format, gone since
            continue
        data.leftover = (f"{run_dir / name} is read in place of summary.json, which it is "
                         f"newer than: the run (pid {pid}, no longer running) wrote it "
                         "whole but was stopped before it replaced summary.json")
        data.repeated = [data.leftover] + data.repeated  # load's warnings, said first
        return data
    return None


def read_summary(run_dir: str | os.PathLike) -> Summary:
    """``summary.json`` of ``run_dir`` (UTF-8, with or without a byte-order mark);
    an object that gives one key twice or more keeps its last value, as ``json`` does,
    and the returned ``Summary``'s ``repeated`` says so, one line a key
    (``_repeated_keys``);
    ``ResultsError`` if missing, unreadable (not JSON, or arrays or objects nested deeper than ``json`` can parse), not an object or
    of another format; checked before it is read (``_summary_size_problem``), so that
    nothing of it is read into memory: UTF-16 or UTF-32 text (``cannot read PATH: it
    is UTF-16 text, not UTF-8``), a file that ends in NUL bytes (``cannot read PATH:
    it ends in 4,294,967,296 bytes of NUL padding (a crash can leave it)``) or is
    larger than ``SUMMARY_MAX_BYTES``. A whole ``summary.json.PID.tmp`` a killed run
    left, newer than it, is read in its place (``leftover_summary``, its
    ``leftover`` line saying so)."""
    leftover = leftover_summary(Path(run_dir))
    if leftover is not None:
        return leftover
    try:
        return _read_summary_file(Path(run_dir) / "summary.json")
    except FileNotFoundError:
        raise ResultsError(f"no summary.json in {run_dir}") from None


def _read_summary_file(path: Path) -> Summary:
    """``read_summary`` of the file ``path``; ``FileNotFoundError`` where it is missing."""
    try:  # utf-8-sig: a byte-order mark an editor saved the file with is no error
        problem = _summary_size_problem(path)
        twice: dict[int, tuple] = {}  # id(object) -> (object, {key: times given})
        data = None if problem else json.loads(path.read_text(encoding="utf-8-sig"),
                                               object_pairs_hook=_pairs_noting(twice))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ResultsError(f"cannot read {path}: {_too_many_digits(exc) or exc}") from None
    except RecursionError:  # arrays or objects nested past the interpreter's limit
        raise ResultsError(f"cannot read {path}: arrays or objects nested too deeply "
                           "to parse") from None
    if problem:
        raise ResultsError(f"cannot read {path}: {problem}")
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: not a JSON object (the file holds "
                           f"{_json_kind(data)})")
    repeated = [f"{path}: key {where} is given {n} times (the last one read)"
                for where, n in (_repeated_keys(data, twice) if twice else ())]
    data = Summary(data)
    data.repeated = repeated
    problem = _version_problem(data)
    if problem:
        version = data.get("format_version")
        if isinstance(version, float) and not math.isfinite(version):  # 1E400, as written
            problem = _version_problem(json.loads(path.read_text(encoding="utf-8-sig"),
                                                  parse_float=_parsed_float))
        raise ResultsError(f"{path}: {problem}")
    return data


def _parsed_float(text: str) -> float:
    """``json``'s ``parse_float``: ``float(text)``, a ``WrittenFloat`` where that is
    not finite (``1E400``)."""
    value = float(text)
    return value if math.isfinite(value) else WrittenFloat(value, text)


def _version_problem(summary: dict[str, Any]) -> str | None:
    """Why ``summary``'s ``format_version`` is not the one this ipc-bench reads (the
    integer ``FORMAT_VERSION`` a run writes), in words after ``PATH: ``: an older or
    newer integer, with what to do (``result format version 0 is older than ...``);
    anything else, ``true`` and ``1.0`` included (JSON's true is no version, nor is a
    fraction), is not supported, shown as JSON (``result format version "1" is not
    supported (this ipc-bench reads version 1)``), and a missing one is said so. An
    integer is shown as written, cut to 40 digits with ``...`` (``_cut_quote``): 10**400
    reads ``1000000000000000000000000000000000000000... is newer``, not ``1e+400``.
    ``None`` when it is ``FORMAT_VERSION``."""
    reads = f"(this ipc-bench reads version {FORMAT_VERSION})"
    if "format_version" not in summary:
        return f"result format version is missing {reads}"
    version = summary["format_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        return f"result format version {_shown(version)} is not supported {reads}"
    if version == FORMAT_VERSION:
        return None
    age = "older" if version < FORMAT_VERSION else "newer"
    hint = ("re-run the scenario with this ipc-bench" if age == "older"
            else "read it with the newer ipc-bench that wrote it")
    # as written, its digits cut at 40 (an integer in %g form, 1e+400, would read as
    # the number 1E400, which is no integer and is refused as not supported)
    return (f"result format version {_cut_quote(str(version))} is {age} than the version "
            f"this ipc-bench reads ({FORMAT_VERSION}); {hint}")


def _pairs_noting(twice: dict[int, tuple]):
    """A ``json`` ``object_pairs_hook`` that builds each object as ``json`` does (the
    last value of a key given twice kept) and notes in ``twice``, by the object's
    ``id``, the object (kept alive, so that no later object takes its ``id``) and each
    key it was given more than once with how many times."""
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            counts: dict[str, int] = {}
            for key, _ in pairs:
                counts[key] = counts.get(key, 0) + 1
            twice[id(obj)] = (obj, {k: n for k, n in counts.items() if n > 1})
        return obj
    return hook


def _repeated_keys(data: Any, twice: dict[int, tuple]) -> list[tuple[str, int]]:
    """``(key path, times given)`` of each key ``_pairs_noting`` noted in ``twice``
    that is in ``data`` (the parsed file; a repeated key's earlier values are not), in
    the file's order: ``metadata``, ``cases[0].num_steps``, ``metadata["a b"]``
    (``_key_path``). Walks with a list, not recursion: any depth ``json`` parsed."""
    out: list[tuple[str, int]] = []
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            noted = twice.get(id(value))
            out += [(_key_path(where, k), n) for k, n in (noted[1] if noted else {}).items()]
            stack += [(v, _key_path(where, k)) for k, v in reversed(value.items())
                      if isinstance(v, (dict, list))]
        elif isinstance(value, list):
            stack += [(v, f"{where}[{i}]") for i, v in reversed(list(enumerate(value)))
                      if isinstance(v, (dict, list))]
    return out


@dataclass
class Results:
    """Tidy tables of one or more run folders (``load``). ``run_id`` (the folder's
    name) tells runs apart in every table; ``case_id`` tells cases apart in a run.

    ``cases`` (one row per case; the ``summary.json`` case entries):

    ============================================  =======  ==========================================
    column                                        unit     meaning
    ============================================  =======  ==========================================
    run_id, case_id, scenario, policy, codec      -        identity (``codec`` ``none``: single-process)
    transport, model, repetition, workload        -        ``workload`` = the labels as ``k=v,...``,
                                                           an ordered Categorical that sorts
                                                           by size (``workload_order``:
                                                           num_running=4 < num_running=16),
                                                           in every table that has it
    arm                                           -        the side of the comparisons
                                                           (``send'``, ``cached+async``...;
                                                           NaN: a run before it)
    <labels> (e.g. num_running, trace)            -        the case's workload labels, one column each
                                                           (num_running, tp, pp ``Int64``
                                                           where some case lacks it:
                                                           ``<NA>``; ``_NULLABLE_INT_COLUMNS``)
    complete, error                               -        the case ran to its end / why not
    steps_kept_in                                 -        ``steps.partial.csv``: a case whose
                                                           rows steps.csv could not take (a
                                                           write failed) left them there, as
                                                           a killed run; NaN: in steps.csv
    rows_not_written                              rows     CSV file name -> rows of the case
                                                           that file could not take (a write
                                                           failed); NaN: every row written
    num_steps, num_warmup_steps, num_total_steps  steps    counted / warm-up / all steps
    warmup_token_share                            ratio    warm-up's share of the scheduled tokens
    counted_steps_asked, max_steps                steps    ``--steps`` (steady scenarios; None:
                                                           no such limit) / the cap on all steps
    output_len_mean                               tokens   a steady case's mean output (its
                                                           workload's; None: not steady)
    wall_s                                        s        wall time of the scheduler loop,
                                                           warm-up included: its start to just
                                                           after its last step; timed replays:
                                                           first arrival (arrival_s 0) to just
                                                           after the last completion
                                                           (metrics.WALL_S_MEANING)
    warmup_pause_s                                s        the end-of-warm-up pause (heaps
                                                           collected, frozen: the scheduler's
                                                           and each runner's, between two
                                                           steps); timed replays' clock stops
                                                           during it (None: warm-up never
                                                           ended)
    runner_warmup_collect_s                       s        the runner's own collection and
                                                           freeze in that pause, the longest
                                                           of the --tp ranks / --pp stages
                                                           (None: single process, warm-up
                                                           never ended, or older runs)
    num_requests, num_finished, num_rejected      reqs
    num_cut_at_max_model_len                      reqs     stopped by max_model_len before max_tokens
    num_preemptions                               count    preemptions by recompute, whole case
    output_tokens                                 tokens   sampled in counted steps
    output_tokens_per_s                           tok/s    output_tokens / sum of counted step_ns;
                                                           timed replays: all requests' output
                                                           tokens (warm-up included) / wall_s
                                                           (arrival-bound), the busy figure then in
                                                           busy_output_tokens_per_s
    requests_per_s                                req/s    timed replays: served requests / wall_s
    total_tokens_per_s                            tok/s    timed replays: served requests' prompt
                                                           + output tokens / wall_s
    trace_speedup                                 x        timed replays: arrivals at x real time
    ttft/tpot/itl/e2e_ms_mean/_p50/_p90/_p99      ms       timed replays and soak: request
                                                           latencies, mean and percentiles
                                                           (metrics.LATENCY_MEANINGS: TTFT,
                                                           TPOT, E2E over requests, ITL over
                                                           the gaps between a request's
                                                           steps)
    floor_output_tokens_per_s                     tok/s    same tokens over the floor's time
    no_floor                                      -        the run's --no-floor left the case
                                                           without its floor (NaN: a summary
                                                           written before it was recorded)
    floor_interrupted                             -        true: a signal cut the floor short
                                                           after every counted step (the case
                                                           is kept, without its floor; False
                                                           otherwise)
    report_interrupted                            -        true: a signal came after the floor
                                                           (after the last step without one),
                                                           while the runner's report was
                                                           awaited (the case is kept, floor
                                                           and all, without the runner's
                                                           per-step columns; False otherwise)
    floor_failed                                  -        the line of the runner's failure
                                                           (it died, stopped answering)
                                                           that cut the floor short after
                                                           every counted step (the case is
                                                           kept, without its floor; absent
                                                           otherwise)
    report_failed                                 -        the line of the runner's failure
                                                           after the floor (after the last
                                                           step without one), while its
                                                           report was awaited (the case is
                                                           kept, floor and all, without the
                                                           runner's per-step columns;
                                                           absent otherwise)
    floor_unwritten                               -        the line of the write error
                                                           (a full disk) that kept the
                                                           floor's rows out of floor.csv,
                                                           every other file of the case
                                                           written (the case is kept,
                                                           without its floor; absent
                                                           otherwise)
    step_to_floor_ratio                           ratio
    floor_step_ns_block_cv                        ratio    spread of 50-step mean floor step
                                                           times (None: under 150 floor steps)
    step_ns_mean, step_ns_median                  ns       one scheduler iteration
    step_ns_max, step_ns_max_seq                  ns, -    the longest counted step, its seq
    output_tokens_per_s_without_longest           tok/s    out tok/s without that step
    between_steps_ns_max, ..._seq                 ns, -    the loop's longest time between two
                                                           steps, the seq of the step after it
    stalled_steps, stalled_step_share,            -, ratio a trace replay's counted steps over 10x
    stall_unjudged_steps                          -        their workload's median step
                                                           (``analysis.replay_stall``), their
                                                           share of the counted steps' time, the
                                                           steps left unjudged
    stalled_step_ns_max, ..._seq, ..._ratio       ns, -    the longest stalled step, its seq and
                                                           its ratio to its workload's median
    output_tokens_per_s_without_stalled           tok/s    out tok/s without the stalled steps
    step_ns_bin_ratio_max                         ratio    the largest ratio of a judged step
    *_payload_bytes_per_step, *_wire_bytes_*      bytes    per counted step, per direction;
                                                           NaN in a single-process case, both
                                                           (``SINGLE_PROCESS_NO_PAYLOAD``)
    decode_token_bytes_per_step,                  bytes    ``send`` only: what new_token_ids add over
    prompt_chunk_bytes_per_step                            cached's ``[]``, split into decode tokens
                                                           (list headers included) / re-sent prompt
                                                           chunks
    sched_*_ns_per_step, runner_*_ns_per_step     ns       mean per counted step of each phase
    build/encode/decode_ns_per_step               ns       both directions summed
    *_gc_collections_per_step                     1/step
    sched_gc_ns_per_step, runner_gc_ns_per_step   ns       time in those collections, per step
    sched/runner_breakdown_coverage               ratio    share of the step its named parts cover
    step_ns_block_cv                              ratio    spread of 50-step mean step times
    machine_busy_pct, cpu_steal_pct               %        whole machine during the case
    warnings                                      -        list of pyperf-check-style lines
    token_digest                                  -        sha256 of every output id (oracle)
    schedule_digest                               -        sha256 of every step's schedule (None:
                                                           the bare loop keeps none)
    token_streams_compared_with, ..._not_...      -        case ids the token digest was (not)
                                                           compared with: equal schedules only
    input_oracle_interval                         steps    between two input-oracle checks; 0: the
                                                           fed token ids were not checked
    step_wait                                     -        fixed-step cases: sleep or spin
    shm_cores, shm_oversubscribed                 -        ``--transport shm``, one runner: CPUs of
                                                           the scheduler's affinity mask / fewer
                                                           than 2 (the spinning reader shares one);
                                                           ``Int64`` where some case lacks it
    runner_cores, runner_readers,                 -        one runner this process started, or
    runner_timings_withheld, runner_timings_marked         the single process with a frontend: CPUs
                                                           shared, readers (1; 2 with a frontend;
                                                           the single process's frontend: 1)
    (and _oversubscribed)                                  / withheld / N = 1 on 2: shown, marked
                                                           (``analysis.cores``)
    num_spec_tokens, spec_acceptance              -        draft tokens per request and step (0:
                                                           none), chance a draft is the target's
    scheduled_tokens_per_step,                    tok      per counted step: tokens scheduled
    output_tokens_per_step                                 (drafts included) / sampled
    spec_draft_tokens_per_step,                   tok      pure-decode counted steps with drafts:
    spec_accepted_tokens_per_step,                         drafts scheduled / accepted, and
    spec_draft_acceptance_rate                    ratio    accepted / drafted
    draft_ns_per_step                             ns       torch model with drafts: its drafter
                                                           (in runner_writeback_ns_per_step)
    frontend_*_per_step, control_plane_*          -        ``--frontend``: the engine core -> frontend
                                                           hop and the whole control plane
                                                           (``analysis.frontend``), bytes and ns
    send_saving_*                                 B, ratio ``--frontend``: send's saving per pair
    ============================================  =======  ==========================================

    Fields added by later harness versions appear as further columns as they are.

    ``steps`` (one row per scheduler step per case, warm-up included):

    ========================================  =====  ==============================================
    column                                    unit   meaning
    ========================================  =====  ==============================================
    run_id, case_id, scenario, policy,        -      identity, as in ``cases``
    codec, transport, model, repetition,
    workload, <labels>
    arm                                       -      the case's ``arm``, as ``cases`` has it,
                                                     else its ``policy`` (a run before it):
                                                     what ``by_arm`` relabels ``policy`` to
    seq                                       -      exchange number within the case, from 0
    step                                      -      logical scheduler step
    warmup, counted                           bool   warm-up step / counted in the case's figures
    num_reqs                                  reqs   requests scheduled this step (running)
    num_new_reqs                              reqs   of which scheduled for the first time
    num_scheduled_tokens, num_output_tokens   tokens scheduled / sampled this step
    num_finished                              reqs   finished this step
    num_preempted, num_resumed                reqs   preempted (by recompute) / resumed this step
    num_waiting                               reqs   left waiting once the step was scheduled:
                                                     arrived (or preempted), not scheduled
                                                     (vLLM's len(scheduler.waiting); NaN: a
                                                     run before it)
    sched_ns, build_ns, encode_ns, send_ns,   ns     scheduler phases: schedule(), building the
    wait_ns, decode_ns, update_ns                    SchedulerOutput, encode, socket send, wait for
                                                     the reply, decode the reply, update_from_output
    step_ns                                   ns     whole iteration (sum of the phases above)
    sched_cpu_ns                              ns     scheduler thread CPU time over the step
    s2r_payload_bytes, r2s_payload_bytes      bytes  SchedulerOutput / ModelRunnerOutput frame
    gc_collections                            count  scheduler-process collections in the step
    gc_ns                                     ns     time in those collections (NaN: a run
                                                     before it)
    t_end_ns                                  ns     end of the step since the case's loop began
                                                     (timed replays: on the replay clock, which
                                                     stops during the end-of-warm-up pause)
    runner_idle_ns                            ns     runner waiting for the SchedulerOutput
    runner_decode_ns, runner_update_ns,       ns     runner phases: decode, update_states,
    runner_prepare_ns, runner_forward_ns,            prepare_inputs, forward + sampling,
    runner_writeback_ns, runner_build_ns,            write_back, build_output, encode the reply,
    runner_encode_ns, runner_send_ns                 socket send
    runner_gc_collections                     count  runner-process collections in the step
    runner_gc_ns                              ns     time in those collections (NaN: a run
                                                     before it)
    runner_t0_ns                              ns     start of the runner's wait, since its loop began
    runner_forward_start_ns                   ns     start of the step's forward, since the
                                                     runner's timing began (runner gap)
    gpu_busy_ns, gpu_idle_ns                  ns     torch on CUDA: the step's first to last
                                                     GPU op; GPU idle since the previous
                                                     step's last op (-1: none before it)
    roofline_ns                               ns     torch with the roofline: the step's
                                                     roofline time
    emulated_step_ns                          ns     emulated: the roofline time waited
    emulated_context_tokens                   tok    emulated: the KV context it was
                                                     computed for (sum of seq_lens)
    draft_ns                                  ns     torch with drafts: the drafter's time
                                                     (in runner_writeback_ns)
    replica_schedule_ns, replica_update_ns    ns     replicated codec: the runner's replica
                                                     scheduler (in runner_decode_ns,
                                                     runner_encode_ns)
    runner_lookahead                          0/1    device-input path: the next step was
                                                     launched before this one finished
    ========================================  =====  ==============================================

    The last nine (``spec.OPTIONAL_RUNNER_COLUMNS``) are NaN where a case has no such
    column (other models, codecs, a CPU run's ``gpu_*``, a run written before them).
    Integer columns are ``int64``; a runner column is ``float64`` with NaN where a
    failed case has no runner report. Single-process cases (codec ``none``) have 0
    bytes and 0 runner idle/decode/encode/send.

    ``requests`` (one row per request per case): identity columns as in ``steps``,
    then ``index``, ``req_id``, ``num_prompt_tokens``, ``num_output_tokens``,
    ``max_tokens`` (tokens), ``arrival_step``, ``first_scheduled_step``,
    ``first_token_step``, ``finish_step`` (logical steps, -1: never),
    ``finish_reason`` (``""`` while running), ``preemptions`` (count); timed replays
    and soak fill ``arrival_s`` (intended arrival, s after the case's start), ``ttft_s``,
    ``tpot_s`` and ``e2e_s`` (s; NaN elsewhere, and ``tpot_s`` for one-token requests;
    ``metrics.LATENCY_MEANINGS``); a row with a negative or infinite latency, an
    ``e2e_s`` below its ``ttft_s`` or above its case's ``wall_s``, or a ``tpot_s`` other
    than ``(e2e_s - ttft_s) / (num_output_tokens - 1)`` (``TPOT_FORMULA``) is left out
    with a warning, and fewer rows than a case's ``num_requests`` warned about; a
    ``requests.csv`` of 0 bytes where a case has requests: ``ResultsError``.

    ``floor`` (one row per floor exchange): ``run_id``, ``case_id``, ``i`` (index of
    the replayed counted step), ``floor_step_ns`` (ns).

    ``itl`` (timed replays and soak: one row per gap between two consecutive steps
    that gave a request output tokens, one per token without drafts; empty otherwise;
    a negative, infinite or too large ``itl_s``, longer than its case's ``wall_s`` or
    its request's ``e2e_s - ttft_s``, and every gap of a request whose ``requests.csv``
    row is left out as impossible, left out with a warning, and fewer rows than the
    requests' ``n - 1`` gaps (with drafts, than the case's ``itl_count``) warned about;
    ``itl.csv`` missing or empty where a case has ``itl_ms_*`` figures:
    ``ResultsError``): identity columns as in ``steps``, ``index`` (the request),
    ``itl_s`` (s).

    ``frontend`` (``--frontend`` runs: one row per scheduler step per case, from
    ``frontend.csv``; an empty frame of these columns for a run without it; ``None`` in
    a ``Results`` built by hand): identity columns as in ``steps``, ``seq`` (the
    step's, as in ``steps``), ``counted`` (bool, as ``steps``' row of the same ``seq``
    has it: the step is one of the case's figures, not warm-up or a mixed step; a file
    written before the column, or a row whose flag differs from steps.csv's (said),
    takes steps.csv's, 0 where it has no row), ``frontend_build_ns``,
    ``frontend_encode_ns``, ``frontend_send_ns`` (ns: building, encoding and sending
    the step's ``EngineCoreOutputs`` in the scheduler's process),
    ``frontend_payload_bytes`` (bytes; 0: no message that step) and
    ``frontend_decode_ns`` (ns, in the frontend process; NaN where nothing was sent or
    its report never came). ``cases``' ``frontend_*_per_step`` are the means of the
    ``counted`` rows. Rows of a case left out or not listed are not loaded; a row of a
    ``seq`` its case has in an earlier row, or with a negative, infinite or too large
    value, is left out with a warning, as in ``steps``, and fewer rows than a case's
    ``num_total_steps`` (one with frontend figures) warned about; a case whose
    ``frontend_*_per_step`` are not its counted rows' means (``FRONTEND_MEANS``; every
    counted row there) is left out whole with a warning, as one whose figures are not
    its ``steps`` rows'.

    ``metadata``: ``run_id`` -> the run's ``summary.json`` metadata (environment, full
    configuration of every case); ``status``: ``run_id`` -> ``complete`` /
    ``incomplete`` / ``failed``; ``problems``: ``run_id`` -> list of lines;
    ``paths``: ``run_id`` -> run folder. ``status_detail``: ``run_id`` -> why a run is
    not complete, one line: its recorded problems, else what its files tell
    (``unfinished_detail``: killed, or still running); ``""`` for a complete run.
    ``warnings``: ``run_id`` -> lines about what was found cut short or impossible
    while loading, each naming the file, the case and the field (also issued as
    ``ResultsWarning``, lines alike but for their case as one: ``grouped_warnings``;
    what is valid is loaded: ``load``), the first of a run that is
    not complete its ``status_warning``. ``status_warning``: ``run_id`` -> that line
    (``status_line``: the run's state, its ``status_detail`` and the cases loaded,
    issued as ``RunStatusWarning``); for a complete run that recorded ``problems``
    as it ended (its tables lost on a full stdout: ``cannot write to stdout: No space
    left on device``) ``complete_problems_line``'s, which says it is complete;
    ``""`` for another complete run. ``stopped_case``:
    ``run_id`` -> the case a run that is not complete was running (or failed in) and
    does not list (``summary.json``'s ``running_case``: killed, or still running; its
    rows in ``steps.partial.csv``, not loaded), ``case_id`` and ``error`` (why, in
    words), which ``unfinished`` names; absent where there is none.
    """

    cases: Any
    steps: Any
    requests: Any
    floor: Any
    itl: Any
    metadata: dict[str, dict[str, Any]]
    status: dict[str, str]
    problems: dict[str, list[str]]
    paths: dict[str, Path]
    status_detail: dict[str, str] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    status_warning: dict[str, str] = field(default_factory=dict)
    stopped_case: dict[str, dict[str, str]] = field(default_factory=dict)
    frontend: Any = None

    @property
    def run_ids(self) -> list[str]:
        """Run ids in load order."""
        return list(self.metadata)

    @property
    def labels(self) -> list[str]:
        """Names of the workload labels the loaded runs recorded (``label_names``) that
        are columns of ``cases``, e.g. ``["num_running"]``."""
        return [k for k in label_names(self.metadata) if k in self.cases.columns]

    @property
    def still_running(self) -> list[str]:
        """Ids of the runs read as still going (not complete, a process holding their
        lock as they were read: a ``status_detail`` of ``STILL_RUNNING``), in load
        order, whatever the run did after: what their report says, and where it goes
        (``report.document.write_report``)."""
        return [r for r in self.metadata
                if str((self.status_detail or {}).get(r) or "").startswith(STILL_RUNNING)]

    def unfinished(self) -> list[dict[str, Any]]:
        """The cases that did not finish, one dict each with ``run_id``, ``case_id``
        and ``error`` (``""`` when none was recorded), in load order, each run's after
        its own: those recorded as not complete (``complete`` false: interrupted,
        failed, or the running case of a killed run that ``summary.json`` lists), then
        the run's ``stopped_case``, the case a run that is not complete was running
        and does not list (killed, or still running as it was read: ``summary.json``'s
        ``running_case``; it has no row in the tables, its rows being in
        ``steps.partial.csv``), its ``error`` saying so (``the run stopped during
        it, killed or unable to write summary.json; its rows in steps.partial.csv are
        not loaded``)."""
        cases = self.cases
        listed = []
        if not cases.empty and "complete" in cases.columns:
            errors = cases["error"] if "error" in cases.columns else [None] * len(cases)
            listed = [dict(run_id=run, case_id=case,
                           error=without_full_stop(error) if isinstance(error, str) else "")
                      for run, case, done, error in zip(cases["run_id"], cases["case_id"],
                                                        cases["complete"], errors)
                      if _not_complete(done)]
        out = []
        for run in dict.fromkeys([*self.metadata, *(c["run_id"] for c in listed)]):
            out += [c for c in listed if c["run_id"] == run]
            if (self.stopped_case or {}).get(run):
                out.append(dict(run_id=run, **self.stopped_case[run]))
        return out

    def finished(self) -> "Results":
        """These tables without the ``unfinished`` cases (their rows of ``cases``,
        ``steps``, ``requests``, ``floor``, ``itl`` and ``frontend``): what findings, comparisons and
        figures are computed from, so that a figure of a case that did not finish
        never passes for a finished one. The same object when every case finished."""
        gone = {(c["run_id"], c["case_id"]) for c in self.unfinished()}
        if not gone:
            return self

        def pick(df):
            if df is None or len(df) == 0 or "case_id" not in df.columns:
                return df
            mask = [(run, case) not in gone for run, case in zip(df["run_id"], df["case_id"])]
            return _used_workloads(df[mask].reset_index(drop=True))

        return replace(self, cases=pick(self.cases), steps=pick(self.steps),
                       requests=pick(self.requests), floor=pick(self.floor),
                       itl=pick(self.itl), frontend=pick(self.frontend))

    def by_arm(self) -> "Results":
        """These tables with each case's ``policy`` replaced by its arm label (``arm``:
        ``send'`` of an ``--aa`` run, ``cached+async`` beside ``cached``...), so that
        whatever groups by policy (the report's figures, side-by-side tables and
        findings) keeps two arms of one policy apart instead of averaging them. The
        same object when every arm is its policy."""
        cases = self.cases
        if cases.empty or "arm" not in cases.columns:
            return self
        arm = [a if isinstance(a, str) and a else p
               for a, p in zip(cases["arm"], cases["policy"])]
        if arm == list(cases["policy"]):
            return self
        label = dict(zip(zip(cases["run_id"], cases["case_id"]), arm))

        def relabel(df):
            if df is None or len(df) == 0 or not {"case_id", "policy"} <= set(df.columns):
                return df
            return df.assign(policy=[label.get((r, c), p) for r, c, p in zip(
                df["run_id"], df["case_id"], df["policy"])])

        return replace(self, cases=relabel(cases), steps=relabel(self.steps),
                       requests=relabel(self.requests), floor=relabel(self.floor),
                       itl=relabel(self.itl), frontend=relabel(self.frontend))

    def select(self, run_id: str) -> "Results":
        """The tables of one run; ``KeyError`` if ``run_id`` is not loaded."""
        if run_id not in self.metadata:
            raise KeyError(f"no run {run_id!r}; loaded: {', '.join(self.metadata)}")

        def pick(df):
            if df is None:
                return df
            return _used_workloads(df[df["run_id"] == run_id].reset_index(drop=True))

        return Results(cases=pick(self.cases), steps=pick(self.steps),
                       requests=pick(self.requests), floor=pick(self.floor),
                       itl=pick(self.itl), frontend=pick(self.frontend),
                       metadata={run_id: self.metadata[run_id]},
                       status={run_id: self.status[run_id]},
                       problems={run_id: self.problems[run_id]},
                       paths={run_id: self.paths[run_id]},
                       status_detail={run_id: self.status_detail.get(run_id, "")},
                       warnings={run_id: self.warnings.get(run_id, [])},
                       status_warning={run_id: self.status_warning.get(run_id, "")},
                       stopped_case={r: c for r, c in self.stopped_case.items()
                                     if r == run_id})


def _not_complete(value: Any) -> bool:
    """Whether a case's ``complete`` field says it did not finish (false; a missing
    value, NaN in a table, is no such record)."""
    return value is not None and value == value and not bool(value)


def case_unfinished(summary: dict[str, Any]) -> bool:
    """Whether a case summary (a ``summary.json`` case entry) records that the case did
    not finish (``complete`` false); such a case's figures are never shown as a
    finished case's (``Results.finished``, ``report.tables.format_tables``)."""
    return _not_complete(summary.get("complete"))


def label_names(metadata: dict[str, dict[str, Any]]) -> list[str]:
    """Names of the workload labels recorded in the runs' metadata (``cases[].labels``
    of each ``summary.json``), sorted by name as in the ``workload`` key (``k=v,...``).
    ``metadata``: ``Results.metadata`` (run id -> metadata dict)."""
    return sorted({k for md in metadata.values() for c in md.get("cases") or []
                   for k in (c.get("labels") or {})})


def _lone_summary_hint(p: Path) -> str:
    """What to do with a run's ``summary.json`` given alone (a published report's
    ``<run>.summary.json``: no per-step files beside it), for ``check_run_dir``'s
    refusal; ``""`` for any other file."""
    if not p.name.endswith("summary.json"):
        return ""
    return (" (a run's summary.json alone, as published beside a report, holds its "
            "per-case figures only: give its run folder, or read them with "
            f"pandas.json_normalize(json.load(open({str(p)!r}))['cases']))")


def check_run_dir(path: str | os.PathLike, several: bool = True) -> Path:
    """``Path(path)`` if it is a run folder, else ``ResultsError`` (one line): ``PATH:
    no such folder``, ``PATH: not a folder`` (for a lone ``summary.json``, how to read
    it, ``_lone_summary_hint``), ``PATH: not a run folder (no
    summary.json)`` (and what it holds instead, ``_what_it_holds``: a rendered report,
    run folders), ``PATH: not a run folder (summary.json is a dangling link (to
    TARGET), not a regular file)`` (``run_files.dangling_link``, as a run's CSV file
    that is one: ``run_files.why_not_a_file``), ``PATH: not a run folder (summary.json
    is not a file)``, or
    ``cannot read run folder PATH: REASON`` when the system will not look it up (a
    name over 255 bytes, a file or a link loop on the way, no permission).
    ``several``: the command takes several run folders (``report``), so a folder of
    runs is answered "give one or more of them", else "give one of them"."""
    p = Path(path)
    try:
        if not stat.S_ISDIR(_mode_of(p, p, "no such folder")):
            raise ResultsError(f"{p}: not a folder{_lone_summary_hint(p)}")
        try:
            summary = _mode_of(p / "summary.json", p, "not a run folder (no summary.json)")
        except ResultsError as exc:
            dangling = dangling_link(p / "summary.json")
            if dangling is not None:  # there, as a link to nothing: no folder to hint at
                raise ResultsError(f"{p}: not a run folder (summary.json is {dangling}, "
                                   "not a regular file)") from None
            raise ResultsError(f"{exc}{_what_it_holds(p, several)}") from None
    except OSError as exc:
        raise ResultsError(f"cannot read run folder {p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(summary):
        raise ResultsError(f"{p}: not a run folder (summary.json is not a file)")
    return p


def _what_it_holds(folder: Path, several: bool = True) -> str:
    """What a folder without ``summary.json`` holds instead, said after the refusal:
    a rendered report (``report.md``, as ``results/published/*``: its figures come from
    the runs it names, not from this folder), run folders (``results/``: the runs
    to give), or, with no run folder, folders of rendered reports (``results/published``:
    ``it holds 5 folders of rendered reports: read them, e.g.
    results/published/azure-conv/report.md, or report the run folders they were made
    from``). ``''`` when none, or when it cannot be listed."""
    from ipc_bench.errors import one_line

    try:
        if (folder / "report.md").is_file():
            return ("; it holds a rendered report, report.md and report.html: read them, "
                    "or report the run folders it was made from")
        subfolders = sorted(d for d in folder.iterdir() if d.is_dir())
        runs = [d.name for d in subfolders if (d / "summary.json").is_file()]
        reports = [d.name for d in subfolders if (d / "report.md").is_file()] \
            if not runs else []
    except OSError:
        return ""
    if reports:
        example = one_line(str(folder / reports[0] / "report.md"))
        if len(reports) == 1:
            return (f"; it holds a folder of a rendered report: read it, {example}, or "
                    "report the run folders it was made from")
        return (f"; it holds {len(reports)} folders of rendered reports: read them, e.g. "
                f"{example}, or report the run folders they were made from")
    if not runs:
        return ""

    example = one_line(str(folder / runs[0]))
    which = "it" if len(runs) == 1 else "one or more of them" if several else "one of them"
    return (f"; it holds {len(runs)} run folder{'s' if len(runs) > 1 else ''}: give "
            f"{which}, e.g. {example}")


def _mode_of(path: Path, run_dir: Path, missing: str) -> int:
    """``path``'s mode (links followed); ``ResultsError`` ``RUN_DIR: MISSING`` when it
    does not exist; ``OSError`` when the system will not look it up."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        raise ResultsError(f"{run_dir}: {missing}") from None


def check_distinct_runs(run_dirs) -> None:
    """Refuse (``ResultsError``, one line) a run folder given more than once, however
    it is spelt (a trailing slash, ``./``, a symlink): the report would compare the
    run with itself. ``run_dirs``: paths (str or ``os.PathLike``) of folders that
    exist. A copy of a folder is ``check_copies``' and ``check_copied_steps``'."""
    seen: dict[tuple[int, int], str] = {}
    for given in run_dirs:
        st = os.stat(given)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            first = seen[key]
            also = "" if str(given) == first else f" (also as {given})"
            raise ResultsError(f"run folder {first} is given twice{also}: a run is not "
                               "compared with itself; give each run once")
        seen[key] = str(given)


def check_copies(metadata: dict[str, dict[str, Any]], paths: dict[str, Path]) -> None:
    """Refuse (``ResultsError``, one line naming both folders) a run folder that is a
    copy of another one given: the same ``start_time_utc`` (to the microsecond) in
    their ``summary.json`` metadata, on the same ``hostname`` where both recorded one;
    no two runs share it, and compared, every ratio would be 1.000. ``metadata`` and
    ``paths``: run id -> the run's metadata / folder (``Results.metadata``,
    ``Results.paths``). A run that recorded no start time is taken as its own; a copy
    whose start time was edited is ``check_copied_steps``'."""
    seen: dict[str, list[tuple[str, Any]]] = {}  # start time -> (run id, host)
    for run_id, md in metadata.items():
        start = md.get("start_time_utc") if isinstance(md, dict) else None
        if not isinstance(start, str) or not start:
            continue
        host = md.get("hostname") if isinstance(md.get("hostname"), str) else None
        for first, other in seen.get(start, []):
            if host is None or other is None or host == other:
                on = f" on host {host or other}" if host or other else ""
                raise ResultsError(
                    f"run folder {paths[run_id]} is a copy of {paths[first]} (the same "
                    f"start time {start}{on} in their metadata): a run is not compared "
                    "with itself; give each run once")
        seen.setdefault(start, []).append((run_id, host))


def _step_ns_digests(steps) -> dict[str, tuple[str, int]]:
    """Case id -> (sha256 of its ``step_ns`` values in row order, its number of rows)
    for each case of ``steps`` (one run's ``steps.csv`` rows) with two rows or more
    and no NaN ``step_ns``."""
    import hashlib

    if len(steps) == 0 or not {"case_id", "step_ns"} <= set(steps.columns):
        return {}
    out = {}
    for case_id, rows in steps.groupby(steps["case_id"].astype(str), sort=False, observed=True):
        values = rows["step_ns"].to_numpy(dtype="float64")
        if len(values) >= 2 and not (values != values).any():
            out[case_id] = (hashlib.sha256(values.tobytes()).hexdigest(), len(values))
    return out


def check_copied_steps(steps: dict[str, Any], paths: dict[str, Path]) -> None:
    """Refuse (``ResultsError``, one line naming both folders and the case) a run
    folder that is a copy of another one given whatever its metadata says (start and
    end times edited): a case whose ``step_ns`` values, row for row, are those of a
    case of the other run (two rows or more). No two runs time their steps alike to
    the nanosecond; a copy compared with its source gives every ratio 1.000.
    ``steps`` and ``paths``: run id -> the run's ``steps`` table / folder
    (``Results.paths``). ``check_copies`` refuses a copy whose start time was kept."""
    seen: dict[str, tuple[str, str]] = {}  # digest -> (run id, case id)
    for run_id, table in steps.items():
        digests = _step_ns_digests(table)
        for case_id, (digest, n) in digests.items():
            if digest not in seen:
                continue
            first, other = seen[digest]
            which = (f"case {case_id!r} has the same {n:,} step_ns values"
                     if other == case_id else
                     f"case {case_id!r} has the {n:,} step_ns values of case {other!r}")
            raise ResultsError(
                f"run folder {paths[run_id]} is a copy of {paths[first]} ({which}, row for "
                "row, in their steps.csv): a run is not compared with itself; give each "
                "run once")
        for case_id, (digest, _) in digests.items():
            seen.setdefault(digest, (run_id, case_id))


def _listed_ids(summary: dict[str, Any]) -> set[str]:
    """The case ids ``summary.json`` lists (its ``cases``' ``case_id`` texts)."""
    return {c["case_id"] for c in summary.get("cases") or []
            if isinstance(c, dict) and isinstance(c.get("case_id"), str)}


def _finishing_cases(summary: dict[str, Any], run_dir: Path,
                     tables: dict[str, Any]) -> set[str]:
    """The case ids whose rows may have come in as the run was read, before
    ``summary.json`` listed them (a case's rows are appended to the CSV files, then
    the summary rewritten): those of a run still going (``run_in_progress``) that its
    summary names as the ``running_case``, or that are the last case of a table's
    rows. Empty for a run that is not running (rows unlisted there are an edit)."""
    if summary.get("status") == "complete" or not run_in_progress(run_dir):
        return set()
    out = {summary["running_case"]} if isinstance(summary.get("running_case"), str) else set()
    return out | {str(df["case_id"].iloc[-1]) for df in tables.values()
                  if len(df) and "case_id" in df}


def _unlisted_rows(run_dir: Path, tables: dict[str, Any], summary: dict[str, Any]):
    """``tables`` (CSV file stem -> its rows) without the rows of a case that
    ``summary.json`` (``summary``) does not list, and one line per such case naming
    the files and their rows: the figures would show a case the tables do not. A case
    that was finishing as a run still going was read (``_finishing_cases``) is said
    as such (``RUN: case 'ID' was finishing as the run was read: its 1,122 rows in
    steps.csv came in before summary.json listed it (left out; read the run again to
    have it)``), or, where it streams its rows as it runs (soak: ``_streamed_cases``),
    as running (``... was running as the run was read: it streams its rows, and its
    1,122 rows in steps.csv so far are left out until it ends (read the run again
    then)``); the streamed case a stopped run was running (``_stopped_streaming``: a
    soak killed) as stopped (``RUN: case 'ID': the run stopped during it, killed or
    unable to write summary.json; it streams its rows, and its 7,337 rows in steps.csv
    and 65 rows in requests.csv are not loaded``); any other, ``RUN: case 'ID' has
    1,122 rows in steps.csv, but summary.json does not list it (left out)``, or, where
    an entry of its ``cases`` has the case's workload, arm, codec and repetition but no
    usable ``case_id`` (a hand edit: ``_entries_without_id``), ``... but summary.json
    lists it as cases[0], which has case_id null, not a text (left out)``. Rows with
    no ``case_id`` (an empty field) are left out with one line per file
    (``RUN/steps.csv: 1 row has no case_id (left out)``)."""
    listed = _listed_ids(summary)
    finishing = _finishing_cases(summary, run_dir, tables)
    counts: dict[str, list[str]] = {}
    out = {}
    lines = []
    for stem, df in tables.items():
        if len(df) == 0 or "case_id" not in df:
            out[stem] = df
            continue
        ids = df["case_id"].astype(str)
        unlisted = ~ids.isin(listed)
        no_id = df["case_id"].isna()
        for case, n in ids[unlisted & ~no_id].value_counts(sort=False).items():
            counts.setdefault(case, []).append(f"{_rows(n)} in {stem}.csv")
        missing = int(no_id.sum())
        if missing:
            lines.append(f"{run_dir / (stem + '.csv')}: {_rows(missing)} "
                         f"{'has' if missing == 1 else 'have'} no case_id (left out)")
        out[stem] = df[~unlisted].reset_index(drop=True) if unlisted.any() else df
    streamed = _streamed_cases(summary)
    stopped = _stopped_streaming(summary, run_dir, streamed - finishing) if counts else None
    no_id = _entries_without_id(summary) if counts else {}
    unnamed = {case: found for case in counts
               if (found := _listed_without_id(case, no_id)) is not None}
    lines += [f"{run_dir}: case {case!r} was running as the run was read: it streams its "
              f"rows, and its {' and '.join(where)} so far are left out until it ends "
              "(read the run again then)" if case in finishing and case in streamed else
              f"{run_dir}: case {case!r} was finishing as the run was read: its "
              f"{' and '.join(where)} came in before summary.json listed it (left out; "
              "read the run again to have it)" if case in finishing else
              f"{run_dir}: case {case!r}: {stopped[1]}; it streams its rows, and its "
              f"{' and '.join(where)} are not loaded" if stopped and case == stopped[0] else
              f"{run_dir}: case {case!r} has {' and '.join(where)}, but summary.json lists "
              f"it as cases[{unnamed[case][0]}], which has {unnamed[case][1]} (left out)"
              if case in unnamed else
              f"{run_dir}: case {case!r} has {' and '.join(where)}, but summary.json does "
              "not list it (left out)" for case, where in counts.items()]
    return out, lines


def _stopped_streaming(summary: dict[str, Any], run_dir: Path,
                       streamed: set[str]) -> tuple[str, str] | None:
    """``(case id, why)`` of the streamed case (of ``streamed``: soak, which appends its
    rows as it runs) that a run not complete was running as it stopped
    (``_stopped_case``: killed, or unable to write ``summary.json``), its rows in the
    CSV files but the case unlisted; ``why`` as ``Results.unfinished`` says it (``the
    run stopped during it, killed or unable to write summary.json``). ``None`` where
    there is none: its unlisted rows are then an edit."""
    if summary.get("status") == "complete":
        return None
    stopped = _stopped_case(summary, list(summary.get("problems") or []), run_dir)
    if stopped is None or stopped["case_id"] not in streamed:
        return None
    return stopped["case_id"], stopped["error"]


def _streamed_cases(summary: dict[str, Any]) -> set[str]:
    """The ids of the cases ``summary``'s metadata records as streamed (soak: their
    rows are appended while they run, not once they end)."""
    cases = (summary.get("metadata") or {}).get("cases") if isinstance(
        summary.get("metadata"), dict) else None
    return {str(c.get("case_id")) for c in cases or () if isinstance(c, dict)
            and c.get("stream") is True}


def _load_warnings(run_dir: Path, notes: dict[str, list[str]],
                   short: dict[str, str]) -> list[str]:
    """One line per CSV file of ``run_dir`` found cut short: ``notes`` per file stem,
    ``short``: per file stem, the words on its rows missing (``_short_steps``,
    ``_short_requests``, ``_short_itl``), after the notes a clause of its own: ``...
    (left out), and it holds 10 of the 12 rows that ...``."""
    notes = {stem: lines + ([("it holds " if lines else "") + short[stem]]
                            if short.get(stem) else [])
             for stem, lines in notes.items()}
    return [f"{run_dir / (stem + '.csv')}: {', and '.join(lines)}; loaded what is valid"
            for stem, lines in notes.items() if lines]


def _utc(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


#: ``unfinished_state``'s words: a run holding its claim's lock, one whose lock no
#: process holds, and a folder without the claim file (written before it, or not by
#: ``bench.py``), of which it cannot be told. A run whose lock no process holds ended
#: without recording its end: it was killed (SIGKILL, the OOM killer), or a write
#: failed and ``summary.json`` could not take its end either (a full disk: the line
#: ``bench.py`` printed said so; the folder keeps no trace of it), which the folder
#: cannot tell apart, so the words name both.
STILL_RUNNING = "still running (it holds its lock)"
KILLED = ("stopped without finishing its summary (killed, or summary.json could not be "
          "written: a full disk, say): no process holds its lock")
KILLED_OR_RUNNING = ("stopped without finishing its summary (killed, or summary.json could "
                     "not be written) or still running")


def unfinished_state(run_dir: Path) -> str:
    """Whether a run that recorded no end (``run_dir``) is still going or stopped
    (killed, or unable to write its ``summary.json``), in words: ``STILL_RUNNING``
    while a process holds the lock on its ``CLAIM_FILE`` (``run_folder.run_in_progress``;
    the kernel drops it when the run's process ends, SIGKILL included), ``KILLED`` when
    none does, ``KILLED_OR_RUNNING`` when the folder has no such file."""
    if run_in_progress(run_dir):
        return STILL_RUNNING
    return KILLED if (run_dir / CLAIM_FILE).is_file() else KILLED_OR_RUNNING


def unfinished_detail(summary: dict[str, Any], run_dir: Path) -> str:
    """One line on a run that ended without recording why (``status`` not complete and
    no ``problems``: ``bench.py`` was killed, e.g. by SIGKILL, or could not write its
    end to ``summary.json``, a disk full, or is still running; a ``failed`` status
    without problems, which ``bench.py`` never writes, is said as such),
    from what its files tell: which of the two (``unfinished_state``), the cases
    recorded, the case that was running and when the run started (its recorded
    ``start_time_utc``: ``last case ID running (the run started 2026-12-06 13:16:14
    UTC)``; a copy, ``cp -r``, gives its files new times, so they are no clock of the
    run), else since ``summary.json``'s modification time, said to be that (it is
    rewritten when a case starts: ``last case ID running since ... UTC (summary.json's
    modification time)``), and the rows in ``steps.partial.csv``."""
    planned = len((summary.get("metadata") or {}).get("cases") or [])
    recorded = f"{len(summary.get('cases') or [])} of {planned} cases recorded"
    end = iso_time((summary.get("metadata") or {}).get("end_time_utc"))
    if summary.get("status") == "failed":
        # ``bench.py`` writes ``failed`` only with the problems that failed it
        parts = [f"status failed, but no problem was recorded (summary.json edited, or "
                 f"written by another tool), {recorded}"]
    elif end is not None:  # ``bench.py`` records an end only with a final status
        parts = [f"status {status_words(summary)}, but its end was "
                 f"recorded (end_time_utc {summary['metadata']['end_time_utc']}) with no "
                 f"problem (summary.json edited, or written by another tool), {recorded}"]
    else:
        state = unfinished_state(run_dir)
        parts = [f"{state}{', ' if ':' in state else ': '}no end was recorded, summary "
                 f"status {status_words(summary)}, {recorded}"]
    running = summary.get("running_case")
    if running:
        start = iso_time((summary.get("metadata") or {}).get("start_time_utc"))
        if start is not None:
            parts.append(f"last case {running} running (the run started "
                         f"{_utc(start.timestamp())})")
        else:
            since = _utc((run_dir / "summary.json").stat().st_mtime)
            parts.append(f"last case {running} running since {since} (summary.json's "
                         f"modification time)")
    return ", ".join(parts + _partial_rows(run_dir))


def status_words(summary: dict[str, Any]) -> str:
    """A summary's ``status`` as a line on the run's state says it: one of
    ``RUN_STATUSES`` as it is (``incomplete``); ``unknown`` where there is none; any
    other value (hand-edited) quoted as written, escaped and cut to one short line
    (``run_files._shown``), and how it is read: ``"weird" (read as unknown)``."""
    if "status" not in summary:
        return "unknown"
    status = summary["status"]
    if isinstance(status, str) and status in RUN_STATUSES:
        return status
    return f"{_shown(status)} (read as unknown)"


def _partial_rows(run_dir: Path) -> list[str]:
    """``["steps.partial.csv holds 7,041 rows of it (its modification time ...)"]``:
    the rows the case that did not finish left in ``steps.partial.csv`` (killed, or a
    write that failed), and the file's modification time, said to be that (its rows
    record no time of day, and a copy of the folder gives it the copy's time); ``[]``
    when there is no such file."""
    partial = run_dir / PARTIAL_STEPS
    if not partial.is_file():
        return []
    size, _ = _unpadded_size(partial, None)
    with open(partial, "rb") as f:
        lines = _count_lines(f, size)
    return [f"{PARTIAL_STEPS} holds {max(lines - 1, 0):,} rows of it (its "
            f"modification time {_utc(partial.stat().st_mtime)})"]


def without_full_stop(text: str) -> str:
    """``text`` (an error quoted in a run's problems or a case's ``error``) without the
    one full stop it may end with (gloo's: ``... Connection reset by peer.``), so that
    the words around it (``; ``, ``.``, ``)``) follow it without a second mark; an
    ellipsis (``..``) is kept, as ``cli.execute.with_pointer`` keeps it; whitespace at
    its end goes too."""
    text = text.rstrip()
    if text.endswith(".") and not text.endswith(".."):
        return text[:-1].rstrip()
    return text


def _problems_detail(summary: dict[str, Any], problems: list[Any], run_dir: Path) -> str:
    """Why a run that recorded its ``problems`` did not complete, in one line: the
    problems, ``; `` between them, ending ``; case ID was running`` where
    ``summary.json`` names the case that failed or was running (``failed_case``, else
    ``running_case``) and no problem names it (a write that failed: ``cannot write
    results to DIR: File too large``; ``; case ID had finished, its files being
    written`` where it is listed complete: its captured messages failed), then, as for a killed run
    (``unfinished_detail``), the rows that case left in ``steps.partial.csv``
    (``, steps.partial.csv holds 13,263 rows of it (its modification time ...)``).
    ``""`` when there are no problems."""
    text = "; ".join(without_full_stop(str(p)) for p in problems)
    case = summary.get("failed_case") or summary.get("running_case")
    if text and isinstance(case, str) and case not in text:
        done = any(isinstance(c, dict) and c.get("case_id") == case and c.get("complete")
                   is True for c in summary.get("cases") or [])
        text += (f"; case {case} had finished, its files being written" if done
                 else f"; case {case} was running")
    return ", ".join([text] + _partial_rows(run_dir)) if text else text


def _read_itl(pd, path: Path, valid: list[dict[str, Any]], notes: list[str]):
    """``itl.csv`` (``path``) as ``_read_csv`` reads it, notes in ``notes``. It is
    written with every run since ITL was measured: a run folder without it, or with
    it empty (not even its header), is complete only where no case of ``valid``
    (summary entries) records ITL figures (an older run's, then an empty frame);
    otherwise ``ResultsError``: ``RUN: not a complete run folder (no itl.csv)``,
    ``(itl.csv is empty)``."""
    columns = ("case_id", "index", "itl_s")
    if not _has_itl(valid):
        return (_read_csv(pd, path, columns, notes) if path.is_file()
                else pd.DataFrame(columns=list(columns)))
    _refuse_emptied(path)
    return _read_csv(pd, path, columns, notes)


def _has_floor(cases: list[dict[str, Any]]) -> bool:
    """Whether a case of ``cases`` (summary entries) records floor figures
    (``FLOOR_FIGURES``: ``floor_output_tokens_per_s``...), whose rows ``floor.csv``
    holds; none does in a run made with ``--no-floor``."""
    return any(isinstance(c.get(figure), numbers.Real) for c in cases
               for figure, _ in FLOOR_FIGURES)


def _read_floor(pd, path: Path, valid: list[dict[str, Any]], notes: list[str]):
    """``floor.csv`` (``path``) as ``_read_csv`` reads it, notes in ``notes``;
    ``ResultsError`` (``_refuse_emptied``: ``RUN: not a complete run folder (floor.csv
    is empty)``) when it is of 0 bytes while a case of ``valid`` (summary entries) has
    floor figures (``_has_floor``), as ``steps.csv`` is (``_read_rows``): its rows are
    lost, and the figures would stand with nothing behind them. Without floor figures
    (``--no-floor``) an empty one is only said in ``notes``."""
    if _has_floor(valid):
        _refuse_emptied(path)
    return _read_csv(pd, path, ("case_id", "i", "floor_step_ns"), notes)


#: How many times ``_load_one`` reads a run at most: again when the run ended as it
#: was read (``_ended_while_read``), so that a run that finished then is loaded as
#: finished, not as killed.
_READS = 3


def _summary_identity(run_dir: Path) -> tuple[int, int, int] | None:
    """``run_dir/summary.json``'s inode, modification time (ns) and size, which change
    each time the run rewrites it (``write_json_atomic`` replaces the file); ``None``
    where it cannot be looked up."""
    try:
        st = os.stat(run_dir / "summary.json")
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _ended_while_read(part: dict[str, Any], run_dir: Path,
                      before: tuple[int, int, int] | None) -> bool:
    """Whether a run loaded as not complete (``part``, ``_load_once``'s) ended as it
    was read: no process holds its lock now (``run_in_progress``), and its
    ``summary.json`` was replaced since ``before`` (its identity, taken before it was
    read: the run wrote its end, then dropped its lock), or the run was read as still
    running (a lock check saw the lock held). A run killed before it was read (lock
    free, summary unchanged) did not; nor did one still going."""
    if part["status"] == "complete" or run_in_progress(run_dir):
        return False
    return (_summary_identity(run_dir) != before
            or part["status_detail"].startswith(STILL_RUNNING))


#: The CSV files ``load`` reads into tables, by stem (``frontend``: a ``--frontend``
#: run's alone).
CSV_STEMS = ("steps", "requests", "floor", "itl", "frontend")


def _load_one(pd, run_dir: Path, run_id: str) -> dict[str, Any]:
    """``run_dir`` loaded (``_load_once``), read again where the run ended as it was
    read (``_ended_while_read``: its summary read before the run finished, its lock
    checked after), ``_READS`` times at most, so that a run that finished while being
    read is loaded as finished, and one killed keeps its words."""
    for _ in range(_READS - 1):
        before = _summary_identity(run_dir)
        part = _load_once(pd, run_dir, run_id)
        if not _ended_while_read(part, run_dir, before):
            return part
    return _load_once(pd, run_dir, run_id)


def _load_once(pd, run_dir: Path, run_id: str) -> dict[str, Any]:
    """One reading of ``run_dir`` (``summary.json``, then its CSV files and its lock):
    ``load``'s tables, metadata, warnings and state of the run (``_run_state``)."""
    summary = read_summary(run_dir)
    shapes = (list(getattr(summary, "repeated", ()))
              + check_shapes(summary, run_dir / "summary.json"))
    metadata = summary.get("metadata") or {}
    valid, bad_cases = _valid_cases(summary, run_dir / "summary.json")
    path = run_dir / "summary.json"
    bad_cases = (shapes + bad_cases + _no_floor_lines(valid, path) + _warnings_lines(valid, path)
                 + _label_field_lines(valid, metadata, path) + _preset_lines(valid, metadata, path)
                 + _family_gap_lines(summary, valid, path))
    cases = pd.DataFrame(valid)
    label_cols: dict[str, dict[str, Any]] = {}  # case_id -> labels
    case_info: dict[str, dict[str, Any]] = {}
    for c in metadata.get("cases") or []:
        label_cols[c["case_id"]] = dict(c.get("labels") or {})
        case_info[c["case_id"]] = dict(transport=c.get("transport"),
                                       model=(c.get("model") or {}).get("name"))
    if cases.empty:
        cases = pd.DataFrame(columns=["case_id", "policy", "codec", "workload"])
    notes: dict[str, list[str]] = {stem: [] for stem in CSV_STEMS}
    steps = _read_steps(pd, run_dir / "steps.csv", valid, notes["steps"])
    requests = _read_rows(pd, run_dir / "requests.csv", CASE_KEYS + REQUEST_COLUMNS,
                          valid, notes["requests"])
    floor = _read_floor(pd, run_dir / "floor.csv", valid, notes["floor"])
    itl = _read_itl(pd, run_dir / "itl.csv", valid, notes["itl"])
    gone = _left_out_ids(summary, valid)
    # the rows of a case left out would pass for another's in the figures
    steps, requests, floor, itl = _without_cases([steps, requests, floor, itl], gone)
    tables, row_lines = _unlisted_rows(run_dir, dict(
        steps=steps, requests=requests, floor=floor, itl=itl,
        frontend=_read_frontend(pd, run_dir / "frontend.csv", notes["frontend"])), summary)
    steps, requests, floor, itl = (tables[k] for k in ("steps", "requests", "floor", "itl"))
    steps, lines = _impossible_steps(steps, run_dir / "steps.csv")
    row_lines += lines + _long_steps(steps, cases, run_dir / "steps.csv")
    floor, lines, floor_over = _surplus_floor(floor, cases, run_dir)
    row_lines += lines
    disagree, lines = _disagreeing_cases(steps, requests, floor, cases, run_dir,
                                         summary.get("problems") or [])
    row_lines += lines
    _refuse_none_left(cases, disagree, lines)
    # left out whole: its figures and its rows would tell two stories
    cases, steps, requests, floor, itl = _without_cases(
        [cases, steps, requests, floor, itl], disagree)
    read = dict(requests=requests, itl=itl)  # every row of the cases kept, for the counts
    requests, itl, lines, orphans = _impossible_latencies(requests, itl, cases, run_dir)
    row_lines += lines
    requests, itl, lines, surplus = _surplus_latency_rows(requests, itl, cases, run_dir)
    row_lines += lines
    cases, disagree, withheld_lines, lines = _checked_latencies(
        pd, read, requests, itl, orphans, cases, run_dir, surplus)
    row_lines += withheld_lines + lines
    _refuse_none_left(cases, disagree, lines)
    cases, steps, requests, floor, itl, read["requests"], read["itl"] = _without_cases(
        [cases, steps, requests, floor, itl, read["requests"], read["itl"]], disagree)
    frontend = _checked_frontend(pd, tables["frontend"], steps, cases, run_dir, row_lines)
    disagree = _frontend_disagreeing(frontend, cases, run_dir, row_lines)
    cases, steps, requests, floor, itl, frontend, read["requests"], read["itl"] = (
        _without_cases([cases, steps, requests, floor, itl, frontend, read["requests"],
                        read["itl"]], disagree))
    load_warnings = (bad_cases + row_lines
                     + _load_warnings(run_dir, notes, dict(
                         steps=_short_steps(steps, cases),
                         requests=_short_requests(read["requests"], cases),
                         floor=_short_floor(floor, cases, floor_over),
                         itl=_short_itl(read["itl"], read["requests"], cases),
                         frontend=_short_frontend(frontend, cases))))
    _add_itl_identity(itl, requests, steps)
    if "finish_reason" in requests:
        reason = requests["finish_reason"]
        requests["finish_reason"] = reason.astype(object).where(reason.notna(), "")
    _add_case_columns(cases, (steps, requests, itl, frontend), case_info, label_cols)
    for df in (cases, steps, requests, floor, itl, frontend):
        df.insert(0, "run_id", run_id)
    state = _run_state(summary, run_dir, cases)
    load_warnings[len(bad_cases):len(bad_cases)] = state.pop("lines")
    load_warnings[:0] = [state["status_warning"]] if state["status_warning"] else []
    return dict(cases=cases, steps=steps, requests=requests, floor=floor, itl=itl,
                frontend=frontend, metadata=metadata, warnings=load_warnings, **state)


def _add_itl_identity(itl, requests, steps) -> None:
    """Add to ``itl`` (in place) the identity columns (``CASE_KEYS``) it lacks, each
    row's case's, from ``requests`` (or ``steps`` where it has no row)."""
    if len(itl) and "case_id" in itl:
        ident = [k for k in CASE_KEYS if k != "case_id"]
        source = requests if len(requests) else steps
        known = source.drop_duplicates("case_id").set_index("case_id")
        for k in ident:
            if k in known.columns and k not in itl.columns:
                itl[k] = itl["case_id"].map(known[k])


def _read_steps(pd, path: Path, valid: list[dict[str, Any]], notes: list[str]):
    """``steps.csv`` (``path``) as ``_read_rows`` reads it, in the run's order
    (``_in_step_order``, by ``valid``'s cases)."""
    steps = _read_rows(pd, path, STEPS_HEADER, valid, notes)
    return _in_step_order(pd, steps, [c.get("case_id") for c in valid])


def _in_step_order(pd, steps, case_ids: list):
    """``steps`` (``steps.csv``'s rows) in the order the run writes them: each case's
    rows together, cases in ``case_ids``' order (the summary's; others after, in the
    order they first appear), steps by ``seq`` (a file sorted in a spreadsheet reads as
    written; the figures over a case's rows in order, its runner gaps, depend on it).
    As it is without those columns or already so."""
    if not len(steps) or not {"case_id", "seq"} <= set(steps.columns):
        return steps
    steps = steps.reset_index(drop=True)
    rank = {c: i for i, c in enumerate(case_ids)}
    first = {c: len(rank) + i for i, c in enumerate(dict.fromkeys(steps["case_id"]))}
    order = [rank.get(c, first[c]) for c in steps["case_id"]]
    seq = pd.to_numeric(steps["seq"], errors="coerce")
    key = pd.DataFrame({"case": order, "seq": seq})
    in_order = key.sort_values(["case", "seq"], kind="stable")
    if key.equals(in_order):
        return steps
    return steps.loc[in_order.index].reset_index(drop=True)


def _add_case_columns(cases, tables, case_info: dict[str, dict[str, Any]],
                      label_cols: dict[str, dict[str, Any]]) -> None:
    """Add, in place, each case's ``transport`` and ``model`` (``case_info``) and its
    ``arm`` (``cases``' where it names one, else the row's ``policy``, as
    ``Results.by_arm`` labels a case) to the per-step / per-request
    ``tables``, and its workload labels (``label_cols``, case id -> labels) to those
    and to ``cases``, where a table lacks the column."""
    labels = list(dict.fromkeys(k for lab in label_cols.values() for k in lab))
    arms = ({} if "arm" not in cases or "case_id" not in cases else
            {c: a for c, a in zip(cases["case_id"], cases["arm"]) if isinstance(a, str) and a})
    for df in tables:
        if "case_id" not in df:
            continue
        ids = df["case_id"]
        if "arm" not in df and "policy" in df:
            df["arm"] = [arms.get(c) or p for c, p in zip(ids, df["policy"])]
        for key in ("transport", "model"):
            if key not in df:
                df[key] = ids.map(lambda i, k=key: case_info.get(i, {}).get(k))
        for lab in labels:
            if lab not in df:
                df[lab] = ids.map(lambda i, k=lab: label_cols.get(i, {}).get(k))
    for lab in labels:
        if lab not in cases and "case_id" in cases:
            cases[lab] = cases["case_id"].map(lambda i, k=lab: label_cols.get(i, {}).get(k))


def _run_status(summary: dict[str, Any], path: Path) -> tuple[str, list[str]]:
    """The run's ``status`` (one of ``RUN_STATUSES``, else ``unknown``) and the warnings
    of an unknown status or of a complete run that names a running or failed case."""
    status = summary.get("status", "unknown")
    lines = []
    if status not in RUN_STATUSES and "status" in summary:
        lines.append(f"{path}: status {_shown(status)} is not one of "
                     f"{', '.join(RUN_STATUSES)} (read as unknown)")
        status = "unknown"
    if status == "complete":
        set_cases = [f"{key} {json.dumps(summary[key])[:60]}"
                     for key in ("running_case", "failed_case")
                     if summary.get(key) not in (None, "")]
        if set_cases:
            lines.append(f"{path}: status is complete, but it has {' and '.join(set_cases)} "
                         "(a complete run has neither; read as complete)")
    return status, lines


#: How a run that is not complete is said, by its status (``run_state``): the
#: report's note (``This run is incomplete: ...``) and ``load``'s ``status_line``.
RUN_STATE_WORDS = {"failed": "failed", "incomplete": "is incomplete"}


def run_state(status: str) -> str:
    """A run's ``status`` (not ``complete``) in words: ``is incomplete``, ``failed``,
    else ``has no known status`` (``RUN_STATE_WORDS``)."""
    return RUN_STATE_WORDS.get(status, "has no known status")


#: What the line of ``bench.py report`` on a run that is not complete says the report
#: covers (``incomplete_run_line``'s ``tail``), as the report's note says it.
REPORT_COVERS = "the report's figures cover the cases it finished"
#: ``REPORT_COVERS`` of a run none of whose cases finished, as the report's note says it
#: (``No case finished, so it has no figures, findings or case tables``).
REPORT_COVERS_NONE = "the report has no figures, findings or case tables of it"


def incomplete_run_line(name: str, status: str, detail: str, finished: int,
                        planned: int | None, tail: str) -> str:
    """The one line saying that a run (named ``name``: its folder as given) is not
    complete (``status``: ``incomplete``, ``failed``, or another, ``run_state``), why
    (``detail``: its problems, or what its files tell, as ``Results.status_detail``
    holds it; ``no reason recorded`` when empty), how many of its ``planned`` cases
    (``None``: its metadata lists none) ``finished``, and what follows for the command
    that reads it (``tail``): ``RUN: this run is incomplete: stopped without finishing
    its summary (...): no process holds its lock, ...; 1 of its 3 cases finished: the
    cases it did not finish are not timed`` (``bench.py microbench``,
    ``microbench.incomplete_run_text``), ``...; 1 of its 3 cases finished: the
    report's figures cover the cases it finished`` (``bench.py report``,
    ``REPORT_COVERS``; of a run none of whose cases finished, ``REPORT_COVERS_NONE``:
    ``...; 0 of its 2 cases finished: the report has no figures, findings or case
    tables of it``). One line (``errors.one_line``: a line break escaped)."""
    from ipc_bench.errors import one_line

    if tail == REPORT_COVERS and not finished:
        tail = REPORT_COVERS_NONE

    def cases(n: int) -> str:
        return f"{n:,} case" if n == 1 else f"{n:,} cases"

    count = (f"{finished:,} of its {cases(planned)} finished" if planned is not None
             else f"{cases(finished)} finished")
    return one_line(f"{name}: this run {run_state(status)}: "
                    f"{detail or 'no reason recorded'}; {count}: {tail}")


def status_line(run_dir: Path, status: str, detail: str, loaded: int,
                unfinished: int, stopped: bool = False) -> str:
    """The one line ``load`` warns with for a run (``run_dir``) whose ``status`` is
    not ``complete`` (``RunStatusWarning``, first of its ``Results.warnings``): its
    state in the report note's words (``run_state``), its ``status_detail`` (still
    running, killed, or its problems; ``no reason recorded`` when empty), the cases
    loaded of it (``loaded``), how many of those did not finish (``unfinished``), and
    whether the case it was running is not loaded at all (``stopped``:
    ``Results.stopped_case``): ``RUN: this run is incomplete: stopped without finishing
    its summary (...), 2 of 12 cases recorded, ...; 2 cases loaded, both finished; the
    case it was running is not loaded (Results.unfinished names it; Results.finished
    leaves it out)``."""
    if not loaded:
        held = "no case loaded"
    elif loaded == 1:
        held = "1 case loaded, " + ("not finished" if unfinished else "finished")
    elif not unfinished:
        held = f"{loaded} cases loaded, {'both' if loaded == 2 else 'all'} finished"
    else:
        held = f"{loaded} cases loaded, {loaded - unfinished} of them finished"
    if stopped:
        held += "; the case it was running is not loaded"
    n = unfinished + stopped
    if n:
        it = "it" if n == 1 else "them"
        held += f" (Results.unfinished names {it}; Results.finished leaves {it} out)"
    from ipc_bench.errors import one_line

    return (f"{one_line(str(run_dir))}: this run {run_state(status)}: "
            f"{detail or 'no reason recorded'}; {held}")


def complete_problems_line(run_dir: Path, problems: list[Any], pointer: bool = True,
                           metadata: dict[str, Any] | None = None) -> str:
    """The one line ``load`` warns with (``RunStatusWarning``) for a ``complete`` run
    (``run_dir``) that recorded ``problems`` as it ended, which cost it no result:
    ``RUN: this run is complete, every case measured and written; as it ended: cannot
    write to stdout: No space left on device (its terminal tables were not printed:
    cd CWD && python bench.py report /abs/RUN shows them)``; ``""`` when it recorded
    none. The command is ``report_pointer``'s, from the run's ``metadata`` (its
    ``summary.json``'s): its ``bench.py`` in the folder it ran in; ``RUN`` escaped to one
    line (``errors.one_line``: a newline in the folder's name as ``\\n``), as the
    other load warnings' lines are printed. A stdout that failed
    (``cannot write to stdout: ...``, ``console.stdout_failure``) is the one problem
    ``bench.py`` records in a complete run. ``pointer=False``: the line without ``RUN:
    `` and the command (the report's note, ``This run is complete, ...``)."""
    if not problems:
        return ""
    text = "; ".join(str(p) for p in problems)
    if any(str(p).startswith(STDOUT_PROBLEM) for p in problems):
        text += (" (its terminal tables were not printed" + (
            f": {report_pointer(run_dir, metadata)} shows them)" if pointer else ")"))
    line = f"this run is complete, every case measured and written; as it ended: {text}"
    if not pointer:
        return line
    from ipc_bench.errors import one_line

    return f"{one_line(str(run_dir))}: {line}"


def report_pointer(run_dir: Path, metadata: dict[str, Any] | None = None) -> str:
    """The command that renders the report of the run folder ``run_dir``, as its
    ``metadata`` (``summary.json``'s) recorded the run's own (``command_line``,
    ``cwd``), to type from any folder: ``cd CWD && python SCRIPT report /abs/RUN``
    (``errors.command_shell_line``: quoted where a shell needs it), ``SCRIPT`` the
    run's ``bench.py`` as it was typed there, the folder absolute (``os.path.abspath``,
    as ``run_dir`` is read from this process's folder). A run that recorded no folder
    (before it was recorded) or command line, or either not as a run writes it
    (``_METADATA_VALUES``): ``python bench.py report RUN``, the folder as given. Raises
    nothing."""
    from ipc_bench.errors import command_shell_line, path_word

    md = metadata if isinstance(metadata, dict) else {}
    argv, cwd = md.get("command_line"), md.get("cwd")
    if (_METADATA_VALUES["command_line"][0](argv) and argv
            and argv[0].endswith(".py") and _METADATA_VALUES["cwd"][0](cwd)):
        return command_shell_line([argv[0], "report", os.path.abspath(run_dir)], cwd)
    return command_shell_line(["bench.py", "report", path_word(str(run_dir))])


#: How a problem that cost a complete run nothing begins: its tables lost on a stdout
#: that failed (``console.stdout_failure``).
STDOUT_PROBLEM = "cannot write to stdout: "


def _stopped_case(summary: dict[str, Any], problems: list[Any],
                  run_dir: Path) -> dict[str, str] | None:
    """The case a run that is not complete was running (or failed in: ``failed_case``,
    else ``running_case``) and does not list, ``case_id`` and ``error`` (why, in
    words: still running as it was read, or the run stopped during it: killed or
    unable to write ``summary.json``, or as its problems say); ``None`` where there
    is none (``Results.stopped_case``)."""
    case = summary.get("failed_case") or summary.get("running_case")
    if not isinstance(case, str) or not case or case in _listed_ids(summary):
        return None
    if problems:
        why = "the run stopped during it, as its status says"
    else:
        why = {STILL_RUNNING: "still running as the run was read",
               KILLED: "the run stopped during it, killed or unable to write summary.json",
               }.get(unfinished_state(run_dir), "the run stopped during it, killed or "
                     "unable to write summary.json, or is still running")
    if (run_dir / PARTIAL_STEPS).is_file():
        why += f"; its rows in {PARTIAL_STEPS} are not loaded"
    return dict(case_id=case, error=why)


def _run_state(summary: dict[str, Any], run_dir: Path, cases) -> dict[str, Any]:
    """A run's ``status``, ``problems``, ``status_detail``, ``stopped_case`` and
    ``status_warning`` (``status_line``; ``""`` for a complete run) as ``Results``
    holds them, and the ``lines`` of ``_run_status``. ``cases``: its cases loaded."""
    status, lines = _run_status(summary, run_dir / "summary.json")
    problems = [without_full_stop(p) if isinstance(p, str) else p
                for p in summary.get("problems") or []]
    if status == "complete":
        return dict(status=status, problems=problems, status_detail="", stopped_case=None,
                    status_warning=complete_problems_line(
                        run_dir, problems, metadata=summary.get("metadata")), lines=lines)
    detail = (_problems_detail(summary, problems, run_dir)
              or unfinished_detail(summary, run_dir))
    stopped = _stopped_case(summary, problems, run_dir)
    cut = (sum(_not_complete(v) for v in cases["complete"])
           if "complete" in cases.columns else 0)
    return dict(status=status, problems=problems, status_detail=detail,
                stopped_case=stopped, status_warning=status_line(
                    run_dir, status, detail, len(cases), cut, stopped is not None),
                lines=lines)


def _tidy_types(pd, df):
    """``df`` with the flag columns as ``bool`` (an empty table's too, so that
    ``steps[steps["counted"]]`` selects rows, not columns; ``_PRESENT_IF_TRUE``'s so
    that ``cases[cases["emulated"]]`` does), the identity columns as strings and
    ``_NULLABLE_INT_COLUMNS`` with a gap as ``Int64``."""
    for col in _BOOL_COLUMNS:
        if col in df:
            df[col] = df[col].astype(bool)
    for col in _PRESENT_IF_TRUE:
        if col in df:
            df[col] = df[col].eq(True)
    for col in _STR_COLUMNS:
        if col in df:
            text, missing = df[col].astype(str), df[col].isna()
            # a missing value stays missing (pandas 2's astype(str) writes "nan")
            df[col] = text.mask(missing) if missing.any() else text
    _no_payload_in_process(df)
    for col in _NULLABLE_INT_COLUMNS:
        if col in df and df[col].isna().any():
            values = pd.to_numeric(df[col], errors="coerce")
            present = values.dropna()
            if values.isna().sum() == df[col].isna().sum() and (present % 1 == 0).all():
                df[col] = values.astype("Int64")
    return df


#: Per-step payload columns of ``Results.cases`` that a single-process case has as NaN,
#: as it has its wire columns (``TWO_PROCESS_WIRE_FIELDS``): its scheduler hands the
#: SchedulerOutput to its runner in memory, so no frame is serialized or sent between
#: them, and its ``summary.json``'s 0 is no frame measured (the tables show ``-``).
SINGLE_PROCESS_NO_PAYLOAD = ("sched_to_runner_payload_bytes_per_step",
                             "runner_to_sched_payload_bytes_per_step",
                             "decode_token_bytes_per_step", "prompt_chunk_bytes_per_step")


def _no_payload_in_process(df) -> None:
    """Blank, in place, the ``SINGLE_PROCESS_NO_PAYLOAD`` columns of the single-process
    rows (``transport`` ``harness.spec.INPROC``) of ``df`` (``Results.cases``; a table
    without a ``transport`` column is left as it is)."""
    from ipc_bench.harness.spec import INPROC

    if "transport" not in df.columns or df.empty:
        return
    inproc = df["transport"].eq(INPROC).fillna(False).to_numpy(dtype=bool)
    for col in SINGLE_PROCESS_NO_PAYLOAD:
        if col in df.columns and inproc.any():
            df[col] = df[col].astype(float).mask(inproc)


def workload_order(workload: str) -> tuple:
    """Sort key of a ``workload`` (``k=v,...``) in its natural order: each number in it
    by value (``num_running=4`` before ``num_running=16``, ``step_time_ms=2.5`` before
    ``step_time_ms=20.0``), the text between the numbers as text."""
    return tuple(float(t) if i % 2 else t
                 for i, t in enumerate(re.split(r"(\d+(?:\.\d+)?)", str(workload))))


def ordered_workloads(pd, tables: dict[str, Any]) -> dict[str, Any]:
    """``tables`` (name -> DataFrame) with each ``workload`` column an ordered pandas
    ``Categorical`` of every workload the tables hold, in ``workload_order`` (by
    size: ``num_running=4`` < ``num_running=16`` < ``num_running=256``), so that
    ``sort_values("workload")``, ``groupby("workload")`` and ``min()`` follow the
    sizes, not the text; the values stay the same strings (``== "num_running=4"``,
    ``.astype(str)``). A missing value (a blanked cell) stays missing; workloads alike
    in ``workload_order`` (``x=2``, ``x=2.0``) go by their text."""
    names = {w for df in tables.values() if "workload" in df.columns
             for w in df["workload"] if isinstance(w, str)}
    kind = pd.CategoricalDtype(sorted(names, key=lambda w: (workload_order(w), w)),
                               ordered=True)
    for df in tables.values():
        if "workload" in df.columns:
            df["workload"] = df["workload"].astype(object).astype(kind)
    return tables


def _used_workloads(df):
    """``df`` with its ``workload`` categories cut to those its rows hold (order kept):
    a table of some runs or cases (``Results.select``, ``Results.finished``) lists no
    workload it lacks (a ``value_counts`` or ``observed=False`` group of 0 rows)."""
    if df is not None and "workload" in getattr(df, "columns", ()) \
            and hasattr(df["workload"], "cat"):
        df = df.assign(workload=df["workload"].cat.remove_unused_categories())
    return df


def run_labels(run_dirs: list[Path]) -> list[str]:
    """Each run folder's ``run_id``, the label of its run in every table, figure and
    finding: its name, or, where another folder given has the same name, the shortest
    end of its path (resolved: a symlink followed) that no other folder's path ends
    with (``x/run`` and ``y/run`` for ``/r/x/run`` and ``/r/y/run``; ``a/x/run`` and
    ``b/x/run`` a level up). A label depends on the folders given, not on their
    order. Folders must be distinct (``check_distinct_runs``). A byte of a name that is
    not UTF-8, or a control character, is written as its escape (``bad\\xffname``,
    ``e\\x1bsc``: ``errors.one_line``), so that figures can draw the label and a
    terminal shows it as it is."""
    from ipc_bench.errors import one_line

    return [one_line(name) for name in run_names(run_dirs)]


def run_names(run_dirs: list[Path]) -> list[str]:
    """Each run folder's label as ``run_labels`` picks it (its name, or the shortest end
    of its path no other folder's ends with), its characters as the path has them: a
    control character as itself, not escaped (the report's file names clean these
    once, ``report.names.file_slug``: ``t\nx`` -> ``t_x``)."""
    parts = [run_dir.resolve().parts for run_dir in run_dirs]
    names = []
    for i, mine in enumerate(parts):
        others = [p for j, p in enumerate(parts) if j != i]
        k = 1
        while k < len(mine) and any(p[-k:] == mine[-k:] for p in others):
            k += 1
        names.append("/".join(mine[-k:]).lstrip("/") or "/")
    return names


def _defragmented(df):
    """``df`` with its columns in as few blocks as their types allow (a copy), or ``df``
    itself where they already are. Runs of different scenarios joined (``_concat``:
    columns one run has and another lacks) and retyped column by column
    (``_tidy_types``, ``ordered_workloads``) leave a block per column: ``Results.cases``
    of a pp, an overhead and a frontend run had 118, and every column added to it
    (``assign``, as the figures do) made pandas warn ``PerformanceWarning: DataFrame is
    highly fragmented``. A table is copied only where it has more blocks than it would
    joined, so a large ``steps`` table already whole is not copied."""
    import numpy as np

    blocks = getattr(getattr(df, "_mgr", None), "nblocks", None)
    if blocks is None:
        return df
    numpy_types = {t for t in df.dtypes if isinstance(t, np.dtype)}
    joined = len(numpy_types) + sum(not isinstance(t, np.dtype) for t in df.dtypes)
    return df.copy() if blocks > joined else df


#: Cases named, at most, besides the first, in the line that stands for warnings alike
#: but for their case (``grouped_warnings``).
GROUPED_CASES_SHOWN = 2

#: A case as a warning line names it: ``case 'ID'`` (its id as ``repr`` quotes it), or
#: its entry of ``summary.json`` (``cases[3]``, ``metadata.cases[3]``, as in ``key
#: cases[3].policy``).
_CASE_NAMED = re.compile(r"\bcase ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_CASE_ENTRY = re.compile(r"\b((?:metadata\.)?cases)\[\d+\]")


def _case_named(line: str):
    """The case warning line ``line`` names and the line less it: ``(NAME, REST)``, NAME
    the case's id as the line quotes it (``'num_running=1/send/msgpack#0'``), else its
    entry (``cases[3]``), REST the line with its id and entry masked; ``None`` where the
    line names no case, or two ids or two entries (a line about two cases)."""
    ids = set(_CASE_NAMED.findall(line))
    entries = [m.group(0) for m in _CASE_ENTRY.finditer(line)]
    if len(ids) > 1 or len(entries) > 1 or not (ids or entries):
        return None
    rest = _CASE_ENTRY.sub(lambda m: f"{m.group(1)}[\0]",
                           _CASE_NAMED.sub("case \0", line))
    return (next(iter(ids)) if ids else entries[0]), rest


def grouped_warnings(lines: list[str]) -> list[str]:
    """``lines`` (a run's loading warnings, ``Results.warnings``) as they are shown: lines
    that differ only by the case they name (``case 'ID'``, or its entry ``cases[N]`` /
    ``metadata.cases[N]``: ``_case_named``), as one hand edit repeated in every case
    gives, become one line, the first of them (which names its case) followed by ``; the
    same in N other cases (NAME, NAME and M more)`` (``1 other case (NAME)``: the first
    ``GROUPED_CASES_SHOWN`` of the other cases named, ids quoted as the lines quote
    them, so each case is named once), where the first of them stood; every other line, one
    naming no case, two cases, or a case no other line of its words names, is kept as
    it is, in its place. ``load`` issues its warnings so, and the report's notes on
    loading say them so."""
    groups: dict[str, tuple[str, list[str]]] = {}  # the line less its case -> lines
    out: list = []  # a line kept as it is, or a group's (first line, names)
    for line in lines:
        named = _case_named(line)
        if named is None:
            out.append(line)
            continue
        name, rest = named
        if rest not in groups:
            groups[rest] = (line, [])
            out.append(groups[rest])
        groups[rest][1].append(name)
    shown: list[str] = []
    for item in out:
        if isinstance(item, str):
            shown.append(item)
            continue
        first, names = item
        cases = list(dict.fromkeys(names))
        if len(cases) == 1:  # the same line again: kept, as it is
            shown += [first] * len(names)
            continue
        others = cases[1:]  # the first line names the first case
        more = len(others) - GROUPED_CASES_SHOWN
        named = ", ".join(others[:GROUPED_CASES_SHOWN]) + (
            f" and {more:,} more" if more > 0 else "")
        shown.append(f"{first}; the same in {len(others):,} other "
                     f"case{'s' if len(others) > 1 else ''} ({named})")
    return shown


def _issue_warnings(parts: dict) -> None:
    """Issue each run's loading warnings (``parts``: run id -> ``_load_one``'s dict) as
    warnings of ``load``'s caller: its ``status_warning`` (``RunStatusWarning``), then
    the rest as ``grouped_warnings`` shows them (``ResultsWarning``): one hand edit
    repeated in every case is one line, not one per case."""
    for part in parts.values():
        status = part["status_warning"]
        if status:
            warnings.warn(status, RunStatusWarning, stacklevel=3)
        for line in grouped_warnings([w for w in part["warnings"] if w != status]):
            warnings.warn(line, ResultsWarning, stacklevel=3)


def _given_paths(path_or_paths) -> list:
    """``load``'s argument as a non-empty list of paths (str or ``os.PathLike``; bytes
    decoded as ``os.fsdecode`` does). Raises ``ResultsError`` for anything else."""
    one = isinstance(path_or_paths, (str, bytes, os.PathLike))
    try:
        paths = [path_or_paths] if one else list(path_or_paths)
    except TypeError:
        raise ResultsError(f"{path_or_paths!r} is not a path or a list of paths") from None
    if not paths:
        raise ResultsError("no run folder given")
    for path in paths:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise ResultsError(f"{path!r} is not a path (a str, bytes or os.PathLike)")
    return [os.fsdecode(path) if isinstance(path, bytes) else path for path in paths]


def load(path_or_paths) -> Results:
    """Load one run folder, or several, into pandas DataFrames (see ``Results``).

    ``path_or_paths``: a path (str, bytes or ``os.PathLike``) or an iterable of paths (else
    ``ResultsError``). Each folder's name becomes its ``run_id``, or the shortest end of its path that tells it apart where two
    folders share a name (``x/run`` and ``y/run``: ``run_labels``). Raises ``ResultsError``
    (one line) when a folder is missing, is not a run folder (``not a complete run folder (no
    floor.csv)``; ``no itl.csv``; ``itl.csv``, ``steps.csv`` or ``requests.csv is empty``, 0
    bytes, where a case has ITL figures, steps or requests: ``_read_itl``, ``_read_rows``), is
    unreadable, or was written by an older or newer result format version (the message names
    the version). A file cut short (a last line cut mid-row, fewer ``steps.csv`` rows than the
    summary counts, fewer ``requests.csv`` rows than a case's ``num_requests``, fewer
    ``itl.csv`` rows than its requests' gaps: ``_short_steps``, ``_short_requests``,
    ``_short_itl``) loads what is valid and issues a one-line ``ResultsWarning`` naming the
    file and the counts (``Results.warnings``); so does a CSV file whose header is not its
    columns, or an empty one (none of its rows is loaded: ``header_problem`` says what is
    wrong), one whose header lacks measured columns (a run written before they existed: loaded,
    those columns NaN), and a row of any CSV file without the header's number of fields or with
    a value that is not a number in a numeric column (left out, so that every later table has
    numeric columns). A ``summary.json`` case that is not an object, whose known numeric fields
    hold something other than a number from 0 to ``MAX_CASE_VALUE`` (to 100 for the percentages
    of the machine's CPU time, and their sum: ``_percent_problem``), a single-process case with
    a scheduler <-> runner wire figure (``TWO_PROCESS_WIRE_FIELDS``), one whose
    ``num_running``, ``tp``, ``pp`` (fields or workload labels) are not whole numbers, or with
    a NaN or infinite field, is left out (with its rows of the CSV files, when it names its
    ``case_id``) and said in one ``ResultsWarning`` naming the case and the field; so is a case
    without ``policy`` or ``workload``, with an ``arm`` or ``codec`` no run writes
    (``known_arms``, ``known_codecs``), a ``_TEXT_CASE_FIELDS`` field not a text, a ``scenario``
    not the metadata's, a ``complete`` not true or false, or false in a run whose ``status`` is
    ``complete``, a case listed again under the same ``case_id`` or with the arm, workload,
    codec and repetition of an earlier one (the first is kept), and a ``status`` not one of
    ``RUN_STATUSES`` is said and read as ``unknown``, a ``no_floor`` neither true nor false or a
    ``warnings`` not a list said and read as absent (``_no_floor_lines``, ``_warnings_lines``);
    what ``check_shapes`` drops is said, and so is a key an object of ``summary.json``
    gives twice or more (``read_summary``: the last value read); lines that differ only by
    the case they name (one hand edit repeated in every case) are issued as one
    (``grouped_warnings``), ``Results.warnings`` keeping each. Rows of a case ``summary.json`` does not list are left
    out of every CSV table (one warning per case); so are ``steps.csv`` rows of a step their
    case has in an earlier row, and rows with a negative count, time or size (one warning per
    case and column), ``requests.csv`` and ``itl.csv`` rows with an impossible latency,
    ``tpot_s``, gap or step order (``_impossible_requests``, ``_impossible_itl``: one per case
    and kind, naming the requests; the figures over them withheld, ``_withheld_latencies``, the
    rest of the case loaded); a case with more ``steps.csv`` rows than its ``num_total_steps``
    is said too, as one with fewer is; a case whose figures are not those its counted rows give
    (``_step_problem``: sums, means, medians, wire bytes, the reply total
    ``r2s_wire_bytes_total``, runner gaps, ``HOP_FIGURES``), its own tokens and steps
    (``_rate_problem``) or, timed replays, its requests' tokens and ``wall_s``
    (``_wall_rate_problem``, ``_wall_problem``), its floor.csv rows (``_floor_problem``) or its
    requests.csv and itl.csv rows (request latencies: ``_latency_problem``), or a ``token_digest``
    not that of the cases the run's oracle compared it with (``_token_digest_problems``)
    is left out with its rows (one warning naming the first such figure and both values). ``ResultsError`` (one
    line) when ``cases`` is not a list, is missing or empty in a complete run, or no case is
    left; when a folder is given twice (``check_distinct_runs``) or is a copy of another one
    given (``check_copies``, ``check_copied_steps``). Every other case is loaded, those
    that did not finish included: ``Results.finished`` leaves them out. A run not
    ``complete`` (running, killed, failed), or complete with its tables lost on a full stdout, is the first warning,
    a ``RunStatusWarning`` (``status_line``, ``complete_problems_line``); one that ended as read is read again (``_load_one``)."""
    import pandas as pd

    run_dirs = [check_run_dir(path) for path in _given_paths(path_or_paths)]
    check_distinct_runs(run_dirs)
    run_paths: dict[str, Path] = dict(zip(run_labels(run_dirs), run_dirs))
    parts = {run_id: _load_one(pd, run_dir, run_id) for run_id, run_dir in run_paths.items()}
    check_copies({r: p["metadata"] for r, p in parts.items()}, run_paths)
    check_copied_steps({r: p["steps"] for r, p in parts.items()}, run_paths)
    _issue_warnings(parts)

    tables = ordered_workloads(pd, {
        key: _tidy_types(pd, _concat(pd, [p[key] for p in parts.values()]))
        for key in ("cases", "steps", "requests", "floor", "itl", "frontend")})
    tables = {key: _defragmented(df) for key, df in tables.items()}
    return Results(**tables,
                   metadata={r: p["metadata"] for r, p in parts.items()},
                   status={r: p["status"] for r, p in parts.items()},
                   problems={r: p["problems"] for r, p in parts.items()},
                   paths=run_paths,
                   status_detail={r: p["status_detail"] for r, p in parts.items()},
                   warnings={r: p["warnings"] for r, p in parts.items()},
                   status_warning={r: p["status_warning"] for r, p in parts.items()},
                   stopped_case={r: p["stopped_case"] for r, p in parts.items() if p["stopped_case"]})
