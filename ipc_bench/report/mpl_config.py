"""Matplotlib's config and cache folder where ``HOME``'s cannot be written.

``matplotlib_config_dir`` points matplotlib (``MPLCONFIGDIR``) at a private folder of
its own before matplotlib is imported, so that it prints nothing (``mkdir -p failed for
path ...``, ``Matplotlib created a temporary cache directory at ...``) and builds its
font list once. Called on importing ``plots``, before a report's libraries
(``document``), and by the scripts that import matplotlib themselves
(``scripts/variant_table.py``). The standard library only: importing this module
imports no matplotlib, numpy or pandas."""

from __future__ import annotations

import functools
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Optional

#: The folder matplotlib keeps its settings and font list in where its own (``HOME``'s)
#: cannot be written: one a user, in the temporary folder (``tempfile.gettempdir``), made
#: once and used again, so that none piles up and its font list is built once.
MATPLOTLIB_FALLBACK = "ipc-bench-matplotlib-{uid}"


@functools.cache
def matplotlib_config_dir() -> Optional[str]:
    """Point matplotlib (``MPLCONFIGDIR``) at ``MATPLOTLIB_FALLBACK`` where the folders
    it would use by default, ``~/.config/matplotlib`` and ``~/.cache/matplotlib`` (or
    under ``XDG_CONFIG_HOME`` / ``XDG_CACHE_HOME``), cannot be made or written (a
    read-only ``HOME``, one without a home at all); returns that folder, else ``None``.
    Matplotlib would print two lines (``mkdir -p failed for path ...``, ``Matplotlib
    created a temporary cache directory at /tmp/matplotlib-XXXX ...``) and build its font
    list again in a new folder in every process. A ``MPLCONFIGDIR`` already set (the
    user's own) is kept, as are the defaults where they can be written. The folder is
    made with mode 0700, and used where only this user may write it (an earlier 0755
    one too); where it cannot be used as such (another user's, a link, one others may
    write, an unwritable temporary folder), a new one is made (``tempfile.mkdtemp``) and
    removed at exit. Without a usable temporary folder at all (``tempfile.gettempdir``
    raises) nothing is set: a report without figures needs none, and matplotlib, where
    it is imported, says what it lacks. Called before matplotlib is imported (it reads ``MPLCONFIGDIR`` once, on
    import); once a process."""
    if os.environ.get("MPLCONFIGDIR") or not sys.platform.startswith(("linux", "freebsd")):
        return None
    try:
        home = Path.home()
    except RuntimeError:  # no home to be found
        home = None
    if home is not None and all(_can_write(Path(os.environ.get(var) or home / hidden,
                                                "matplotlib"))
                                for var, hidden in (("XDG_CONFIG_HOME", ".config"),
                                                    ("XDG_CACHE_HOME", ".cache"))):
        return None
    try:
        temporary = tempfile.gettempdir()
    except OSError:  # no usable temporary folder: matplotlib says so where it needs one
        return None
    folder = os.path.join(temporary, MATPLOTLIB_FALLBACK.format(uid=os.getuid()))
    if not _private_folder(folder):
        import atexit
        import shutil

        try:
            folder = tempfile.mkdtemp(prefix="ipc-bench-matplotlib-")
        except OSError:
            return None  # matplotlib says why it has no folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = folder
    return folder


def _can_write(folder: Path) -> bool:
    """Whether ``folder`` is a folder this process may write, or could be made as one:
    the nearest folder above it that exists is one it may write (nothing is made here:
    matplotlib makes it)."""
    here = folder.absolute()
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    return here.is_dir() and os.access(here, os.W_OK)


def _private_folder(path: str) -> bool:
    """Whether ``path`` is, or could be made, a folder of this user's that only it may
    write: not a link, owned by it, neither group nor others may write it (made 0700),
    writable."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o022 and os.access(path, os.W_OK))
