"""scripts/variant_table.py without pyperf runs: which benchmarks variants share, and the
table's bytes and sums on given medians."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("variant_table",
                                              ROOT / "scripts" / "variant_table.py")
vt = importlib.util.module_from_spec(spec)
sys.modules["variant_table"] = vt
spec.loader.exec_module(vt)


def test_variants_that_cannot_differ_share_a_benchmark():
    assert vt.bench_key("build", 16, "send", "packed", "zipf") == \
        ("build", 16, "send", "pickle", "uniform")
    assert vt.bench_key("encode r2s", 16, "cached", "packed", "zipf") == \
        ("encode r2s", 16, "send", "pickle", "zipf")
    assert vt.bench_key("decode s2r", 16, "cached", "packed", "zipf") == \
        ("decode s2r", 16, "cached", "packed", "uniform")
    assert vt.bench_key("decode s2r", 16, "send", "packed", "zipf") == \
        ("decode s2r", 16, "send", "packed", "zipf")
    keys = {vt.bench_key(w, *v) for v in vt.variants(vt.BATCH_SIZES) for w in vt.WHATS}
    # slots and replicated build msgpack's Structs: their build is msgpack's
    assert vt.bench_key("build", 16, "send", "slots", "zipf") == \
        ("build", 16, "send", "msgpack", "uniform")
    assert len(keys) == 250


def test_table_rows_at_one_running_request(capsys):
    means = {vt.bench_name(vt.bench_key(w, 1, p, c, t)): 1e-6
             for p in vt.POLICIES for c in vt.CODECS for t in vt.TOKEN_IDS for w in vt.WHATS}
    rows = vt.selected_rows([1], vt.selection("send msgpack uniform,send packed uniform"))
    vt.print_table([1], means, rows=rows)
    vt.print_compact([1], {})
    lines = capsys.readouterr().out.strip().splitlines()
    # no frontend benchmark in means: its µs show '-', its bytes are computed
    assert lines[2:4] == [
        "| 1 | send | msgpack | uniform | 112 | 97 | 1.0 | 1.0 | 1.0 | 1.0 | 1.0 | 5.0 "
        "| 205 | - | 414 | 0.97 % |",
        "| 1 | send | packed | uniform | 250 | 381 | 1.0 | 1.0 | 1.0 | 1.0 | 1.0 | 5.0 "
        "| 205 | - | 836 | 2.51 % |"]
    # control plane: s2r + r2s + 205 frontend bytes; send saves (112 - 108) / 414
    assert lines[7:9] == ["| 1 | msgpack | uniform | 112 | 108 | 97 | - | - | 205 | - | 414 "
                          "| 410 | 0.97 % |",
                          "| 1 | msgpack | zipf | 112 | 108 | 97 | - | - | 205 | - | 414 "
                          "| 410 | 0.97 % |"]
    # slots: a 28-byte step under cached (nothing per request), 4 more per token id
    # under send; replicated: 18 bytes (step, no arrival, 8-byte digest); both reply
    # 4 bytes per token in 12
    assert lines[13:17] == [
        "| 1 | slots | uniform | 32 | 28 | 12 | - | - | 205 | - | 249 | 245 | 1.61 % |",
        "| 1 | slots | zipf | 32 | 28 | 12 | - | - | 205 | - | 249 | 245 | 1.61 % |",
        "| 1 | replicated | uniform | 18 | 18 | 12 | - | - | 205 | - | 235 | 235 | 0.00 % |",
        "| 1 | replicated | zipf | 18 | 18 | 12 | - | - | 205 | - | 235 | 235 | 0.00 % |"]


def test_frontend_message_of_a_known_step_has_exact_bytes():
    """One EngineCoreOutput per running request: 15 + A(n) + per output 9 + S(id) +
    A(ids) + ids, + the stats' 133 + U(running) + U(waiting)."""
    from ipc_bench.analysis.bytemodel import engine_outputs_bytes
    from ipc_bench.engine.outputs import build_engine_core_outputs
    from ipc_bench.wire.frontend import OutputsEncoder, outputs_decoder

    args, msg, frame = vt.frontend_step(1, "uniform")
    (out,) = msg.outputs
    assert len(out.request_id) == 39 and out.new_token_ids == [33821]  # a 3-byte id
    # 15 + 1 + (9 + 2 + 39 + 1 + 3) + (133 + 1 + 1)
    assert len(frame) == 205 == engine_outputs_bytes([out.request_id], [[33821]], (1, 0))
    assert msg.scheduler_stats.num_running_reqs == 1 and out.finish_reason is None
    assert outputs_decoder().decode(frame).outputs == msg.outputs
    # 16 running: Zipf ids are smaller (fewer 5-byte ids of 65,536 and above)
    assert len(vt.frontend_step(16, "uniform")[2]) == 1039
    assert len(vt.frontend_step(16, "zipf")[2]) == 1003
    # the same message whatever the other hop's policy and codec
    for policy, codec in (("cached", "pickle"), ("send", "slots"), ("cached", "replicated")):
        sched, plan, _, output, _ = vt.decode_step(16, policy, codec, "zipf")
        assert len(OutputsEncoder().encode(
            build_engine_core_outputs(sched, plan, output, []))) == 1003
    # the timed operations: build, encode_into the reused buffer, decode
    for what, kind in (("build", type(msg)), ("encode", bytearray), ("decode", type(msg))):
        fn, arg = vt._frontend_call(f"frontend {what}", 1, "uniform")
        assert isinstance(fn(arg), kind)


