"""Error text shared by every layer: messages stay on one line."""

from __future__ import annotations

import errno
import os
import re
import resource  # here, not where a failed allocation is being reported
import sys
from pathlib import Path
from typing import Optional


def _escaped(c: str) -> str:
    """One unprintable character as ``repr`` writes it, but a path's byte that is not
    UTF-8 (a lone surrogate, ``os.fsdecode``) as that byte, ``\\xff``, as ``ls -b``
    shows it."""
    code = ord(c)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else repr(c)[1:-1]


def one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped (as ``repr``
    writes them; a path's byte that is not UTF-8 as ``\\xff``), so an error message
    quoting data stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def shell_word(arg: str) -> str:
    """``arg`` quoted for a POSIX shell so that pasting it gives ``arg`` back:
    ``shlex.quote`` where every character is printable, else bash's ANSI-C quoting with
    each other character's bytes escaped (``$'/r/bad\\xffname'``, ``$'a\\nb'``), a
    path's byte that is not UTF-8 (a lone surrogate) as that byte."""
    import shlex

    if arg.isprintable():
        return shlex.quote(arg)
    out = []
    for c in arg:
        if c in "\\'":
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            data = c.encode("utf-8", "surrogateescape")
            out.append("".join(f"\\x{b:02x}" for b in data))
    return "$'" + "".join(out) + "'"


def path_word(path: str) -> str:
    """``path`` as a command's argument: a relative path that begins with "-" as
    ``./-x``, which no command reads as an option (``-x`` it would); any other as it
    is. A printed command quotes it then (``shell_word``)."""
    return f"./{path}" if path.startswith("-") else path


def shell_line(argv) -> str:
    """``argv`` (texts) as one shell line to paste back, each word a ``shell_word``."""
    return " ".join(shell_word(str(a)) for a in argv)


def command_shell_line(argv, cwd=None) -> str:
    """A run's ``command_line`` (its metadata: the argument list, ``bench.py``'s
    ``sys.argv``, or ``bench.py``'s absolute path and the arguments of ``cli.main``
    called in-process: ``cli.command_line``) quoted as a shell line that can be pasted
    back (``shell_line``: ``--output '/r/int run'``, ``$'/r/bad\\xffname'``), with
    ``python`` before a script's name (``python bench.py --scenario ...``); ``?`` where
    it is not a list. ``cwd`` (metadata, the folder the run ran in; a run before it
    has none), where a text: ``cd CWD && `` before it, as the relative paths
    (``bench.py`` itself, ``--trace conv.csv``) are relative to it."""
    if not isinstance(argv, list):
        return "?"
    words = [str(a) for a in argv]
    if words and words[0].endswith(".py"):
        words.insert(0, "python")
    if isinstance(cwd, str) and cwd:
        return f"{shell_line(['cd', cwd])} && {shell_line(words)}"
    return shell_line(words)


#: Lone surrogates that are no path's byte (``os.fsdecode`` holds the bytes 0x80-0xff
#: as U+DC80-U+DCFF): a JSON text can hold any of them (``"\ud800"``).
_OTHER_SURROGATES = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def utf8_text(text: str) -> str:
    """``text`` with each byte of a path that is not UTF-8 (held as a lone surrogate:
    ``os.fsdecode``) written as its escape, ``tr\\xff.csv``, and any other lone
    surrogate (``"\\ud800"`` in a hand-edited ``summary.json``) as ``repr`` writes it,
    ``\\ud800``, so that it can be encoded as UTF-8 and drawn: a report's files and
    figures."""
    text = _OTHER_SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


#: How a line that names a case's step ``at step N`` numbers it (the interrupt line, a
#: runner's failure): as ``steps.csv``'s ``seq`` and the summary's ``failed_step``, from
#: 0, warm-up and uncounted steps included, so a ``--steps 3000`` case can stop at 3658.
STEP_NUMBERING = "steps.csv seq: warm-up and uncounted steps included"


def module_doc(module) -> Optional[str]:
    """``module.__doc__``; under ``python -OO`` (``sys.flags.optimize >= 2``, or
    ``PYTHONOPTIMIZE=2``), which strips docstrings, the docstring read from the module's
    source file instead (``ast.get_docstring``, the string as written), so that
    ``--list``, help texts and descriptions built from it stay. ``None`` when the
    module has no docstring, or under ``-OO`` when its source cannot be read or parsed
    (no ``__file__``, an ``OSError``, a ``SyntaxError``)."""
    doc = getattr(module, "__doc__", None)
    if doc is not None or sys.flags.optimize < 2:
        return doc
    path = getattr(module, "__file__", None)
    if not path:
        return None
    import ast

    try:
        return ast.get_docstring(ast.parse(Path(path).read_bytes()), clean=False)
    except (OSError, SyntaxError, ValueError):
        return None


def broken_link_text(folder: Path, writing: str) -> Optional[str]:
    """Why an output folder still to be made cannot be: ``folder`` is a symbolic link
    that cannot be followed: ``output folder FOLDER is a symbolic link to TARGET, which
    does not exist`` (or ``, which cannot be followed`` / ``(REASON)``), or a folder on
    the way to it cannot hold it (``blocked_path_text``): ``cannot write WRITING to
    FOLDER: LINK is a symbolic link to TARGET, ...`` for a link above it, ``cannot write
    WRITING to FOLDER: FILE is not a folder`` for a file above it (``WRITING``:
    ``results``, ``the report``); ``None`` where there is no such link or file (a link
    to an existing folder is followed: the output is written there). ``TARGET`` as the
    link holds it (``os.readlink``; a chain of links named link by link,
    ``dangling_link_text``). The run's ``--output``, the report's and microbench's share
    these words. Raises ``OSError`` where a path on the way cannot be looked up at
    all."""
    if folder.exists():
        return None
    if folder.is_symlink():
        return f"output folder {folder} is {dangling_link_text(folder)}"
    blocked = blocked_path_text(folder)
    return None if blocked is None else f"cannot write {writing} to {folder}: {blocked}"


def blocked_path_text(path: Path) -> Optional[str]:
    """What keeps ``path``, which does not exist, from being made, found in the folders
    above it (``path`` itself is not looked at): the missing one nearest to it that is a
    symbolic link which cannot be followed, ``LINK is a symbolic link to TARGET, which
    does not exist`` (``dangling_link_text``), or the first that exists where it is not
    a folder, ``FILE is not a folder``; a symbolic link to a file named as given and
    what it points to, ``LINK is a symbolic link to TARGET, which is not a folder``
    (``TARGET`` as the link holds it, a chain of links named link by link as
    ``dangling_link_text`` names one: ``..., itself a symbolic link to afile, which is
    not a folder``); ``None`` where the folder above is one (whatever the system then
    says: a permission, a missing folder that is not a link, which ``mkdir`` makes). An
    output folder's (``broken_link_text``) and an output file's
    (``cli.options.writable_file``) words. Raises ``OSError`` where a path on the way
    cannot be looked up at all."""
    above = path.parent
    while not above.exists() and above != above.parent:
        if above.is_symlink():
            return f"{above} is {dangling_link_text(above)}"
        above = above.parent
    if above != path and above.exists() and not above.is_dir():
        if above.is_symlink():
            return f"{above} is {link_text(above)}, which is not a folder"
        return f"{above} is not a folder"
    return None


def output_kind_text(path: Path, shown: Optional[str] = None,
                     folder: bool = True) -> Optional[str]:
    """Why the output ``path`` (named as ``shown``, the text given; ``str(path)`` by
    default), where it exists, is not the kind of output wanted: for an output folder
    (``folder``) one that is not a folder, ``output path PATH exists and is not a
    folder``, or where ``PATH`` is itself a symbolic link, the link and where it points
    (``TARGET`` as the link holds it, a chain of links named link by link, as
    ``blocked_path_text`` names one above it): ``output path PATH is a symbolic link to
    TARGET, which is not a folder``; for an output file (not ``folder``) one that is a
    folder, ``PATH: is a directory``, or ``PATH is a symbolic link to TARGET, which is a
    folder``. ``None`` where ``path`` does not exist (a dangling link included:
    ``broken_link_text``, ``dangling_link_text``) or is of the kind wanted. The run's,
    the report's, microbench's and the scripts' words. Raises ``OSError`` where a link
    cannot be read."""
    shown = str(path) if shown is None else shown
    if not path.exists() or path.is_dir() == folder:
        return None
    if path.is_symlink():
        which = "which is not a folder" if folder else "which is a folder"
        words = f"{shown} is {link_text(path)}, {which}"
        return f"output path {words}" if folder else words
    if folder:
        return f"output path {shown} exists and is not a folder"
    return f"{shown}: is a directory"


def folder_names_text(names, shown: int = 3) -> str:
    """The names of what an output folder holds, as a refusal of the folder lists them
    (the run's ``output folder DIR exists and is not empty (it holds ...)`` and the
    report's ``output folder OUT holds files that are not a report's (...)``): sorted,
    the first ``shown`` joined with ``, ``, then ``...`` where there are more, each
    escaped to one line (``one_line``), so that a hidden file (``.claimed``,
    ``.DS_Store``) that ``ls`` does not show is named: ``.DS_Store, a.txt, b.txt, ...``.
    ``names``: file names (``str``), any iterable."""
    names = sorted(names)
    listed = ", ".join(one_line(name) for name in names[:shown])
    return listed + (", ..." if len(names) > shown else "")


def _link_chain(link: Path) -> list[str]:
    """The targets of symbolic link ``link`` and of each link it leads to, as each
    link holds it (``os.readlink``), up to the first that is not a link (or 40 links,
    the system's own limit). Raises ``OSError`` where ``link`` cannot be read as a
    link."""
    hops = [os.readlink(link)]
    here = os.fspath(link)
    while len(hops) < 40:
        here = os.path.join(os.path.dirname(here), hops[-1])  # absolute: the target alone
        if not os.path.islink(here):
            break
        hops.append(os.readlink(here))
    return hops


def _link_words(hops: list[str]) -> str:
    """``a symbolic link to A, itself a symbolic link to B``: a chain of links' targets
    ``hops`` (``_link_chain``), each named."""
    return f"a symbolic link to {', itself a symbolic link to '.join(hops)}"


def link_text(link: Path) -> str:
    """Where the symbolic link ``link`` leads: ``a symbolic link to TARGET`` (``TARGET``
    as the link holds it), each link of a chain named (``a symbolic link to A, itself a
    symbolic link to B``). Raises ``OSError`` where ``link`` cannot be read as a link."""
    return _link_words(_link_chain(link))


def dangling_link_text(link: Path) -> str:
    """What the symbolic link ``link``, whose target cannot be reached, leads to: ``a
    symbolic link to TARGET, which does not exist`` (or ``, which cannot be followed``
    / ``(REASON)``: a loop of links, ``Too many levels of symbolic links``), ``TARGET``
    as the link holds it (``os.readlink``). Where ``TARGET`` is itself a link to
    nothing, each link of the chain is named up to the missing end: ``a symbolic link
    to dl1, itself a symbolic link to missing, which does not exist``. The words of an
    output folder's (``broken_link_text``) and an output file's
    (``cli.options.writable_file``) dangling link, or one above either
    (``blocked_path_text``). Raises ``OSError`` where ``link``
    cannot be read as a link."""
    try:
        os.stat(link)
        why = "which cannot be followed"
    except FileNotFoundError:
        why = "which does not exist"
    except OSError as exc:
        why = f"which cannot be followed ({exc.strerror})"
    hops = _link_chain(link) if why == "which does not exist" else [os.readlink(link)]
    return f"{_link_words(hops)}, {why}"


def runner_failed_text(step: int, message: str) -> str:
    """The line of a runner's failure at step ``step`` (``STEP_NUMBERING``):
    ``runner failed at step 634 (steps.csv seq: warm-up and uncounted steps included):
    DecodeError: ...``; a step below 0 (a failure the runner reported before any step)
    reads ``runner failed before its first step: ...``."""
    if step < 0:
        return f"runner failed before its first step: {message}"
    return f"runner failed at step {step} ({STEP_NUMBERING}): {message}"


def fd_limit_text() -> str:
    """The line for a process out of file descriptors (``EMFILE``), naming its limit:
    ``too many open files (ulimit -n 20): raise it (e.g. ulimit -n 1024) and run
    again``. Each case opens sockets, socket folders and pipes to its processes, and
    libzmq a few descriptors of its own per context, so the number a case needs
    depends on the transport and the build: the limit is named where it was hit."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    shown = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    return f"{FD_LIMIT_PREFIX}{shown}): raise it (e.g. ulimit -n 1024) and run again"


#: How ``fd_limit_text`` starts: a line that holds it (a runner's ``ErrorReport``,
#: which carries only text) names the file-descriptor limit (``names_fd_limit``).
FD_LIMIT_PREFIX = "too many open files (ulimit -n "


def names_fd_limit(message: str) -> bool:
    """Whether ``message`` holds ``fd_limit_text``'s or ``file_table_text``'s line (a
    child process's report, a case's error)."""
    return FD_LIMIT_PREFIX in message or FILE_TABLE_PREFIX in message


def out_of_fds(exc: BaseException) -> bool:
    """Whether ``exc`` (an ``OSError``, a ``zmq.ZMQError``: both carry ``errno``) says
    the process cannot open one more file descriptor (``FD_ERRNOS``: ``EMFILE``, its
    own limit, or ``ENFILE``, the system's; ``fd_shortage_text`` says which)."""
    return getattr(exc, "errno", None) in FD_ERRNOS


#: The file table of the whole system is full (``ENFILE``): no process may open a
#: file until others close some. Where the system says its size
#: (``/proc/sys/fs/file-max``), the line names it.
FILE_TABLE_PREFIX = "too many open files in the system"


def file_table_text() -> str:
    """The line for the system's file table full (``ENFILE``), naming its size where
    ``/proc/sys/fs/file-max`` reads: ``too many open files in the system (fs.file-max
    9223372036854775807): close files elsewhere or raise fs.file-max, and run again``.
    Raising ``ulimit -n``, which ``fd_limit_text`` asks for, does not help here."""
    try:
        with open("/proc/sys/fs/file-max") as f:
            size = f" (fs.file-max {int(f.read())})"
    except (OSError, ValueError):  # no /proc, or it cannot be opened: ENFILE itself
        size = ""
    return f"{FILE_TABLE_PREFIX}{size}: close files elsewhere or raise fs.file-max, and run again"


#: The ``errno`` values of a process that cannot open one more file descriptor: its
#: own limit reached (``EMFILE``) or the system's file table full (``ENFILE``).
FD_ERRNOS = (errno.EMFILE, errno.ENFILE)


def fd_shortage_text(exc: BaseException) -> Optional[str]:
    """The line for ``exc`` (an ``OSError``: it carries ``errno``) raised for want of
    a file descriptor: ``fd_limit_text`` for ``EMFILE`` (this process's limit),
    ``file_table_text`` for ``ENFILE`` (the system's); ``None`` for any other error.
    Either is exit 2 where the harness maps it (``FD_ERRNOS``)."""
    code = getattr(exc, "errno", None)
    if code == errno.EMFILE:
        return fd_limit_text()
    if code == errno.ENFILE:
        return file_table_text()
    return None


def file_size_text(exc: OSError) -> Optional[str]:
    """The reason for a write refused at the process's file-size limit (``EFBIG`` with
    ``RLIMIT_FSIZE`` set), naming it: ``File too large (the file-size limit, ulimit -f
    40: 40 KiB a file)``, so that a small file beside the error does not read as the one
    that failed (the append that would pass the limit is refused whole). ``None`` for
    any other error, or ``EFBIG`` without such a limit (the file system's own)."""
    import resource

    if getattr(exc, "errno", None) != errno.EFBIG:
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    words = exc.strerror or "File too large"
    if soft % 1024:  # not whole KiB (set in bytes, not by the shell's ulimit -f)
        return f"{words} (the file-size limit: {soft:,} bytes a file)"
    return f"{words} (the file-size limit, ulimit -f {soft // 1024}: {soft // 1024:,} KiB a file)"


def resource_shortage_text(exc: BaseException) -> Optional[str]:
    """The line for ``exc`` raised because the process is at a resource limit, not
    for a bug: a thread that could not start (``RuntimeError: can't start new
    thread``: ``ulimit -u``, a container's pids limit, or ``ulimit -v`` leaving no room
    for its stack) or a ``MemoryError``; ``None`` for any other error."""
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return thread_limit_text()
    if isinstance(exc, MemoryError):
        return ("out of memory (MemoryError): a memory limit (ulimit -v, a container's) "
                "or the machine's memory is too small for this case")
    return None


def _cgroup_pids() -> Optional[tuple[int, Optional[int]]]:
    """The tightest pids limit over this process's control group and its parents (a
    systemd user slice's ``TasksMax`` sits above the session's scope) and how many tasks
    that group holds (``pids.max``, ``pids.current``; cgroup v2, else v1's ``pids``
    hierarchy, read from ``/proc/self/cgroup``): the one with the fewest tasks left;
    ``None`` where none is set or none can be read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found: list[tuple[int, Optional[int]]] = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":
            root = Path("/sys/fs/cgroup")
        elif "pids" in controllers.split(","):
            root = Path("/sys/fs/cgroup/pids")
        else:
            continue
        folder = root / path.lstrip("/")
        while True:
            found += _pids_limit(folder)
            if folder == root or root not in folder.parents:
                break
            folder = folder.parent
    if not found:
        return None
    return min(found, key=lambda f: f[0] - (f[1] or 0))


def _pids_limit(folder: Path) -> list[tuple[int, Optional[int]]]:
    """``[(pids.max, pids.current)]`` of the control group ``folder`` (current
    ``None`` if unreadable); ``[]`` where no limit is set there (``max``) or none can
    be read."""
    try:
        limit = (folder / "pids.max").read_text().strip()
    except OSError:
        return []
    if not limit.isdigit():  # "max": none set here
        return []
    try:
        current: Optional[int] = int((folder / "pids.current").read_text())
    except (OSError, ValueError):
        current = None
    return [(int(limit), current)]


def _user_threads() -> Optional[int]:
    """How many threads (processes included) this user runs, from ``/proc``; ``None``
    where ``/proc`` cannot be listed."""
    uid, count = str(os.getuid()), 0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            fields = dict(line.split(":", 1) for line in
                          Path(f"/proc/{pid}/status").read_text(errors="replace").splitlines()
                          if ":" in line)
        except (OSError, ValueError):
            continue  # gone since it was listed
        if fields.get("Uid", "").split()[:1] == [uid]:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def _vm_size() -> Optional[int]:
    """This process's address space in bytes (``VmSize``); ``None`` if unreadable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _thread_limits() -> list[tuple[str, bool]]:
    """The limits set on this process that cap its threads, each as its words with
    the figures in use, and whether it is at (within 10 % of) its value."""
    limits = []
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if nproc != resource.RLIM_INFINITY and os.getuid() != 0:  # root's is not enforced
        used = _user_threads()
        limits.append((f"ulimit -u {nproc:,}" + ("" if used is None else
                       f", with {used:,} processes and threads of this user seen"),
                       used is not None and used >= 0.9 * nproc))
    pids = _cgroup_pids()
    if pids is not None:
        limits.append((f"a control-group pids limit of {pids[0]:,}"
                       + ("" if pids[1] is None else f", with {pids[1]:,} in use"),
                       pids[1] is not None and pids[1] >= 0.9 * pids[0]))
    space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if space != resource.RLIM_INFINITY:
        stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
        # glibc's thread stack: ulimit -s, or 2 MiB where it is unlimited (x86-64)
        stack = 2 * 2**20 if stack == resource.RLIM_INFINITY else stack
        size = _vm_size()
        limits.append((f"ulimit -v {space / 2**20:,.0f} MiB" + ("" if size is None else
                       f", with {size / 2**20:,.0f} MiB in use and a thread's stack "
                       f"reserving {stack / 2**20:,.0f} MiB more (ulimit -s)"),
                       size is not None and space - size < 2 * stack))
    return limits


def thread_limit_text() -> str:
    """The line for a thread that could not start (``RuntimeError: can't start new
    thread``), naming the limit it reached with the figures in use: of ``ulimit -u``
    (its user's processes and threads), a control group's pids limit
    (``_cgroup_pids``) and ``ulimit -v`` (every thread's stack reserves ``ulimit -s``
    of it), those within 10 % of their value (two stacks, for ``ulimit -v``); where none
    is, the ones set, said not to look reached, and the system's own limits
    (``kernel.threads-max``, its memory) named. Raises nothing."""
    limits = _thread_limits()
    reached = [words for words, at in limits if at]
    if not limits:
        return ("cannot start a thread: no ulimit -u, ulimit -v or pids limit applies to "
                "this process: the system's threads (kernel.threads-max) or memory ran out")
    if not reached:
        return ("cannot start a thread: no limit set on this process looks reached ("
                + "; ".join(words for words, _ in limits) + "): the system's threads "
                "(kernel.threads-max) or memory may have run out")
    if len(reached) == 1:
        return f"cannot start a thread: the process is at a resource limit: {reached[0]}; raise it"
    return ("cannot start a thread: the process is at one of its resource limits: "
            + "; ".join(reached) + "; raise the one it reached")


#: Import name prefix of the scenario modules (``harness.scenario.PACKAGE``).
_SCENARIO_MODULES = "ipc_bench.scenarios."


def scenario_frames(exc: BaseException) -> tuple[Optional[str], bool]:
    """Where ``exc`` passed through a scenario module's code (``ipc_bench.scenarios.*``,
    the repository's ``scenarios/``): the innermost such frame as ``scenarios/x.py line
    12, in arrivals`` (the file's path from its ``scenarios`` folder on), and whether it
    is where ``exc`` was raised (the innermost frame of all); ``(None, False)`` when
    none is. Raises nothing."""
    tb, where, last = exc.__traceback__, None, False
    while tb is not None:
        frame = tb.tb_frame
        ours = str(frame.f_globals.get("__name__", "")).startswith(_SCENARIO_MODULES)
        if ours:
            path = Path(frame.f_code.co_filename)
            parts = path.parts
            shown = (Path(*parts[len(parts) - 1 - parts[::-1].index("scenarios"):])
                     if "scenarios" in parts else path)
            where = f"{shown} line {tb.tb_lineno}, in {frame.f_code.co_name}"
        last = ours
        tb = tb.tb_next
    return where, last


def startup_shortage_text(exc: BaseException, program: str = "bench.py") -> Optional[str]:
    """The line for ``exc`` that escaped a ``bench.py`` command (``program``: the runner
    process, ``python -m ipc_bench.harness``, says ``the runner``) because a memory limit
    is too small for it: a ``MemoryError``; or, where ``RLIMIT_AS`` is set (``ulimit
    -v``), a ``SystemError`` (``error return without exception set``: what CPython
    raises where C code's allocation failed and it set no ``MemoryError``, in an import
    or anywhere else, matplotlib drawing a report's figures among them), or the
    ``ImportError`` of a shared library that cannot be mapped (``failed to map
    segment``, ``Cannot allocate memory``). Names the limit in MiB; ``None`` for any
    other error, and for a ``SystemError`` with no ``RLIMIT_AS`` set (a bug, which
    keeps its traceback). Raises nothing."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    limited = soft != resource.RLIM_INFINITY
    mapped = isinstance(exc, ImportError) and any(
        words in str(exc) for words in ("failed to map segment", "Cannot allocate memory"))
    system = isinstance(exc, SystemError)
    if not (isinstance(exc, MemoryError) or (limited and (system or mapped))):
        return None
    limit = (f"the address-space limit of {soft / 2**20:,.0f} MiB (ulimit -v)" if limited
             else "a memory limit (a container's) or the machine's memory")
    return (f"out of memory ({type(exc).__name__}): {limit} is too small for {program}; "
            "raise it")


#: Address space ``import scipy.special`` takes with numpy and pandas loaded, per
#: OpenBLAS thread (``OPENBLAS_NUM_THREADS``): its libraries (37 MB) and, as its
#: OpenBLAS loads, a 32 MiB buffer for the main thread (measured: 69 MiB with one thread,
#: 41 MB more for each other), with a few MiB to spare.
SCIPY_LOAD_BYTES = 76 * 2**20
#: The same for ``import numpy`` in a fresh process (82 MiB with one thread).
NUMPY_LOAD_BYTES = 88 * 2**20
#: What each OpenBLAS thread but the first adds to either (40 to 41 MB).
OPENBLAS_THREAD_BYTES = 42 * 2**20
#: The buffer numpy's OpenBLAS maps at its first LAPACK call (32 MiB; glibc's malloc
#: asks for up to 33 MiB), with a little to spare.
BLAS_BUFFER_BYTES = 36 * 2**20


def openblas_load_bytes(load_bytes: int) -> int:
    """``load_bytes`` (``SCIPY_LOAD_BYTES``, ``NUMPY_LOAD_BYTES``) and
    ``OPENBLAS_THREAD_BYTES`` for each OpenBLAS thread but the first: the count of the first of ``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS``,
    ``OMP_NUM_THREADS`` set (as OpenBLAS reads it), at most the cores this process may
    run on; a core each where none is set or it is not a positive number."""
    cores = len(os.sched_getaffinity(0))
    value = next((os.environ[name] for name in
                  ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
                  if os.environ.get(name)), "")
    try:
        threads = int(value.split(",")[0])
    except ValueError:
        threads = 0
    threads = min(threads, cores) if threads > 0 else cores
    return load_bytes + (threads - 1) * OPENBLAS_THREAD_BYTES


def need_address_space(nbytes: int, what: str) -> None:
    """Where ``RLIMIT_AS`` is set (``ulimit -v``): raise ``MemoryError`` unless
    ``nbytes`` more address space can still be mapped, tried by mapping (never
    touching) that much and unmapping it; ``what`` names the need in the error. Called
    before a library whose OpenBLAS allocates as it loads or at its first call, which,
    once mmap fails, retries for good (scipy's: at 100 % CPU, the signals blocked
    while the imports run) or exits with a line of its own (numpy's): raised here
    instead, the command ends with ``startup_shortage_text``'s line naming the limit.
    Without a limit: nothing (any other shortage is the kernel's to refuse)."""
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        return
    import mmap

    try:
        probe = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        raise MemoryError(f"{nbytes / 2**20:,.0f} MiB of address space for {what}") from None
    probe.close()


#: What a thread's stack is taken to be where ``ulimit -s`` is unlimited (8 MiB, as
#: ``ulimit -s`` is by default).
DEFAULT_STACK_BYTES = 8 * 2**20
#: Address space a ZeroMQ context's first sockets take beyond its threads' stacks, with
#: some to spare (measured: the stacks and a guard page each, then 0.7 MiB more for the
#: runner to reach its own lines).
ZMQ_MARGIN_BYTES = 1 * 2**20


def _idle_thread_stacks(stack: int) -> int:
    """Thread stacks of ``stack`` bytes still mapped in this process with no live
    thread on them: glibc keeps those of threads that ended (up to 40 MiB) for the
    next ones, so a context made after another was destroyed takes no new address
    space for its threads. Counted in /proc/self/maps (a ``---p`` guard page, then an
    anonymous ``rw-p`` mapping of ``stack`` bytes), less the threads alive but the
    main one (/proc/self/task); 0 where either cannot be read."""
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
        threads = len(os.listdir("/proc/self/task")) - 1
    except OSError:
        return 0
    mapped, guard_end = 0, None
    for line in lines:
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if (start == guard_end and fields[1] == "rw-p" and len(fields) == 5
                and end - start == stack):
            mapped += 1
        guard_end = end if fields[1] == "---p" else None
    return max(0, mapped - threads)


def need_zmq_threads(io_threads: int = 1) -> None:
    """Before a ``zmq.Context`` (of ``io_threads`` I/O threads) is made, where
    ``RLIMIT_AS`` is set: raise ``MemoryError`` (``need_address_space``) unless there is
    room for the threads libzmq starts at its first socket, its I/O threads and its
    reaper, each with a stack of ``ulimit -s`` (``DEFAULT_STACK_BYTES`` where
    unlimited) and a guard page, those that can reuse a stack glibc kept
    (``_idle_thread_stacks``) excepted, and ``ZMQ_MARGIN_BYTES``. Where a thread
    cannot be started, libzmq aborts the process (``Resource temporarily unavailable
    (src/thread.cpp:241)``, exit 134) with nothing of the command's; raised here
    instead, the command ends with ``startup_shortage_text``'s line naming the limit
    (in a run's case, the case's out-of-memory line)."""
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        return
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    if stack == resource.RLIM_INFINITY:
        stack = DEFAULT_STACK_BYTES
    page = os.sysconf("SC_PAGE_SIZE")
    stack = -(-stack // page) * page
    fresh = max(0, io_threads + 1 - _idle_thread_stacks(stack))
    need_address_space(fresh * (stack + page) + ZMQ_MARGIN_BYTES,
                       f"libzmq's {io_threads + 1} threads")



def zmq_context():
    """A new ``zmq.Context`` (one I/O thread), ``need_zmq_threads`` tried first: every
    context the harness makes comes from here, so that under a ``ulimit -v`` too small
    for libzmq's threads the command ends with our out-of-memory line, not libzmq's
    abort. Raises ``MemoryError`` (``need_address_space``)."""
    import zmq

    need_zmq_threads()
    return zmq.Context()

#: The variables OpenBLAS reads its thread count from, the first one set winning.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread() -> None:
    """Before a command imports numpy (and, for ``bench.py report``, scipy): one
    OpenBLAS thread (``OPENBLAS_NUM_THREADS=1``) where the user set none of
    ``BLAS_THREAD_VARIABLES``; also the runner process started by hand
    (``python -m ipc_bench.harness``); the processes the command starts inherit it (a run's
    runners, which ``harness.supervisor`` gives ``OMP_NUM_THREADS=1`` all the same;
    microbench's pyperf workers). OpenBLAS starts a thread per core as it loads, each
    reserving about 40 MB of address space, so under ``ulimit -v`` a command failed at
    higher limits (a run some 40 MB higher on 2 cores), and ``bench.py report`` could
    spin in scipy's OpenBLAS for good with its signals blocked; docs/faults.md
    ("Threads and memory") gives the limits measured with either. No timing changes:
    numpy's OpenBLAS does no work in a run's steps or a microbench's timings
    (``engine.roofline.causal_pairs``' ``np.dot`` is of int64 arrays, which numpy does
    not hand to BLAS), torch uses its own threads (``--torch-threads``), and a report's
    few small matrix products gain nothing from more threads. Where numpy is not
    loaded yet, the address space it needs (``NUMPY_LOAD_BYTES``, more with
    more OpenBLAS threads) is tried first (``need_address_space``): under a
    ``ulimit -v`` too small for it, ``MemoryError``, which ``bench.py`` ends with the
    out-of-memory line naming the limit, where numpy's OpenBLAS ended the process with
    its own line (``Memory allocation still failed after 10 retries``)."""
    if not any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if "numpy" not in sys.modules:
        need_address_space(openblas_load_bytes(NUMPY_LOAD_BYTES), "numpy and its OpenBLAS")


def fds_exhausted() -> bool:
    """Whether this process cannot open one more file descriptor right now
    (``EMFILE``): what libzmq hides behind a refused connection or a silent
    listener when its ``socket()`` or ``accept()`` failed for want of one."""
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
    except OSError as exc:
        return exc.errno == errno.EMFILE
    os.close(fd)
    return False


#: The project's declared dependencies (pyproject.toml ``dependencies``): the name a
#: module is imported by -> the name pip installs it by
#: (tests/cli/test_missing_dependency.py checks this against pyproject.toml).
DEPENDENCIES = {
    "torch": "torch", "numpy": "numpy", "msgspec": "msgspec", "zmq": "pyzmq",
    "pyperf": "pyperf", "pandas": "pandas", "matplotlib": "matplotlib", "tqdm": "tqdm",
    "scipy": "scipy",
}


def missing_dependency_text(exc: BaseException) -> str | None:
    """The line for an ``ImportError`` ``exc`` raised because a declared dependency
    (``DEPENDENCIES``) is not installed in the Python that runs it (named: a shell
    whose ``python`` is not the project's virtual environment is the usual cause):
    ``missing dependency 'zmq' (pyzmq) in /usr/bin/python3: install the project with
    /usr/bin/python3 -m pip install -e . (or run the Python it is installed in)``;
    ``None`` for any other exception (a module of its own missing inside a dependency,
    one of ``ipc_bench``'s, a failure in a module that was found), which the caller
    lets through."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or name not in DEPENDENCIES:
        return None
    dist = DEPENDENCIES[name]
    named = f"'{name}'" + ("" if dist == name else f" ({dist})")
    python = sys.executable or "python3"
    return (f"missing dependency {named} in {python}: install the project with {python} "
            "-m pip install -e . (or run the Python it is installed in)")
