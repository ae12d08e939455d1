"""Result folders: one per run, plain files that pandas reads directly.

Layout of a run folder::

    summary.json       {"format_version", "status", "metadata", "cases": [...],
                        "comparisons": [...], "byte_model": [...], "problems",
                        "running_case", "failed_case"}
    messages/          captured frames of repetition 0 (``ipc_bench.analysis.capture``)
    steps.csv          one row per step per case: case identity + SCHED_COLUMNS +
                       RUNNER_COLUMNS (runner columns empty for a failed, interrupted
                       or streamed case: the runner's report never came or was not kept)
    requests.csv       one row per request per case
    floor.csv          one row per floor step per case: case_id, i, floor_step_ns
    itl.csv            timed replays: one row per inter-token gap: case_id, index, itl_s
    rss.csv            cases that sample memory (soak): case_id, t_s, then VmRSS and
                       RssAnon of each process: sched_rss_bytes, sched_anon_bytes,
                       runner_rss_bytes, runner_anon_bytes; sched_py_blocks: live
                       Python allocations of the scheduler (sys.getallocatedblocks)
    steps.partial.csv  only while a case runs (or after this process was SIGKILLed):
                       case identity + SCHED_COLUMNS of the running case so far

Writing: ``summary.json`` is rewritten atomically (write to a temporary file, fsync,
rename) at the start and end of every case, so it always parses; ``running_case``
names the case under way. While a case runs, its scheduler rows are appended to
``steps.partial.csv`` about once a second (``processes.StepFlusher``); when it ends,
however it ends (done, failed, SIGINT, SIGTERM), its rows go to ``steps.csv`` and the
partial file is removed. A streamed case (soak) appends straight to ``steps.csv``,
``requests.csv`` and ``rss.csv`` as it runs. So a run killed at any moment leaves a
folder that ``json.load`` and ``pandas.read_csv`` read, with ``status`` ``incomplete``;
only SIGKILL of this process loses anything: the rows of the last flush interval.
A row is never cut in half: appends run with SIGINT/SIGTERM deferred
(``ipc_bench.harness.signals``). Files are created 0644 and the folder 0755 whatever the
umask, so results are never world-writable.

Format history:
- 1: first version (``preemptions`` in requests.csv, ``num_preempted`` and
  ``num_resumed`` in steps.csv and ``num_preemptions`` in summary cases added within
  it, before any result was published; ``comparisons`` (paired statistics,
  ``ipc_bench.analysis.stats``), ``byte_model`` (``ipc_bench.analysis.bytemodel``) and ``messages/``
  likewise; so were ``rss.csv``, ``steps.partial.csv``, ``running_case``,
  ``failed_case`` and the cases' ``failed_step``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS, CaseResult, CaseSpec
from ipc_bench.harness.signals import deferred

FORMAT_VERSION = 1

CASE_KEYS = ("case_id", "scenario", "policy", "codec", "repetition", "workload")
RSS_COLUMNS = ("case_id", "t_s", "sched_rss_bytes", "sched_anon_bytes", "runner_rss_bytes",
               "runner_anon_bytes", "sched_py_blocks")
PARTIAL_STEPS = "steps.partial.csv"
FILE_MODE = 0o644
DIR_MODE = 0o755
REQUEST_COLUMNS = ("index", "req_id", "num_prompt_tokens", "num_output_tokens", "max_tokens",
                   "arrival_step", "first_scheduled_step", "first_token_step", "finish_step",
                   "finish_reason", "preemptions", "arrival_s", "ttft_s", "tpot_s", "e2e_s")


class ResultsError(ValueError):
    """A result folder is missing, unreadable or of an unknown format version."""


def default_run_dir(root: str | os.PathLike, scenario: str) -> Path:
    """Create and return ``root/<scenario>-<UTC yyyymmdd-HHMMSS>``, suffixed ``-2``,
    ``-3``... if taken. Creation is atomic (``mkdir`` without ``exist_ok``), so two runs
    started in the same second never share a folder. Raises ``OSError`` if ``root``
    cannot be written."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = Path(root) / f"{scenario}-{stamp}"
    Path(root).mkdir(parents=True, exist_ok=True)
    path, k = base, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            k += 1
            path = Path(f"{base}-{k}")


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def _open_new(path: Path, mode: str = "w"):
    """Open ``path`` for writing with mode 0644 whatever the umask (text, newline='')."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return open(fd, mode, newline="")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` via a temporary file and ``os.replace``."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with _open_new(tmp) as f:
        json.dump(_json_safe(data), f, indent=1, allow_nan=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _csv(value: Any) -> Any:
    return "" if value is None else value


def _ident(spec: CaseSpec) -> tuple:
    return (spec.case_id, spec.scenario, spec.policy, spec.codec, spec.repetition,
            spec.workload_key)


class RunWriter:
    """Writes one run folder incrementally (see the module docstring).

    Implements ``processes.CaseSink``. Raises ``OSError`` if the folder cannot be
    created or written.
    """

    def __init__(self, run_dir: str | os.PathLike, metadata: dict[str, Any]):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.run_dir, DIR_MODE)
        self.metadata = metadata
        self.cases: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.status = "incomplete"
        self.running_case: Optional[str] = None
        self.failed_case: Optional[str] = None
        self._rss_written: dict[str, int] = {}
        self.comparisons: list[dict[str, Any]] = []  # ipc_bench.analysis.stats.compare_cases
        self.byte_model: list[dict[str, Any]] = []   # ipc_bench.analysis.bytemodel.byte_model_report
        self._new_file("steps.csv", CASE_KEYS + SCHED_COLUMNS + RUNNER_COLUMNS)
        self._new_file("requests.csv", CASE_KEYS + REQUEST_COLUMNS)
        self._new_file("floor.csv", ("case_id", "i", "floor_step_ns"))
        self._new_file("itl.csv", ("case_id", "index", "itl_s"))
        self._write_summary()

    def _new_file(self, name: str, header: tuple[str, ...]) -> None:
        with _open_new(self.run_dir / name) as f:
            csv.writer(f).writerow(header)

    def _append(self, name: str, rows, header: Optional[tuple[str, ...]] = None) -> None:
        path = self.run_dir / name
        with deferred():
            new = header is not None and not path.exists()
            with _open_new(path, "a") as f:
                w = csv.writer(f)
                if new:
                    w.writerow(header)
                w.writerows(rows)

    # ------------------------------------------------------------------ while a case runs
    def begin_case(self, spec: CaseSpec) -> None:
        """Note ``spec`` as the running case (in ``summary.json``)."""
        self.running_case = spec.case_id
        self._remove_partial()
        self._write_summary()

    def partial_steps(self, spec: CaseSpec, rows: list[tuple]) -> None:
        """Append the running case's newest scheduler rows to ``steps.partial.csv``."""
        ident = _ident(spec)
        self._append(PARTIAL_STEPS, (ident + tuple(row) for row in rows),
                     header=CASE_KEYS + SCHED_COLUMNS)

    def stream_steps(self, spec: CaseSpec, rows: list[tuple]) -> None:
        """Append a streamed case's scheduler rows to ``steps.csv`` (no runner columns)."""
        ident = _ident(spec)
        empty = ("",) * len(RUNNER_COLUMNS)
        self._append("steps.csv", (ident + tuple(row) + empty for row in rows))

    def stream_requests(self, spec: CaseSpec, records: list[dict]) -> None:
        """Append per-request records (and their inter-token gaps)."""
        ident = _ident(spec)
        self._append("requests.csv", (ident + tuple(_csv(r.get(k)) for k in REQUEST_COLUMNS)
                                      for r in records))
        self._append("itl.csv", ((spec.case_id, r["index"], x)
                                 for r in records for x in r.get("itl_s") or ()))

    def stream_rss(self, spec: CaseSpec, samples: list[tuple]) -> None:
        """Append memory samples (``soak.SAMPLE_COLUMNS``) to ``rss.csv``."""
        self._append("rss.csv", ((spec.case_id, *(_csv(v) for v in s)) for s in samples),
                     header=RSS_COLUMNS)
        self._rss_written[spec.case_id] = self._rss_written.get(spec.case_id, 0) + len(samples)

    def _remove_partial(self) -> None:
        try:
            os.unlink(self.run_dir / PARTIAL_STEPS)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ when a case ends
    def add_case(self, result: CaseResult, summary: dict[str, Any]) -> None:
        """Append a finished, failed or interrupted case's records (what was not
        streamed already) and rewrite the summary."""
        spec = result.spec
        ident = _ident(spec)
        runner = result.runner_columns
        have_runner = bool(runner) and all(
            len(runner.get(k, ())) == len(result.sched_rows) for k in RUNNER_COLUMNS)
        empty = ("",) * len(RUNNER_COLUMNS)
        with deferred():
            self._append("steps.csv", (
                ident + tuple(row) + (tuple(runner[k][i] for k in RUNNER_COLUMNS)
                                      if have_runner else empty)
                for i, row in enumerate(result.sched_rows)))
            self.stream_requests(spec, result.requests)
            self._append("floor.csv", ((spec.case_id, i, ns)
                                       for i, ns in enumerate(result.floor_step_ns)))
            rss = result.rss_samples[self._rss_written.get(spec.case_id, 0):]
            if rss:
                self.stream_rss(spec, rss)
            self._remove_partial()
            self.cases.append(summary)
            if self.running_case == spec.case_id:
                self.running_case = None
            self._write_summary()

    def finish(self, status: str, problems: Optional[list[str]] = None,
               failed_case: Optional[str] = None) -> None:
        """Set the run's final ``status`` (``complete``, ``failed``, ``incomplete``);
        ``failed_case``: the case that ended the run, if one did."""
        self.status = status
        if problems:
            self.problems.extend(problems)
        if failed_case is not None:
            self.failed_case = failed_case
        self._write_summary()

    def _write_summary(self) -> None:
        with deferred():
            write_json_atomic(self.run_dir / "summary.json", {
                "format_version": FORMAT_VERSION,
                "status": self.status,
                "running_case": self.running_case,
                "failed_case": self.failed_case,
                "metadata": self.metadata,
                "cases": self.cases,
                "comparisons": self.comparisons,
                "byte_model": self.byte_model,
                "problems": self.problems,
            })


