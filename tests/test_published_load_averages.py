"""results/published/README.md states each published run's recorded load averages (its
summary.json's ``metadata.load_avg``, 1, 5 and 15 minutes) and the range of its cases'
``machine_busy_pct`` as the files hold them, not a claim they do not support (it said
"nothing else running" of a run that started at 0.57, 2.35, 2.78); and README.md says
where its net-share figures come from and that they are one machine's."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "results" / "published"
RUNS = {"decode-steady": "decode-steady/decode-steady-r5",
        "azure-conv": "azure-conv/azure-conv-r5", "frontend": "frontend/frontend-r5",
        "tp-broadcast": "tp-broadcast/tp-broadcast-published", "pp": "pp/pp-published"}


def _flat(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text())


def _summary(name: str) -> dict:
    return json.loads((PUBLISHED / f"{RUNS[name]}.summary.json").read_text())


def test_each_runs_load_averages_are_its_summarys():
    said = ", ".join(f"{name} " + ", ".join(f"{v:.2f}" for v in
                                            _summary(name)["metadata"]["load_avg"])
                     for name in RUNS)
    assert said == ("decode-steady 0.57, 2.35, 2.78, azure-conv 1.03, 2.02, 2.61, frontend "
                    "1.08, 1.90, 2.55, tp-broadcast 2.82, 3.73, 4.02, pp 2.58, 3.58, 3.96")
    text = _flat(PUBLISHED / "README.md")
    assert ("load averages as it started (`metadata.load_avg`): decode-steady 0.57, 2.35, "
            "2.78; azure-conv 1.03, 2.02, 2.61; frontend 1.08, 1.90, 2.55; tp-broadcast "
            "2.82, 3.73, 4.02; pp 2.58, 3.58, 3.96") in text
    assert "nothing else running" not in text and "no other job running" not in text


def test_the_busy_ranges_are_the_cases():
    def span(name):
        values = [c["machine_busy_pct"] for c in _summary(name)["cases"]]
        return f"{min(values):.1f} to {max(values):.1f} %"
    assert [span(n) for n in ("decode-steady", "azure-conv", "frontend")] == [
        "45.5 to 53.8 %", "50.1 to 51.2 %", "50.0 to 59.3 %"]
    assert ("was 45.5 to 53.8 %, azure-conv's 50.1 to 51.2 % and frontend's 50.0 to "
            "59.3 %") in _flat(PUBLISHED / "README.md")


def test_the_readme_says_its_net_figures_cannot_be_checked_from_committed_files():
    cases = _summary("decode-steady")["cases"]
    assert not any("s2r_net_ns_median" in c for c in cases)
    assert all("s2r_build_encode_decode_ns_median" in c for c in cases)
    readme = _flat(ROOT / "README.md")
    assert ("send's policy work cost 94.0 µs, 7.62 % [6.46, 8.78] % with pickle (67.7 µs, "
            "6.25 % [5.03, 7.47] % with msgpack). These net figures are the published report's, "
            "recomputed when it was rendered from the run folder's `steps.csv`, which is "
            "not committed: the committed `summary.json` predates `s2r_net_ns_median`, so "
            "they cannot be checked from the committed files") in readme
    assert ("Every µs and share here is that one 2-core Intel Xeon's, not a figure another "
            "machine reproduces: `python bench.py --scenario decode-steady --repeat 5`, "
            "then `python bench.py report` on its folder, gives your machine's, which will "
            "differ.") in readme
    report = (PUBLISHED / "decode-steady" / "report.md").read_text()
    assert "policy work costs 94.02 µs per step more than cached's, 7.62 % of" in report
    assert _summary("decode-steady")["metadata"]["cpu_model"].startswith("Intel(R) Xeon(R)")
