"""``--json /dev/stdout > out.txt``: the JSON is written after the printed table, into
the file the shell opened, where it was written beside it and renamed over it (out.txt
then held only the JSON and the table was lost, exit 0). The same for ``/dev/stderr``,
``/dev/fd/N``, ``/proc/self/fd/N``, the path of the file stdout is open on and ``>>``."""

from __future__ import annotations

import subprocess
import sys

from script_module import ROOT

PRINT_THEN_WRITE = (
    "import sys\n"
    "from ipc_bench.cli.console import write_output\n"
    "print('table line')\n"
    "print('progress line', file=sys.stderr)\n"
    "write_output(sys.argv[1], '{\"rows\": []}\\n', 'prog', 'the rows')\n"
    "print('after')\n")


def _run(target: str, stdout, stderr=subprocess.DEVNULL, pass_fds=()):
    return subprocess.run([sys.executable, "-c", PRINT_THEN_WRITE, target], stdout=stdout,
                          stderr=stderr, timeout=60, cwd=ROOT, pass_fds=pass_fds).returncode


def test_dev_stdout_redirected_to_a_file_keeps_what_was_printed(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        assert _run("/dev/stdout", f) == 0
    assert out.read_bytes() == b'table line\n{"rows": []}\nafter\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_dev_stderr_proc_self_fd_and_the_same_path_are_written_in_place(tmp_path):
    err = tmp_path / "err.txt"
    with open(err, "w") as f:
        assert _run("/dev/stderr", subprocess.DEVNULL, stderr=f) == 0
    assert err.read_bytes() == b'progress line\n{"rows": []}\n'
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        assert _run("/proc/self/fd/1", f) == 0
    assert out.read_bytes() == b'table line\n{"rows": []}\nafter\n'
    with open(out, "w") as f:  # --json out.txt > out.txt
        assert _run(str(out), f) == 0
    assert out.read_bytes() == b'table line\n{"rows": []}\nafter\n'
    with open(out, "a") as f:  # >> out.txt
        assert _run("/dev/stdout", f) == 0
    assert out.read_bytes() == b'table line\n{"rows": []}\nafter\n' * 2


def test_dev_fd_n_opened_by_the_shell_is_written_at_its_position(tmp_path):
    side = tmp_path / "side.txt"
    side.write_text("earlier\n")
    with open(side, "a") as f:
        assert _run(f"/dev/fd/{f.fileno()}", subprocess.DEVNULL, pass_fds=(f.fileno(),)) == 0
    assert side.read_bytes() == b'earlier\n{"rows": []}\n'


def test_byte_sweep_json_to_dev_stdout_in_a_file_is_what_a_pipe_gets(tmp_path):
    argv = [sys.executable, str(ROOT / "scripts" / "byte_sweep.py"), "--num-running", "4",
            "--steps", "2", "--formats", "numeric", "--vocab-sizes", "32000", "--codecs",
            "msgpack", "--json", "/dev/stdout"]
    piped = subprocess.run(argv, capture_output=True, timeout=120, cwd=ROOT)
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        done = subprocess.run(argv, stdout=f, stderr=subprocess.DEVNULL, timeout=120, cwd=ROOT)
    text = out.read_text()
    assert (piped.returncode, done.returncode) == (0, 0)
    assert text == piped.stdout.decode()
    assert text.startswith("bytes per pure-decode step at 4 running requests")
    assert text.index('"req_id_format": "numeric"') > text.index("numeric      1.0   32,000")