def test_frontend_columns_join_every_row(capsys):
    means = {vt.bench_name(vt.bench_key(w, 16, p, c, t)): 1e-6
             for p in vt.POLICIES for c in vt.CODECS for t in vt.TOKEN_IDS for w in vt.WHATS}
    means.update({vt.bench_name(vt.frontend_key(w, 16, t)): s
                  for t in vt.TOKEN_IDS for w, s in zip(vt.FRONTEND_WHATS, (2e-6, 1e-6, 3e-6))})
    assert vt.bench_name(vt.frontend_key("encode", 16, "zipf")) == "frontend encode zipf B=16"
    vt.print_compact([16], means)
    vt.print_table([16], means, vt.selected_rows([16], vt.selection("cached msgpack zipf")))
    lines = capsys.readouterr().out.strip().splitlines()
    # msgpack: 1,526 + 1,430 + 1,039 send, 1,446 + 1,430 + 1,039 cached; 80 / 3,995
    assert lines[2] == ("| 16 | msgpack | uniform | 1,526 | 1,446 | 1,430 | 5.0 | 5.0 | "
                        "1,039 | 6.0 | 3,995 | 3,915 | 2.00 % |")
    assert lines[3] == ("| 16 | msgpack | zipf | 1,494 | 1,446 | 1,394 | 5.0 | 5.0 | "
                        "1,003 | 6.0 | 3,891 | 3,843 | 1.23 % |")
    assert lines[-1] == ("| 16 | cached | msgpack | zipf | 1,446 | 1,394 | 1.0 | 1.0 | 1.0 | "
                         "1.0 | 1.0 | 5.0 | 1,003 | 6.0 | 3,843 | 1.23 % |")


def test_table_from_merges_runs(tmp_path, monkeypatch, capsys):
    """--table-from repeated: an old run without the frontend benchmarks and a run of
    only them give one table."""
    import subprocess

    import pyperf

    def suite(path, names):
        pyperf.BenchmarkSuite([pyperf.Benchmark([pyperf.Run(
            [1e-6, 1e-6], metadata={"name": n, "unit": "second", "loops": 1},
            collect_metadata=False)]) for n in names]).dump(str(path))

    suite(tmp_path / "old.json", {vt.bench_name(vt.bench_key(w, 1, p, "msgpack", "uniform"))
                                  for p in vt.POLICIES for w in vt.WHATS})
    suite(tmp_path / "fe.json", [vt.bench_name(vt.frontend_key(w, 1, "uniform"))
                                 for w in vt.FRONTEND_WHATS])
    argv = ["--batch-sizes", "1", "--compact", "--table-from", str(tmp_path / "old.json")]
    # the first as a command, the second in this process (``_vt_in_process``)
    runs = [subprocess.run([sys.executable, str(ROOT / "scripts" / "variant_table.py"),
                            *argv], capture_output=True, text=True, check=True),
            _vt_in_process(monkeypatch, capsys, *argv, "--table-from",
                           str(tmp_path / "fe.json"))]
    assert runs[1].returncode == 0, runs[1].stderr
    rows = [run.stdout.splitlines()[3] for run in runs]
    assert rows == ["| 1 | msgpack | uniform | 112 | 108 | 97 | 5.0 | 5.0 | 205 | - | 414 | "
                    "410 | 0.97 % |",
                    "| 1 | msgpack | uniform | 112 | 108 | 97 | 5.0 | 5.0 | 205 | 3.0 | 414 | "
                    "410 | 0.97 % |"]