def read_summary(run_dir: str | os.PathLike) -> dict[str, Any]:
    """``summary.json`` of ``run_dir``; ``ResultsError`` if missing or of another format."""
    path = Path(run_dir) / "summary.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"no summary.json in {run_dir}") from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from None
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        if isinstance(version, int) and not isinstance(version, bool):
            age = "older" if version < FORMAT_VERSION else "newer"
            hint = ("re-run the scenario with this ipc-bench" if age == "older"
                    else "read it with the newer ipc-bench that wrote it")
            raise ResultsError(f"{path}: result format version {version} is {age} than the "
                               f"version this ipc-bench reads ({FORMAT_VERSION}); {hint}")
        raise ResultsError(f"{path}: result format version {version!r} is not supported "
                           f"(this ipc-bench reads version {FORMAT_VERSION})")
    return data


# ======================================================================================
# Loading run folders into pandas (analysis only: pandas is imported inside these
# functions, so a benchmark run never imports it).

#: Columns of ``steps.csv`` that hold 0/1 flags (loaded as ``bool``).
_BOOL_COLUMNS = ("warmup", "counted")
#: Columns loaded as strings whatever their content.
_STR_COLUMNS = ("run_id", "case_id", "scenario", "policy", "codec", "workload", "req_id",
                "finish_reason", "transport", "model")


