"""Result folders: one per run, plain files that pandas reads directly.

Layout of a run folder::

    summary.json   {"format_version", "status", "metadata", "cases": [...], "problems"}
    steps.csv      one row per step per case: case identity + SCHED_COLUMNS + RUNNER_COLUMNS
    requests.csv   one row per request per case
    floor.csv      one row per floor step per case: case_id, i, floor_step_ns
    itl.csv        timed replays: one row per inter-token gap: case_id, index, itl_s

Cases are appended to the CSV files as each one ends and ``summary.json`` is
rewritten atomically (write + rename) after every case, so an interrupted run
leaves a readable folder whose ``status`` says ``incomplete``.

Format history:
- 1: first version (``preemptions`` in requests.csv, ``num_preempted`` and
  ``num_resumed`` in steps.csv and ``num_preemptions`` in summary cases added within
  it, before any result was published).
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Optional

from ipc_bench.case import RUNNER_COLUMNS, SCHED_COLUMNS, CaseResult

FORMAT_VERSION = 1

CASE_KEYS = ("case_id", "scenario", "policy", "codec", "repetition", "workload")
REQUEST_COLUMNS = ("index", "req_id", "num_prompt_tokens", "num_output_tokens", "max_tokens",
                   "arrival_step", "first_scheduled_step", "first_token_step", "finish_step",
                   "finish_reason", "preemptions", "arrival_s", "ttft_s", "tpot_s", "e2e_s")


class ResultsError(ValueError):
    """A result folder is missing, unreadable or of an unknown format version."""


def default_run_dir(root: str | os.PathLike, scenario: str) -> Path:
    """``root/<scenario>-<UTC yyyymmdd-HHMMSS>``, suffixed ``-2``, ``-3``... if taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = Path(root) / f"{scenario}-{stamp}"
    path, k = base, 1
    while path.exists():
        k += 1
        path = Path(f"{base}-{k}")
    return path


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` via a temporary file and ``os.replace``."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(_json_safe(data), f, indent=1, allow_nan=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _csv(value: Any) -> Any:
    return "" if value is None else value


class RunWriter:
    """Writes one run folder incrementally (see the module docstring)."""

    def __init__(self, run_dir: str | os.PathLike, metadata: dict[str, Any]):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.run_dir, 0o755)
        self.metadata = metadata
        self.cases: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.status = "incomplete"
        self._new_file("steps.csv", CASE_KEYS + SCHED_COLUMNS + RUNNER_COLUMNS)
        self._new_file("requests.csv", CASE_KEYS + REQUEST_COLUMNS)
        self._new_file("floor.csv", ("case_id", "i", "floor_step_ns"))
        self._new_file("itl.csv", ("case_id", "index", "itl_s"))
        self._write_summary()

    def _new_file(self, name: str, header: tuple[str, ...]) -> None:
        with open(self.run_dir / name, "w", newline="") as f:
            csv.writer(f).writerow(header)

    def _append(self, name: str, rows) -> None:
        with open(self.run_dir / name, "a", newline="") as f:
            csv.writer(f).writerows(rows)
            f.flush()

    def add_case(self, result: CaseResult, summary: dict[str, Any]) -> None:
        """Append a finished (or failed) case's raw records and rewrite the summary."""
        spec = result.spec
        ident = (spec.case_id, spec.scenario, spec.policy, spec.codec, spec.repetition,
                 spec.workload_key)
        runner = result.runner_columns
        have_runner = bool(runner) and all(
            len(runner.get(k, ())) == len(result.sched_rows) for k in RUNNER_COLUMNS)
        empty = ("",) * len(RUNNER_COLUMNS)
        self._append("steps.csv", (
            ident + tuple(row) + (tuple(runner[k][i] for k in RUNNER_COLUMNS)
                                  if have_runner else empty)
            for i, row in enumerate(result.sched_rows)))
        self._append("requests.csv", (ident + tuple(_csv(r.get(k)) for k in REQUEST_COLUMNS)
                                      for r in result.requests))
        self._append("itl.csv", ((spec.case_id, r["index"], x)
                                 for r in result.requests for x in r.get("itl_s") or ()))
        self._append("floor.csv", ((spec.case_id, i, ns)
                                   for i, ns in enumerate(result.floor_step_ns)))
        self.cases.append(summary)
        self._write_summary()

    def finish(self, status: str, problems: Optional[list[str]] = None) -> None:
        """Set the run's final ``status`` (``complete``, ``failed``, ``incomplete``)."""
        self.status = status
        if problems:
            self.problems.extend(problems)
        self._write_summary()

    def _write_summary(self) -> None:
        write_json_atomic(self.run_dir / "summary.json", {
            "format_version": FORMAT_VERSION,
            "status": self.status,
            "metadata": self.metadata,
            "cases": self.cases,
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
        raise ResultsError(f"{path}: result format version {version!r} is not supported "
                           f"(this ipc-bench reads version {FORMAT_VERSION})")
    return data
