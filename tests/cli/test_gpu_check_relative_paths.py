"""``scripts/gpu_check.py`` checks a relative ``--output`` and ``--trace`` against the
folder it was started in, but runs each stage's ``bench.py`` from the repository root:
a relative ``--output`` checked in one folder made its stage folders in another. The
stages get both as absolute paths of the folder the script was started in."""

from __future__ import annotations

from script_module import load_script


def test_relative_output_and_trace_are_read_against_the_starting_folder(
        tmp_path, monkeypatch):
    gpu_check = load_script("gpu_check")
    seen = {}

    def fake_check(args, out):
        seen.update(output=args.output, trace=args.trace, out=out)
        return 0

    monkeypatch.setattr(gpu_check, "_check", fake_check)
    here = tmp_path / "start"
    here.mkdir()
    trace = here / "conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,374,44\n")
    monkeypatch.chdir(here)
    assert gpu_check.main(["--output", "sub/out", "--trace", "conv.csv"]) == 0
    assert seen == {"output": str(here / "sub" / "out"), "trace": str(trace),
                    "out": here / "sub" / "out"}
