"""``docs/models-and-gpu.md``'s time plan adds up: each stage's estimate is what its own
figures give, and ``STAGE_WEIGHTS`` and the totals quoted in the docs and in
``scripts/gpu_check.py`` agree with it. Stage 3's row said 93 s where its 6 cases of 13 s
and 17 s of cold compile make 95 s, and the "about 475 s" total used the 93."""

from __future__ import annotations


from script_module import ROOT, load_script

gpu_check = load_script("gpu_check")
DOC = (ROOT / "docs" / "models-and-gpu.md").read_text()


def _rows() -> dict[str, tuple[str, str]]:
    """The time plan table's rows: stage cell -> (runs and cases, estimate)."""
    table = DOC.split("### The time plan", 1)[1].split("\nIn all about", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            rows[cells[1]] = (cells[2], cells[3])
    return rows


def test_stage_3s_row_is_its_own_arithmetic():
    runs, estimate = _rows()["3 llama-3.1-8b"]
    assert runs == "6 cases of 13 s (16 GB of weights, 40 steps), 17 s cold"
    assert 6 * 13 + 17 == 95
    assert estimate == "95 s"
    assert gpu_check.STAGE_WEIGHTS[3] == 95.0


def test_every_rows_estimate_is_its_weight_and_the_totals_agree():
    rows = _rows()
    weights = {int(stage.split()[0]): float(est.split()[0])
               for stage, (_, est) in rows.items() if not stage.startswith("1 ")}
    assert weights == gpu_check.STAGE_WEIGHTS == {
        0: 100.0, 2: 154.0, 3: 95.0, 4: 40.0, 5: 48.0, 6: 20.0}
    # 2 x (6 x 10 + 17), 4 x 10, 6 x 13 + 17, 2 x (4 + 3 + 8.48) + 17 (rounded), 2 x 10
    assert [2 * (6 * 10 + 17), 4 * 10, 6 * 13 + 17, round(2 * (4 + 3 + 8.48) + 17),
            2 * 10] == [154, 40, 95, 48, 20]
    total = 20 + sum(gpu_check.STAGE_WEIGHTS.values())
    assert total == 477
    text = " ".join(DOC.split())
    assert "In all about 477 s:" in text
    assert "weights 100, 154, 40, 95, 48, 20 after the smoke stage" in text
    assert text.count("about 477 s") == 3 and "475" not in text
    script = (ROOT / "scripts" / "gpu_check.py").read_text()
    assert "+ 154 + 40 + 95 + 48 + 20 = 477 s." in script and "475" not in script
    assert "about 477 s" in " ".join((ROOT / "scripts" / "device_check.sh").read_text().split())