def test_figure_is_a_png(tmp_path):
    means = {vt.bench_name(vt.bench_key(w, b, p, c, "uniform")): 1e-6
             for b in (1, 16) for p in vt.POLICIES for c in vt.CODECS for w in vt.WHATS}
    vt.plot([1, 16], means, str(tmp_path / "v.png"))
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stateful_codecs_time_consecutive_steps():
    """slots and replicated cannot repeat one step: each loop is the next whole step,
    and the case restarts (untimed) every RESTART steps."""
    for codec in ("slots", "replicated"):
        for what in ("encode s2r", "decode s2r", "encode r2s", "decode r2s"):
            call = vt._call(what, 4, "send", codec, "uniform")
            assert isinstance(call, vt._Stateful)
            call.RESTART = 2
            assert call.run(3) > 0 and call.left == 1
            assert call.sched.step == vt.STEPS  # restarted once: steps 0..59, then one


def _vt(*argv, timeout=60):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "variant_table.py"), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _vt_in_process(monkeypatch, capsys, *argv) -> subprocess.CompletedProcess:
    """``_vt(*argv)``'s result, the script run in this process as its ``__main__`` runs
    it (``script_main`` around ``main``; ``pyperf.Runner`` allows one a process: this
    call's is its own): a refusal's one line without a Python start (about 0.3 CPU-s)
    for each of the cases after a test's first, which runs the command."""
    import pyperf

    from ipc_bench.cli.console import script_main

    monkeypatch.setattr(sys, "argv", [str(ROOT / "scripts" / "variant_table.py"), *argv])
    monkeypatch.setattr(pyperf.Runner, "_created", set())
    capsys.readouterr()
    code = script_main("variant_table.py", vt.main, "the table",
                       "the -o or --append file and the --figure")
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(sys.argv, code, out, err)


PUBLISHED = str(ROOT / "results" / "published" / "variants" / "variants.json.gz")


def test_only_is_a_set_of_words_in_any_order():
    """The same words select a benchmark (named ``encode s2r packed send uniform B=4``)
    and a table row (``send packed uniform``), in any order; a variant's shared
    benchmarks (packed's build is pickle's) come with it."""
    alts = vt.selection("uniform send packed")
    names = {vt.bench_name(vt.bench_key(w, *v)) for v in vt.variants([4]) for w in vt.WHATS
             if vt.selected(alts, w, *v)}
    assert names == {"build pickle send uniform B=4", "encode s2r packed send uniform B=4",
                     "decode s2r packed send uniform B=4", "encode r2s pickle send uniform B=4",
                     "decode r2s pickle send uniform B=4"}
    assert vt.selected_rows([4, 16], vt.selection("send packed uniform")) == \
        [(4, "send", "packed", "uniform"), (16, "send", "packed", "uniform")]
    assert vt.selected_rows([4, 16], vt.selection("B=16 slots zipf cached,encode s2r B=4 "
                                                  "pickle zipf")) == \
        [(4, "send", "pickle", "zipf"), (4, "cached", "pickle", "zipf"),
         (16, "cached", "slots", "zipf")]