@dataclass
class Results:
    """Tidy tables of one or more run folders (``load``). ``run_id`` (the folder's
    name) tells runs apart in every table; ``case_id`` tells cases apart in a run.

    ``cases`` (one row per case; the ``summary.json`` case entries):

    ============================================  =======  ==========================================
    column                                        unit     meaning
    ============================================  =======  ==========================================
    run_id, case_id, scenario, policy, codec      -        identity (``codec`` ``none``: single-process)
    transport, model, repetition, workload        -        ``workload`` = the labels as ``k=v,...``
    <labels> (e.g. num_running, trace)            -        the case's workload labels, one column each
    complete, error                               -        the case ran to its end / why not
    num_steps, num_warmup_steps, num_total_steps  steps    counted / warm-up / all steps
    wall_s                                        s        wall time of the scheduler loop
    num_requests, num_finished, num_rejected      reqs
    num_preemptions                               count    preemptions by recompute, whole case
    output_tokens                                 tokens   sampled in counted steps
    output_tokens_per_s                           tok/s    output_tokens / sum of counted step_ns;
                                                           timed replays: all output tokens / wall_s
                                                           (arrival-bound), the busy figure then in
                                                           busy_output_tokens_per_s
    trace_speedup                                 x        timed replays: arrivals at x real time
    ttft/tpot/itl/e2e_ms_mean/_p50/_p90/_p99      ms       timed replays: latency percentiles
    floor_output_tokens_per_s                     tok/s    same tokens over the floor's time
    step_to_floor_ratio                           ratio
    step_ns_mean, step_ns_median                  ns       one scheduler iteration
    *_payload_bytes_per_step, *_wire_bytes_*      bytes    per counted step, per direction
    decode_token_bytes_per_step,                  bytes    ``send`` only: new_token_ids bytes, split
    prompt_chunk_bytes_per_step                            into decode tokens / re-sent prompt chunks
    sched_*_ns_per_step, runner_*_ns_per_step     ns       mean per counted step of each phase
    build/encode/decode_ns_per_step               ns       both directions summed
    *_gc_collections_per_step                     1/step
    sched/runner_breakdown_coverage               ratio    share of the step its named parts cover
    step_ns_block_cv                              ratio    spread of 50-step mean step times
    machine_busy_pct, cpu_steal_pct               %        whole machine during the case
    warnings                                      -        list of pyperf-check-style lines
    token_digest                                  -        sha256 of every output id (oracle)
    ============================================  =======  ==========================================

    Fields added by later harness versions appear as further columns as they are.

    ``steps`` (one row per scheduler step per case, warm-up included):

    ========================================  =====  ==============================================
    column                                    unit   meaning
    ========================================  =====  ==============================================
    run_id, case_id, scenario, policy,        -      identity, as in ``cases``
    codec, transport, model, repetition,
    workload, <labels>
    seq                                       -      exchange number within the case, from 0
    step                                      -      logical scheduler step
    warmup, counted                           bool   warm-up step / counted in the case's figures
    num_reqs                                  reqs   requests scheduled this step (running)
    num_new_reqs                              reqs   of which scheduled for the first time
    num_scheduled_tokens, num_output_tokens   tokens scheduled / sampled this step
    num_finished                              reqs   finished this step
    num_preempted, num_resumed                reqs   preempted (by recompute) / resumed this step
    sched_ns, build_ns, encode_ns, send_ns,   ns     scheduler phases: schedule(), building the
    wait_ns, decode_ns, update_ns                    SchedulerOutput, encode, socket send, wait for
                                                     the reply, decode the reply, update_from_output
    step_ns                                   ns     whole iteration (sum of the phases above)
    sched_cpu_ns                              ns     scheduler thread CPU time over the step
    s2r_payload_bytes, r2s_payload_bytes      bytes  SchedulerOutput / ModelRunnerOutput frame
    gc_collections                            count  scheduler-process collections in the step
    t_end_ns                                  ns     end of the step since the case's loop began
    runner_idle_ns                            ns     runner waiting for the SchedulerOutput
    runner_decode_ns, runner_update_ns,       ns     runner phases: decode, update_states,
    runner_prepare_ns, runner_forward_ns,            prepare_inputs, forward + sampling,
    runner_writeback_ns, runner_build_ns,            write_back, build_output, encode the reply,
    runner_encode_ns, runner_send_ns                 socket send
    runner_gc_collections                     count  runner-process collections in the step
    runner_t0_ns                              ns     start of the runner's wait, since its loop began
    ========================================  =====  ==============================================

    Integer columns are ``int64``; a runner column is ``float64`` with NaN where a
    failed case has no runner report. Single-process cases (codec ``none``) have 0
    bytes and 0 runner idle/decode/encode/send.

    ``requests`` (one row per request per case): identity columns as in ``steps``,
    then ``index``, ``req_id``, ``num_prompt_tokens``, ``num_output_tokens``,
    ``max_tokens`` (tokens), ``arrival_step``, ``first_scheduled_step``,
    ``first_token_step``, ``finish_step`` (logical steps, -1: never),
    ``finish_reason`` (``""`` while running), ``preemptions`` (count); timed replays
    fill ``arrival_s`` (intended arrival, s after the case's start), ``ttft_s``,
    ``tpot_s`` and ``e2e_s`` (s; NaN elsewhere, and ``tpot_s`` for one-token requests).

    ``floor`` (one row per floor exchange): ``run_id``, ``case_id``, ``i`` (index of
    the replayed counted step), ``floor_step_ns`` (ns).

    ``itl`` (timed replays: one row per gap between two consecutive output tokens of
    a request; empty otherwise): identity columns as in ``steps``, ``index`` (the
    request), ``itl_s`` (s).

    ``metadata``: ``run_id`` -> the run's ``summary.json`` metadata (environment, full
    configuration of every case); ``status``: ``run_id`` -> ``complete`` /
    ``incomplete`` / ``failed``; ``problems``: ``run_id`` -> list of lines;
    ``paths``: ``run_id`` -> run folder.
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

    @property
    def run_ids(self) -> list[str]:
        """Run ids in load order."""
        return list(self.metadata)

    def select(self, run_id: str) -> "Results":
        """The tables of one run; ``KeyError`` if ``run_id`` is not loaded."""
        if run_id not in self.metadata:
            raise KeyError(f"no run {run_id!r}; loaded: {', '.join(self.metadata)}")

        def pick(df):
            return df[df["run_id"] == run_id].reset_index(drop=True)

        return Results(cases=pick(self.cases), steps=pick(self.steps),
                       requests=pick(self.requests), floor=pick(self.floor),
                       itl=pick(self.itl), metadata={run_id: self.metadata[run_id]},
                       status={run_id: self.status[run_id]},
                       problems={run_id: self.problems[run_id]},
                       paths={run_id: self.paths[run_id]})


def check_run_dir(path: str | os.PathLike) -> Path:
    """``Path(path)`` if it is a run folder, else ``ResultsError`` (one line)."""
    p = Path(path)
    if not p.exists():
        raise ResultsError(f"{p}: no such folder")
    if not p.is_dir():
        raise ResultsError(f"{p}: not a folder")
    if not (p / "summary.json").is_file():
        raise ResultsError(f"{p}: not a run folder (no summary.json)")
    return p


def _read_csv(pd, path: Path, columns: tuple[str, ...]):
    if not path.is_file():
        raise ResultsError(f"{path.parent}: not a complete run folder (no {path.name})")
    try:
        df = pd.read_csv(path, keep_default_na=True, low_memory=False)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame(columns=list(columns))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from None
    return df


def _load_one(pd, run_dir: Path, run_id: str) -> dict[str, Any]:
    summary = read_summary(run_dir)
    metadata = summary.get("metadata") or {}
    cases = pd.DataFrame(summary.get("cases") or [])
    label_cols: dict[str, dict[str, Any]] = {}  # case_id -> labels
    case_info: dict[str, dict[str, Any]] = {}
    for c in metadata.get("cases") or []:
        label_cols[c["case_id"]] = dict(c.get("labels") or {})
        case_info[c["case_id"]] = dict(transport=c.get("transport"),
                                       model=(c.get("model") or {}).get("name"))
    labels = list(dict.fromkeys(k for lab in label_cols.values() for k in lab))
    if cases.empty:
        cases = pd.DataFrame(columns=["case_id", "policy", "codec", "workload"])
    steps = _read_csv(pd, run_dir / "steps.csv", CASE_KEYS + SCHED_COLUMNS + RUNNER_COLUMNS)
    requests = _read_csv(pd, run_dir / "requests.csv", CASE_KEYS + REQUEST_COLUMNS)
    floor = _read_csv(pd, run_dir / "floor.csv", ("case_id", "i", "floor_step_ns"))
    itl_columns = ("case_id", "index", "itl_s")
    itl = (_read_csv(pd, run_dir / "itl.csv", itl_columns) if (run_dir / "itl.csv").is_file()
           else pd.DataFrame(columns=list(itl_columns)))
    if len(itl) and "case_id" in itl:
        ident = [k for k in CASE_KEYS if k != "case_id"]
        source = requests if len(requests) else steps
        known = source.drop_duplicates("case_id").set_index("case_id")
        for k in ident:
            if k in known.columns and k not in itl.columns:
                itl[k] = itl["case_id"].map(known[k])
    if "finish_reason" in requests:
        reason = requests["finish_reason"]
        requests["finish_reason"] = reason.astype(object).where(reason.notna(), "")
    for df in (steps, requests, itl):
        if "case_id" not in df:
            continue
        ids = df["case_id"]
        for key in ("transport", "model"):
            if key not in df:
                df[key] = ids.map(lambda i, k=key: case_info.get(i, {}).get(k))
        for lab in labels:
            if lab not in df:
                df[lab] = ids.map(lambda i, k=lab: label_cols.get(i, {}).get(k))
    for lab in labels:
        if lab not in cases and "case_id" in cases:
            cases[lab] = cases["case_id"].map(lambda i, k=lab: label_cols.get(i, {}).get(k))
    for df in (cases, steps, requests, floor, itl):
        df.insert(0, "run_id", run_id)
    return dict(cases=cases, steps=steps, requests=requests, floor=floor, itl=itl,
                metadata=metadata, status=summary.get("status", "unknown"),
                problems=list(summary.get("problems") or []))


def _tidy_types(pd, df):
    for col in _BOOL_COLUMNS:
        if col in df and len(df):
            df[col] = df[col].astype(bool)
    for col in _STR_COLUMNS:
        if col in df:
            df[col] = df[col].astype(str)
    return df


def load(path_or_paths) -> Results:
    """Load one run folder, or several, into pandas DataFrames (see ``Results``).

    ``path_or_paths``: a path (str or ``os.PathLike``) or an iterable of paths. Each
    folder's name becomes its ``run_id`` (``name#2``, ``name#3``... when two folders
    share a name). Raises ``ResultsError`` (one line) when a folder is missing, is not
    a run folder, is unreadable, or was written by an older or newer result format
    version (the message names the version).
    """
    import pandas as pd

    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [path_or_paths]
    else:
        paths = list(path_or_paths)
    if not paths:
        raise ResultsError("no run folder given")
    parts: dict[str, dict[str, Any]] = {}
    run_paths: dict[str, Path] = {}
    for path in paths:
        run_dir = check_run_dir(path)
        run_id, k = run_dir.resolve().name, 1
        while run_id in parts:
            k += 1
            run_id = f"{run_dir.resolve().name}#{k}"
        parts[run_id] = _load_one(pd, run_dir, run_id)
        run_paths[run_id] = run_dir

    def cat(key: str):
        frames = [p[key] for p in parts.values()]
        df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return _tidy_types(pd, df.reset_index(drop=True))

    return Results(cases=cat("cases"), steps=cat("steps"), requests=cat("requests"),
                   floor=cat("floor"), itl=cat("itl"),
                   metadata={r: p["metadata"] for r, p in parts.items()},
                   status={r: p["status"] for r, p in parts.items()},
                   problems={r: p["problems"] for r, p in parts.items()},
                   paths=run_paths)
