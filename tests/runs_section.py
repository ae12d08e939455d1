"""A multi-run report's Runs section and cached/send effect table, for their tests: the
words of the same-rows line, the lines a report of given runs holds, and loaded runs of
given tokens/s for the effect table."""

from __future__ import annotations

from types import SimpleNamespace

from ipc_bench import cli

#: The care note of runs that differ in ways that can change the numbers.
CARE = "> **Note:** The runs differ in ways that can change the numbers: compare with care."
#: ``blocks.SAME_ROWS_DIFFERENCES``'s words for policies a flag narrowed.
NARROWED = ("the policies their defaults ran (`--policies` not given, or given as "
            "what a run's flags run without it: `--aa` or "
            "`--async-scheduling` runs one policy alone, so the other policy's rows are one "
            "run's alone)")
#: Its words for ``--aa``.
AA = "whether A/A copies of the arms ran (`--aa`: their rows are one run's alone)"
#: Its words for ``--async-scheduling``.
ASYNC = "whether cached+async cases ran (`--async-scheduling`: their rows are one run's alone)"


def runs_lines(tmp_path, runs) -> list[str]:
    """The Runs section's line over its differences (or the care note) and its
    ``RUN against OTHER: ...`` lines, in a report of ``runs`` made under ``tmp_path``
    (the notes of the machine's load left out, which depend on what else it ran)."""
    out = tmp_path / "rep"
    assert cli.main(["report", *map(str, runs), "--no-figures", "--output", str(out)]) == 0
    lines = (out / "report.md").read_text().splitlines()
    section = lines[lines.index("## Runs") + 1:lines.index("## Side by side")]
    return [line for line in section
            if line.startswith(("The runs differ", "> **Note:** The runs differ")) or
            (line.startswith("- ") and " against " in line.split(":")[0])]


def effect_runs(tokens: dict, ids) -> SimpleNamespace:
    """Loaded runs, as ``report.blocks._effect_blocks`` reads them, of ``tokens``: per
    (workload, codec), per run id, the (send, cached) output tokens/s of each repetition,
    every case complete, each run's ``ci_method`` ``t``; ``ids``: the run ids in load
    order (the first the baseline)."""
    import pandas as pd

    rows = [dict(run_id=r, workload=w, policy=arm, codec=codec, repetition=i,
                 complete=True, output_tokens_per_s=v)
            for (w, codec), runs in tokens.items() for r, arms in runs.items()
            for arm, vals in zip(("send", "cached"), arms) for i, v in enumerate(vals)]
    return SimpleNamespace(run_ids=list(ids), cases=pd.DataFrame(rows),
                           metadata={r: {"ci_method": "t"} for r in ids})
