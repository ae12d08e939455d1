"""Token-id distributions: Zipf thresholds, the hash's inverse CDF, histogram files,
prompts, and equal token streams under both policies with Zipf ids."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest

from ipc_bench import cli
from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.models import NullModel
from ipc_bench.engine.token_ids import HASH_BITS, token_id_distribution
from ipc_bench.engine.workloads import SteadyDecodeWorkload, make_prompt

from engine.test_models import _splitmix_reference, drive

V = 128_256
#: The four ids of test_null_model_samples_zipf_ids_through_the_documented_hash.
ZIPF_SAMPLED = [348, 30, 2_244, 1_673]
#: make_prompt(4, 2, 6, 128256, "zipf").
ZIPF_PROMPT = [152, 52, 433, 5_345, 10_986, 1_357]


def test_zipf_masses_are_one_over_rank_normalised():
    d = token_id_distribution("zipf", 5)
    harmonic = 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5
    for k in range(5):
        assert d.mass(k, k + 1) == pytest.approx(1 / (k + 1) / harmonic, abs=2**-52)
    assert int(d.thresholds[-1]) == 2**HASH_BITS
    assert d.mass(0, 5) == 1.0


def test_zipf_width_shares_in_a_128256_vocabulary():
    d = token_id_distribution("zipf", V)
    shares = [round(d.mass(lo, hi), 4) for lo, hi in
              ((0, 128), (128, 256), (256, 65_536), (65_536, V))]
    assert shares == [0.4403, 0.056, 0.4492, 0.0544]


def test_hash_maps_through_the_inverse_cdf():
    d = token_id_distribution("zipf", V)
    h = np.array([0, 2**11 - 1, 2**63, 2**64 - 1], dtype=np.uint64)
    assert d.from_hash(h).tolist() == [0, 0, 267, V - 1]
    # uniform keeps the modulo reduction
    u = token_id_distribution("uniform", V)
    h = np.array([5, V + 7, 2**64 - 1], dtype=np.uint64)
    assert u.from_hash(h).tolist() == [5, 7, (2**64 - 1) % V]


def _zipf_reference(h: int, vocab_size: int) -> int:
    """The documented inverse CDF in plain Python: the first id ``k`` whose threshold
    ``floor(2**53 * (1 + 1/2 + ... + 1/(k+1)) / H)`` exceeds ``h >> 11``."""
    total = sum(1 / k for k in range(1, vocab_size + 1))
    u, acc = h >> (64 - HASH_BITS), 0.0
    for k in range(vocab_size):
        acc += 1 / (k + 1)
        if k == vocab_size - 1 or math.floor(acc * (2**HASH_BITS / total)) > u:
            return k
    raise AssertionError("unreachable")


def test_null_model_samples_zipf_ids_through_the_documented_hash():
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, V, size=(4, 16)).astype(np.int32)
    rows, positions = np.array([2, 0, 3, 1]), np.array([3, 9, 0, 15])
    hashes = _splitmix_reference(tokens, rows.tolist(), positions.tolist(), 4, 1, 2**64)
    uniform = NullModel(ModelConfig(seed=1)).sample(tokens, rows, positions)
    zipf = NullModel(ModelConfig(seed=1, token_ids="zipf")).sample(tokens, rows, positions)
    assert uniform.tolist() == [h % V for h in hashes]
    assert zipf.tolist() == [_zipf_reference(h, V) for h in hashes]
    assert zipf.tolist() == ZIPF_SAMPLED


def test_both_policies_give_the_same_tokens_with_zipf_ids():
    sched = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=256,
                            num_blocks=64)
    cfg = ModelConfig(seed=3, token_ids="zipf")

    def workload():
        return SteadyDecodeWorkload(3, seed=7, vocab_size=V, prompt_len_range=(40, 90),
                                    output_len_range=(5, 30), token_ids="zipf")

    digests = {drive(sched, cfg, policy, codec, 80, workload())[0]
               for policy in ("send", "cached") for codec in ("msgpack", "pickle")}
    uniform = drive(sched, ModelConfig(seed=3), "send", "msgpack", 80,
                    SteadyDecodeWorkload(3, seed=7, vocab_size=V, prompt_len_range=(40, 90),
                                         output_len_range=(5, 30)))[0]
    assert len(digests) == 1 and digests != {uniform}


def test_prompts():
    uniform = make_prompt(4, 2, 6, V)
    rng = np.random.default_rng([4, 2, 0x9E])
    assert uniform == rng.integers(0, V, size=6).tolist()  # as before the option existed
    rng = np.random.default_rng([4, 2, 0x9E])
    u = rng.integers(0, 2**HASH_BITS, size=6, dtype=np.uint64).tolist()
    zipf = make_prompt(4, 2, 6, V, "zipf")
    assert zipf == [_zipf_reference(x << (64 - HASH_BITS), V) for x in u]
    assert zipf == ZIPF_PROMPT


def _hist(tmp_path, text):
    path = tmp_path / "hist.csv"
    path.write_text(text)
    return f"hist:{path}"


def test_histogram_file(tmp_path):
    spec = _hist(tmp_path, "# from a corpus\ntoken_id,count\n279,6\n13,3\n\n70000,1\n")
    d = token_id_distribution(spec, V)
    masses = [d.mass(279, 280), d.mass(13, 14), d.mass(70_000, 70_001)]
    assert masses == pytest.approx([0.6, 0.3, 0.1], abs=2**-52)
    assert d.mass(0, 13) == 0.0
    drawn = set(make_prompt(0, 0, 2_000, V, spec))
    assert drawn == {13, 279, 70_000}


@pytest.mark.parametrize("text,error", [
    ("1,2\nx,3\n", "line 2: expected 'token_id,count' (two integers), got 'x,3'"),
    ("1,2,3\n", "line 1: expected 'token_id,count' (two integers), got '1,2,3'"),
    ("128256,1\n", "line 1: token id 128256 outside the vocabulary [0, 128,256)"),
    ("5,1\n5,2\n", "line 2: token id 5 already listed on line 1"),
    ("5,-1\n", "line 1: count -1 is negative"),
    # ASCII digits only, as a trace's counts (was: '١,5' read as id 1, '²,5' a ValueError)
    ("\u0661,5\n", "line 1: expected 'token_id,count' (two integers), got '\u0661,5'"),
    ("7,\u0665\n", "line 1: expected 'token_id,count' (two integers), got '7,\u0665'"),
    ("\u00b2,5\n", "line 1: expected 'token_id,count' (two integers), got '\u00b2,5'"),
    ("1_0,5\n", "line 1: expected 'token_id,count' (two integers), got '1_0,5'"),
    # more digits than int() converts (4,300) (was: 'Exceeds the limit (4300 digits) ...;
    # use sys.set_int_max_str_digits() to increase the limit')
    ("1," + "9" * 5000 + "\n", "line 1: count " + "9" * 40 + "... (5,000 characters) "
                              "is above the largest allowed, 2**63 - 1 = "
                              "9,223,372,036,854,775,807"),
    ("9" * 5000 + ",1\n", "line 1: token id " + "9" * 40 + "... (5,000 characters) "
                          "outside the vocabulary [0, 128,256)"),
    ("1,-" + "9" * 50 + "\n", "line 1: count -" + "9" * 39 + "... (51 characters) is "
                             "negative"),
    ("0" * 30 + "7,1\n7,2\n", "line 2: token id 7 already listed on line 1"),
])
def test_bad_histogram_lines_are_one_line_errors(tmp_path, text, error):
    spec = _hist(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        token_id_distribution(spec, V)
    assert str(exc.value) == f"token-id histogram {tmp_path / 'hist.csv'} {error}"


def test_bad_histogram_files(tmp_path):
    with pytest.raises(ConfigError, match=r"^token-id histogram .* has no positive count$"):
        token_id_distribution(_hist(tmp_path, "token_id,count\n3,0\n"), V)
    missing = tmp_path / "none.csv"
    with pytest.raises(ConfigError) as exc:
        token_id_distribution(f"hist:{missing}", V)
    assert str(exc.value) == f"cannot read token-id histogram {missing}: No such file or directory"


@pytest.mark.parametrize("data,where", [
    (b"token_id,count\n1,5\n2,\xff3\n", "line 3: not UTF-8 text (byte 3 of the line)"),
    (b"\xfe1,2\n", "line 1: not UTF-8 text (byte 1 of the line)"),
    (b"1,2\r\n3,\xc3", "line 2: not UTF-8 text (byte 3 of the line)"),  # cut mid-character
])
def test_a_histogram_that_is_not_utf8_names_its_line_as_a_trace_does(tmp_path, data, where):
    path = tmp_path / "hist.csv"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as exc:
        token_id_distribution(f"hist:{path}", V)
    assert str(exc.value) == f"token-id histogram {path} {where}"


@pytest.mark.parametrize("argv,message", [
    (["--token-ids", "zipfian"], "unknown token-id distribution 'zipfian' (--token-ids); "
     "choose from uniform, zipf, hist:PATH"),
    (["--token-ids", ""], "unknown token-id distribution '' (--token-ids); "
     "choose from uniform, zipf, hist:PATH"),
    (["--token-ids", "hist:"], "--token-ids hist: needs the histogram file's path after "
     "it (hist:PATH)"),
    (["--token-ids", "zipf", "--model", "torch", "--model-preset", "tiny"],
     "--token-ids zipf applies to the null, fixed-step, emulated models (the torch model "
     "samples its own ids)"),
])
def test_cli_refuses_bad_token_ids(argv, message, capsys):
    code = cli.main(["--scenario", "decode-steady"] + argv)
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (2, [f"bench.py: error: {message}"], "")


def test_cli_refuses_a_bad_histogram(tmp_path, capsys):
    spec = _hist(tmp_path, "1,1\n2,x\n")
    code = cli.main(["--scenario", "decode-steady", "--token-ids", spec])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"bench.py: error: token-id histogram {tmp_path / 'hist.csv'} "
                                "line 2: expected 'token_id,count' (two integers), got '2,x'"]


def test_a_relative_histogram_path_reaches_the_runner_absolute(tmp_path, monkeypatch):
    from ipc_bench.harness.scenario import ScenarioOptions

    (tmp_path / "h.csv").write_text("7,1\n")
    monkeypatch.chdir(tmp_path)
    model = ScenarioOptions(token_ids="hist:h.csv").model_config()
    assert model.token_ids == f"hist:{tmp_path / 'h.csv'}"
    assert ScenarioOptions(token_ids="zipf").model_config().token_ids == "zipf"


def test_a_histogram_count_above_int64_is_a_one_line_error_exit_2(tmp_path, capsys):
    spec = _hist(tmp_path, "1,99999999999999999999999999999\n2,1\n")
    code = cli.main(["--scenario", "decode-steady", "--token-ids", spec,
                     "--output", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"bench.py: error: token-id histogram {tmp_path / 'hist.csv'} line 1: count "
        "99999999999999999999999999999 is above the largest allowed, 2**63 - 1 = "
        "9,223,372,036,854,775,807"]
    # 2**63 - 1 itself is a count.
    d = token_id_distribution(_hist(tmp_path, f"1,{2**63 - 1}\n2,0\n"), V)
    assert d.mass(1, 2) == 1.0


def test_a_histogram_of_other_digits_is_a_one_line_error_exit_2(tmp_path, capsys):
    """An Arabic-Indic one, which str.isdigit and int take, is refused as a trace's
    count is (was: the run went on with id 1, exit 0)."""
    spec = _hist(tmp_path, "\u0661,5\n")
    code = cli.main(["--scenario", "decode-steady", "--token-ids", spec,
                     "--output", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"bench.py: error: token-id histogram {tmp_path / 'hist.csv'} line 1: expected "
        "'token_id,count' (two integers), got '\u0661,5'"]
    assert not (tmp_path / "run").exists()


def test_a_named_fifo_without_a_writer_is_refused_not_waited_on(tmp_path, capsys):
    import os
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = cli.main(["--scenario", "decode-steady", "--token-ids", f"hist:{fifo}",
                     "--output", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"bench.py: error: cannot read token-id histogram {fifo}: a pipe with nothing "
        "written to it (a named FIFO needs its writer started first)"]
    code = cli.main(["--scenario", "decode-steady", "--token-ids", "hist:/dev/null"])
    out, err = capsys.readouterr()
    assert (code, err.splitlines()) == (2, [
        "bench.py: error: cannot read token-id histogram /dev/null: not a regular file "
        "or a pipe"])


def test_the_histogram_is_read_once_and_its_content_reaches_the_runner(tmp_path):
    """The bench process reads the file once; the runner's ModelConfig carries the
    normalized content (not only the path), so a file edited or gone after validation
    changes nothing, and a pipe read once works."""
    import hashlib
    import os
    from ipc_bench.engine.token_ids import read_histogram
    from ipc_bench.harness.scenario import ScenarioOptions

    path = tmp_path / "h.csv"
    path.write_text("token_id,count\n# c\n7,3\n2,5\n9,0\n")
    model = ScenarioOptions(token_ids=f"hist:{path}").model_config()
    assert model.token_id_histogram == "2,5\n7,3\n"
    path.write_text("1,1\n")  # edited after validation
    assert read_histogram(model.token_ids, V) == "2,5\n7,3\n"
    path.unlink()
    # What a runner process decodes from the handshake draws from the carried content.
    runner_model = msgspec.msgpack.decode(msgspec.msgpack.encode(model), type=ModelConfig)
    d = NullModel(runner_model).token_ids
    assert [d.mass(2, 3), d.mass(7, 8)] == pytest.approx([5 / 8, 3 / 8], abs=2**-52)
    # A pipe (a process substitution is one) is read once, in this process.
    r, w = os.pipe()
    os.write(w, b"1,5\n2,7\n")
    os.close(w)
    try:
        piped = ScenarioOptions(token_ids=f"hist:/dev/fd/{r}").model_config()
    finally:
        os.close(r)
    assert piped.token_id_histogram == "1,5\n2,7\n"
    assert hashlib.sha256(b"1,5\n2,7\n").hexdigest() == (
        "2d6851c5487c527783b3605dd4e666d48eb40154b18d0ecaae513c2592f5f326")


def test_a_process_substitution_histogram_runs_and_its_digest_is_recorded(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    run = tmp_path / "run"
    script = (f"{sys.executable} bench.py --scenario decode-steady --num-running 2 "
              f"--steps 10 --warmup-steps 0 --codecs msgpack --no-single-process --quiet "
              f"--token-ids hist:<(printf '1,5\\n2,7\\n') --output {run}")
    proc = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete"
    models = [c["model"] for c in summary["metadata"]["cases"]]
    digest = "2d6851c5487c527783b3605dd4e666d48eb40154b18d0ecaae513c2592f5f326"
    assert [m["token_ids_sha256"] for m in models] == [digest] * len(models)
    assert all(m["token_ids"].startswith("hist:/dev/fd/") for m in models)
    assert all("token_id_histogram" not in m for m in models)


def test_each_run_reads_the_histogram_afresh_once(tmp_path, monkeypatch):
    import json

    from ipc_bench.engine import token_ids

    hist = tmp_path / "h.csv"
    reads = []
    real = token_ids.load_histogram
    monkeypatch.setattr(token_ids, "load_histogram",
                        lambda path, v: reads.append(path) or real(path, v))
    digests = []
    for i, text in enumerate(["1,5\n", "1,5\n2,1\n"]):
        hist.write_text(text)
        run = tmp_path / f"run{i}"
        assert cli.main(["--scenario", "decode-steady", "--num-running", "2,4",
                         "--steps", "5", "--warmup-steps", "0", "--codecs", "msgpack",
                         "--policies", "send",  # still 4 cases a run (2 sizes x 2 transports)
                         "--token-ids", f"hist:{hist}", "--quiet",
                         "--output", str(run)]) == 0
        cases = json.loads((run / "summary.json").read_text())["metadata"]["cases"]
        assert len(cases) == 4
        digests.append({c["model"]["token_ids_sha256"] for c in cases})
    assert reads == [str(hist)] * 2  # once per run, whatever the number of cases
    assert digests == [{hashlib_sha("1,5\n")}, {hashlib_sha("1,5\n2,1\n")}]


def hashlib_sha(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode()).hexdigest()
