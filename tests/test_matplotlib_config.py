"""Matplotlib's config and cache folder of the suite (``conftest._matplotlib_config_dir``):
``MPLCONFIGDIR`` is one ``matplotlib`` folder in pytest's base temporary folder for
every worker and every process they start, its font list built before the first test,
so that a font list of the user's ``~/.cache/matplotlib`` rebuilt while matplotlib's
fonts were missing no longer adds ``findfont`` lines to the scripts' stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _session_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def test_the_session_has_one_matplotlib_folder_with_its_font_list(tmp_path_factory):
    folder = _session_root(tmp_path_factory) / "matplotlib"
    assert os.environ["MPLCONFIGDIR"] == str(folder)
    assert [p.name for p in folder.glob("fontlist-v*.json")] != []


def test_this_process_and_a_child_use_it(tmp_path_factory):
    import matplotlib

    folder = str(_session_root(tmp_path_factory) / "matplotlib")
    assert (matplotlib.get_configdir(), matplotlib.get_cachedir()) == (folder, folder)
    child = subprocess.run(
        [sys.executable, "-c", "import os, matplotlib; print(os.environ['MPLCONFIGDIR']); "
         "print(matplotlib.get_cachedir())"], capture_output=True, text=True, timeout=60)
    assert (child.stdout, child.stderr) == (f"{folder}\n{folder}\n", "")
