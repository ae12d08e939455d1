"""A HOME whose matplotlib folders cannot be made (a read-only HOME; here ``.config``
and ``.cache`` are files, which fails the same ``mkdir``): matplotlib is pointed at a
private folder of its own in the temporary folder (``mpl_config.matplotlib_config_dir``)
before it is imported, so that ``bench.py report`` and ``scripts/variant_table.py
--figure`` (which imports matplotlib itself) print nothing of matplotlib's
(before: ``mkdir -p failed for path HOME/.config/matplotlib: ...`` and ``Matplotlib
created a temporary cache directory at /tmp/matplotlib-XXXX ...``), and the folder is
used again by the next process (no new folder a process, its font list built once).
A user's own ``MPLCONFIGDIR`` is kept; a fallback folder that is not private (another
user's could be) is not used: a new one is made and removed at exit. The suite sets
``MPLCONFIGDIR`` (conftest), so each child here runs without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from analysis_run import REPO

SHOW = ("from ipc_bench.report import plots; import matplotlib; "
        "print(matplotlib.get_configdir()); print(matplotlib.get_cachedir())")


def _env(tmp_path: Path, **extra) -> dict:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    for folder in (home, tmp):
        folder.mkdir(exist_ok=True)
    for name in (".config", ".cache"):
        (home / name).write_text("a file, so that mkdir fails as on a read-only HOME\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    return dict(env, HOME=str(home), TMPDIR=str(tmp), **extra)


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_unwritable_home_gets_a_private_folder_quietly(tmp_path):
    env = _env(tmp_path)
    folder = tmp_path / "tmp" / f"ipc-bench-matplotlib-{os.getuid()}"
    for _ in range(2):  # the second process uses the folder the first made
        proc = _python(SHOW, env)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{folder}\n{folder}\n", "")
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == [folder.name]


def test_a_report_prints_nothing_of_matplotlib(tmp_path, shared_two_case_run):
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, str(REPO / "bench.py"), "report",
                           str(shared_two_case_run), "--output", str(out)],
                          cwd=REPO, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    from matplotlib.font_manager import FontManager

    assert (proc.returncode, proc.stderr) == (0, "")
    assert sorted(p.name for p in out.glob("*.png")) == [
        "bytes_per_step.png", "codec_time_per_step.png", "step_breakdown.png",
        "throughput.png"]
    folder = tmp_path / "tmp" / f"ipc-bench-matplotlib-{os.getuid()}"
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == [folder.name]
    assert [p.name for p in folder.iterdir()] == [
        f"fontlist-v{FontManager.__version__}.json"]


def test_the_variant_tables_figure_prints_nothing_of_matplotlib(tmp_path):
    """scripts/variant_table.py imports matplotlib itself (not through plots): before,
    its figure printed matplotlib's two lines on stderr under such a HOME."""
    png = tmp_path / "variants.png"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "variant_table.py"),
                           "--table-from", str(REPO / "results" / "published" / "variants"
                                               / "variants.json.gz"),
                           "--only", "uniform packed send", "--batch-sizes", "1",
                           "--figure", str(png)],
                          cwd=REPO, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines()[-1].startswith(
        "| 1 | send | packed | uniform | 250 | 381 | ")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    folder = tmp_path / "tmp" / f"ipc-bench-matplotlib-{os.getuid()}"
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == [folder.name]


def test_a_users_own_folder_is_kept(tmp_path):
    own = tmp_path / "own"
    proc = _python(SHOW, _env(tmp_path, MPLCONFIGDIR=str(own)))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{own}\n{own}\n", "")
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_fallback_folder_others_may_write_is_not_used(tmp_path):
    env = _env(tmp_path)
    shared = tmp_path / "tmp" / f"ipc-bench-matplotlib-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    proc = _python(SHOW + "; import os; print(os.path.isdir(matplotlib.get_configdir()))",
                   env)
    made = proc.stdout.splitlines()[0]
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"{made}\n{made}\nTrue\n"
    assert Path(made).parent == tmp_path / "tmp" and made != str(shared)
    assert Path(made).name.startswith("ipc-bench-matplotlib-")
    # removed at exit: only the folder that was not used is left
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == [shared.name]
    assert list(shared.iterdir()) == []


def _unwritable_home(tmp_path: Path, monkeypatch) -> None:
    """This process's HOME as ``_env``'s, MPLCONFIGDIR and the XDG folders unset (each
    restored after the test), for ``matplotlib_config_dir`` called uncached."""
    env = _env(tmp_path)
    for name in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", env["HOME"])


def test_an_own_folder_others_may_read_but_not_write_is_used(tmp_path, monkeypatch):
    import tempfile

    from ipc_bench.report import mpl_config

    _unwritable_home(tmp_path, monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    folder = tmp_path / "tmp" / f"ipc-bench-matplotlib-{os.getuid()}"
    folder.mkdir(0o755)
    folder.chmod(0o755)
    assert mpl_config.matplotlib_config_dir.__wrapped__() == str(folder)
    assert os.environ["MPLCONFIGDIR"] == str(folder)


def test_no_usable_temporary_folder_sets_nothing(tmp_path, monkeypatch):
    import tempfile

    from ipc_bench.report import mpl_config

    _unwritable_home(tmp_path, monkeypatch)

    def no_folder():
        raise FileNotFoundError(2, "No usable temporary directory found in ['/nowhere']")

    monkeypatch.setattr(tempfile, "gettempdir", no_folder)
    assert mpl_config.matplotlib_config_dir.__wrapped__() is None
    assert "MPLCONFIGDIR" not in os.environ