def test_table_from_the_published_gz_with_only_and_compact(monkeypatch, capsys):
    out = _vt("--table-from", PUBLISHED, "--only", "send packed zipf", "--compact",
              "--batch-sizes", "1,1024")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[2:] == [
        # then the frontend hop (not in this older run: its µs "-"), control plane
        # send and cached (s2r + r2s + frontend), send's saving over send's
        "| 1 | packed | zipf | 250 | 229 | 381 | 33.3 | 30.5 | 205 | - | 836 | 815 | 2.51 % |",
        "| 1,024 | packed | zipf | 112,668 | 82,968 | 56,306 | 4,070.0 | 2,550.0 | 54,616 | - "
        "| 223,590 | 193,890 | 13.28 % |"]
    out = _vt_in_process(monkeypatch, capsys, "--table-from", PUBLISHED, "--only",
                         "uniform packed send", "--batch-sizes", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[2:] == [
        "| 1 | send | packed | uniform | 250 | 381 | 3.5 | 8.2 | 14.4 | 4.9 | 6.2 | 37.2 | 205 | "
        "- | 836 | 2.51 % |"]


def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "brace.json").write_text("{\n")
    (tmp_path / "empty.json").write_text("{}\n")
    (tmp_path / "list.json").write_text("[]\n")
    os.mkfifo(tmp_path / "fifo")
    t = str(tmp_path)
    cases = [
        (["--table-from", f"{t}/missing.json"],
         f"argument --table-from: {t}/missing.json: No such file or directory"),
        (["--table-from", t], f"argument --table-from: {t}: not a regular file"),
        (["--table-from", f"{t}/fifo"], f"argument --table-from: {t}/fifo: not a regular file"),
        (["--table-from", f"{t}/brace.json"], f"argument --table-from: {t}/brace.json: not a "
         "pyperf benchmark suite (JSONDecodeError: Expecting property name enclosed in double "
         "quotes: line 2 column 1 (char 2))"),
        (["--table-from", f"{t}/empty.json"], f"argument --table-from: {t}/empty.json: not a "
         "pyperf benchmark suite (ValueError: file format version None not supported)"),
        (["--table-from", f"{t}/list.json"], f"argument --table-from: {t}/list.json: not a "
         "pyperf benchmark suite (AttributeError: 'list' object has no attribute 'get')"),
        (["--batch-sizes", "a"],
         "argument --batch-sizes: expected comma-separated whole numbers, got 'a'"),
        (["--batch-sizes", "0"], "argument --batch-sizes: must be at least 1, got 0"),
        (["--only", "send bogus"], "argument --only: unknown word 'bogus': use build, encode, "
         "decode, s2r, r2s, frontend, send, cached, msgpack, pickle, packed, slots, replicated, "
         "uniform, zipf, B=N"),
        (["--only", "B=7", "--batch-sizes", "1,16"],
         "--only 'B=7' selects nothing at --batch-sizes 1,16"),
        (["--only", "B=7", "--table-from", PUBLISHED],
         "--only 'B=7' selects nothing at --batch-sizes 1,16,64,256,1024"),
    ]
    for i, (argv, message) in enumerate(cases):
        out = _vt(*argv, timeout=20) if i == 0 else _vt_in_process(monkeypatch, capsys, *argv)
        assert (out.returncode, out.stderr, out.stdout) == \
            (2, f"variant_table.py: error: {message}\n", ""), argv


def test_help_documents_only():
    out = _vt("--help")
    assert out.returncode == 0
    assert "a set of words matched in any order" in " ".join(out.stdout.split())


def test_unwritable_outputs_and_misplaced_flags_are_refused_before_running(tmp_path,
                                                                          monkeypatch, capsys):
    """-o and --figure are checked before any benchmark runs, creating nothing;
    --compact and --figure need --table-from."""
    t = str(tmp_path)
    (tmp_path / "file").write_text("")
    cases = [
        (["-o", f"{t}/missing-folder/v.json"],
         f"argument -o: cannot write {t}/missing-folder/v.json: No such file or directory"),
        (["-o", f"{t}/file/v.json"],
         f"argument -o: cannot write {t}/file/v.json: {t}/file is not a folder"),
        (["--table-from", PUBLISHED, "--figure", f"{t}/missing-folder/x.png"],
         f"argument --figure: cannot write {t}/missing-folder/x.png: No such file or "
         "directory"),
        (["--table-from", PUBLISHED, "--figure", t],
         f"argument --figure: cannot write {t}: is a directory"),
        (["--compact"], "--compact applies to --table-from"),
        (["--figure", f"{t}/x.png"], "--figure applies to --table-from"),
    ]
    for i, (argv, message) in enumerate(cases):
        out = _vt(*argv, timeout=20) if i == 0 else _vt_in_process(monkeypatch, capsys, *argv)
        assert (out.returncode, out.stderr, out.stdout) == \
            (2, f"variant_table.py: error: {message}\n", ""), argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_only_refuses_empty_and_repeated_alternatives(monkeypatch, capsys):
    cases = [
        ("", "empty: give words, or leave --only out"),
        (" ", "empty: give words, or leave --only out"),
        (",", "expected comma-separated alternatives, got ',' (an item is empty)"),
        ("send,", "expected comma-separated alternatives, got 'send,' (an item is empty)"),
        ("send, ,packed",
         "expected comma-separated alternatives, got 'send, ,packed' (an item is empty)"),
        ("send,send", "send given more than once"),
        ("send packed,zipf,packed  send,zipf", "packed send, zipf given more than once"),
    ]
    for i, (only, message) in enumerate(cases):
        argv = ("--only", only, "--table-from", PUBLISHED)
        out = _vt(*argv, timeout=20) if i == 0 else _vt_in_process(monkeypatch, capsys, *argv)
        assert (out.returncode, out.stderr, out.stdout) == \
            (2, f"variant_table.py: error: argument --only: {message}\n", ""), only
