#!/usr/bin/env bash
# The GPU checks of one short device session, in one command: the CUDA tests, then
# scripts/gpu_check.py, with every log and run folder packed into a few files under
# OUT_DIR (a lent machine sends back only a few files; docs/models-and-gpu.md, "One
# device session").
#
#   bash scripts/device_check.sh OUT_DIR [gpu_check.py options, e.g. --stages 1,6]
#
# What lands in OUT_DIR: device-check.log (everything printed, as it came),
# environment.txt (nvidia-smi -q, torch, Python), gpu-check.tar.gz (gpu_check.py's run
# folders and stage logs). msgspec, pyzmq or pyperf missing from the Python in use
# (PYTHON, default python3) are installed from the git-ignored wheels/ folder into a
# temporary folder put on PYTHONPATH (fetching them: scripts/gpu_check.py's docstring):
# only those for the running Python (its cpXY tag, abi3 for its version or an older
# one, or pure Python; pip picks the newest such wheel of each), so a wheels/ that also
# holds another Python's is no refusal; a package it lacks with no such wheel is
# refused, named. The CUDA tests get at most TESTS_LIMIT_S seconds (default 60: their cold flex
# compiles; cut there they count as failed and the check still runs); gpu_check.py its
# own --budget-s where given, else what is left of DEADLINE_S (default 560 s, the
# whole script, below a lent machine's 600 s per command) once the tests are done, less
# the time to cut a stage and pack (PACK_MARGIN_S, 30 s): about 450 s, more than its
# default 300 s, since its time plan puts all its stages at about 477 s
# (docs/models-and-gpu.md, "The time plan"). Exit status: gpu_check.py's (0, 1 for a failed or
# cut stage), else 1 when only the tests failed; 130 / 143 / 129 on SIGINT / SIGTERM /
# SIGHUP (what the check wrote by then is packed); 2 for bad use, gpu_check.py options
# it refuses (checked before the tests), pytest missing or missing packages.
set -uo pipefail
#: Seconds kept, out of DEADLINE_S, for cutting a stage (gpu_check.py's 15 s grace) and
#: packing its folders.
PACK_MARGIN_S=30

usage="usage: bash scripts/device_check.sh OUT_DIR [gpu_check.py options]"
[ $# -ge 1 ] || { echo "device_check.sh: $usage" >&2; exit 2; }
out=$1
shift
case $out in -*) echo "device_check.sh: $usage" >&2; exit 2 ;; esac
for arg in "$@"; do
    case $arg in --output|--output=*)
        echo "device_check.sh: the run folders go into OUT_DIR/gpu-check.tar.gz;" \
             "drop --output" >&2
        exit 2 ;;
    esac
done
case ${DEADLINE_S:-560} in ''|*[!0-9]*)
    echo "device_check.sh: DEADLINE_S must be a whole number of seconds, not" \
         "'${DEADLINE_S}'" >&2
    exit 2 ;;
esac
# OUT_DIR is taken from where the command is run, then the repository root is the
# working folder.
mkdir -p "$out" 2>/dev/null && [ -w "$out" ] || {
    echo "device_check.sh: cannot write to $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 2
python=${PYTHON:-python3}
log=$out/device-check.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# SIGINT, SIGTERM or SIGHUP: the running command gets SIGTERM (a background command of
# a script inherits SIGINT ignored, and gpu_check.py passes SIGTERM on to its stage,
# which writes what it measured), the script waits for it, packs what the check wrote
# and exits 130 / 143 / 129. The log's tee ignores them, so no line is lost. The trap
# only notes the signal, and what comes after it may be the next step's start: every
# step is started by start (through run or quiet), which starts nothing once a signal
# came (the script then stops with its line), and SIGTERMs at once a command whose
# signal came as it was forked (before $child named it to the trap).
signalled=0
child=
on_signal() {
    signalled=$1
    [ -z "$child" ] || kill -TERM "$child" 2>/dev/null
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP
stop_if_signalled() {  # where a signal came: one line saying where, and its code
    if [ "$signalled" -ne 0 ]; then
        say "device_check.sh: interrupted $1 (exit $signalled)" >&2
        exit "$signalled"
    fi
}
start() {  # "$@" in the background as $child; returns the signal's code, starting
    # nothing, where a signal came (its caller says the line: not under its redirections)
    [ "$signalled" -eq 0 ] || return "$signalled"
    "$@" &
    child=$!
    [ "$signalled" -eq 0 ] || kill -TERM "$child" 2>/dev/null
    return 0
}
await_child() {  # wait for $child through any trapped signal; returns its exit status
    while kill -0 "$child" 2>/dev/null; do
        wait "$child"
    done
    wait "$child"
    local rc=$?
    child=
    return $rc
}
run() {  # "$@" with its output on stdout and in the log; returns its exit status
    # The tee is waited for (about 10 s at most: a process the command left behind may
    # hold the pipe; not once a signal came) before the next line is said, which could
    # otherwise land inside the command's last line in the log and on stdout.
    local teed tee_pid rc tries
    [ "$signalled" -eq 0 ] || return "$signalled"
    exec {teed}> >(trap '' INT TERM HUP; exec tee -a "$log")
    tee_pid=$!
    start "$@" >&"$teed" 2>&1
    rc=$?
    exec {teed}>&-
    [ -z "$child" ] || { await_child; rc=$?; }
    for ((tries = 0; tries < 200 && signalled == 0; tries++)); do
        kill -0 "$tee_pid" 2>/dev/null || break
        sleep 0.05
    done
    return $rc
}
quiet() {  # "$@" as a background command, so that a signal stops it at once
    start "$@" || return
    await_child
}
wheel_fits() {  # whether wheel file $1 installs on this Python ($tag, cpXY): its
    # Python tag names cpXY (cpXY-cpXY), it is abi3 for cpXW with W at most Y (abi3
    # holds only the stable ABI of that version and later ones), or it is pure Python 3
    local stem=${1%.whl} py abi p
    stem=${stem%-*}
    abi=${stem##*-}
    stem=${stem%-*}
    py=${stem##*-}
    case $abi in
        none) case .$py. in *.py3.*) return 0 ;; esac ;;
        abi3)
            for p in ${py//./ }; do
                case $p in cp3[0-9]|cp3[0-9][0-9])
                    [ "$((10#${p#cp3}))" -le "$((10#${tag#cp3}))" ] && return 0 ;;
                esac
            done ;;
        *) case .$py. in *".$tag."*) return 0 ;; esac ;;
    esac
    return 1
}

# The installed wheels and the check's run folders live in temporary folders, removed
# at the end (what the check wrote is packed into OUT_DIR first).
temps=()
trap 'rm -rf "${temps[@]}"' EXIT
if ! quiet "$python" -c 'import pytest' 2>/dev/null; then
    stop_if_signalled "as it started"
    echo "device_check.sh: pytest is missing from $python (the CUDA tests need it:" \
         "$python -m pip install pytest, or the project's test extra)" >&2
    exit 2
fi
if ! quiet "$python" -c 'import msgspec, zmq, pyperf' 2>/dev/null; then
    stop_if_signalled "as it started"
    shopt -s nullglob
    wheels=(wheels/*.whl)
    if [ ${#wheels[@]} -eq 0 ]; then
        echo "device_check.sh: msgspec, pyzmq or pyperf is missing from $python and" \
             "wheels/ holds no wheel (scripts/gpu_check.py's docstring says how to fetch" \
             "them; or give PYTHON=PATH a Python that has them, e.g. the project's" \
             ".venv/bin/python)" >&2
        exit 2
    fi
    # the distributions with a wheel for this Python: its cpXY tag, the stable ABI
    # (abi3, built for CPython 3.N and taken by 3.N and newer only) or pure Python; pip
    # then picks the newest such wheel of each from wheels/ (--find-links) and leaves
    # the others
    tag=$("$python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])') || exit 2
    names=()
    for wheel in "${wheels[@]}"; do
        file=${wheel##*/}
        wheel_fits "$file" || continue
        name=${file%%-*}
        case " ${names[*]} " in *" $name "*) ;; *) names+=("$name") ;; esac
    done
    # each package missing from this Python must have a wheel here: else pip's refusal
    # would name whichever came first, or the install would succeed without it
    lacking=()
    for pair in msgspec:msgspec zmq:pyzmq pyperf:pyperf; do
        quiet "$python" -c "import ${pair%%:*}" 2>/dev/null && continue
        stop_if_signalled "as it started"
        case " ${names[*]} " in *" ${pair#*:} "*) ;; *) lacking+=("${pair#*:}") ;; esac
    done
    if [ ${#lacking[@]} -gt 0 ]; then
        which=${lacking[0]}
        for ((i = 1; i < ${#lacking[@]}; i++)); do
            if [ "$i" -eq $((${#lacking[@]} - 1)) ]; then which+=" and ${lacking[i]}"
            else which+=", ${lacking[i]}"
            fi
        done
        [ ${#lacking[@]} -eq 1 ] && which+=" is" || which+=" are"
        echo "device_check.sh: $which missing from $python and wheels/ holds no wheel" \
             "for it ($tag): ${wheels[*]##*/}" >&2
        exit 2
    fi
    site=$(mktemp -d "${TMPDIR:-/tmp}/device-check-site-XXXXXX") || exit 2
    temps+=("$site")
    quiet "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --find-links wheels --target "$site" "${names[@]}" >>"$log" 2>&1 || {
        stop_if_signalled "while installing wheels/"
        echo "device_check.sh: installing wheels/ for $tag failed (see $log)" >&2; exit 2; }
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
    "$python" -c 'import msgspec, zmq, pyperf' 2>>"$log" || {
        echo "device_check.sh: msgspec, pyzmq or pyperf does not import after" \
             "installing wheels/ (see $log)" >&2; exit 2; }
    installed=("$site"/*.dist-info)
    installed=("${installed[@]##*/}")
    say "installed from wheels/ for $tag: ${installed[*]%.dist-info}"
fi
export PYTHONUNBUFFERED=1
# gpu_check.py's options are checked before the tests spend device time on them.
# (a script's background command reads /dev/null, so the code goes in -c)
quiet "$python" -c 'import sys; sys.path.insert(0, "scripts"); import gpu_check
gpu_check.build_parser().parse_args(sys.argv[1:])' "$@" || {
    stop_if_signalled "while checking the options"; exit 2; }
stop_if_signalled "while checking the options"

env_file=$out/environment.txt
date -u +%Y-%m-%dT%H:%M:%SZ >"$env_file"
quiet "$python" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' >>"$env_file" 2>&1
stop_if_signalled "while reading the environment"
if command -v nvidia-smi >/dev/null; then
    quiet nvidia-smi -q >>"$env_file" 2>&1
else
    echo "no nvidia-smi" >>"$env_file"
fi
stop_if_signalled "while reading the environment"

say "== CUDA tests (at most ${TESTS_LIMIT_S:-60} s)"
stop_if_signalled "before the CUDA tests"
# -o addopts: the project's own name xdist's --dist, which a pytest without pytest-xdist
# refuses (exit 4)
run timeout -k 10 "${TESTS_LIMIT_S:-60}" "$python" -m pytest -q -p no:cacheprovider \
    -o "addopts=-ra -m 'not slow'" \
    tests/engine/test_cuda_step.py tests/engine/test_device_inputs.py
tests_rc=$?
say "== CUDA tests: exit $tests_rc"
if [ "$signalled" -ne 0 ]; then
    say "device_check.sh: interrupted during the CUDA tests (exit $signalled)" >&2
    exit "$signalled"
fi

# Without a --budget-s of the user's, the check gets what is left of DEADLINE_S (more
# than its default where the tests left more), so that a cut stage is written and
# packed before the machine's limit ends the command.
budget=()
case " $* " in *" --budget-s "*|*" --budget-s="*) ;; *)
    left=$(( 10#${DEADLINE_S:-560} - SECONDS - PACK_MARGIN_S ))  # 10#: 0600 is not octal
    if [ "$left" -lt 30 ]; then
        stop_if_signalled "after the CUDA tests, before scripts/gpu_check.py"
        say "device_check.sh: $(( left > 0 ? left : 0 )) s of DEADLINE_S=${DEADLINE_S:-560}" \
            "left after the tests and packing's ${PACK_MARGIN_S} s: too little for" \
            "scripts/gpu_check.py (at least 30 s), not run"
        exit 1
    fi
    budget=(--budget-s "$left") ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/device-check-XXXXXX") || exit 2
temps+=("$work")
stop_if_signalled "after the CUDA tests, before scripts/gpu_check.py"
given=("${budget[@]}" "$@")
say "== scripts/gpu_check.py${given[*]:+ ${given[*]}}"
stop_if_signalled "after the CUDA tests, before scripts/gpu_check.py"
run "$python" scripts/gpu_check.py --output "$work/gpu-check" "${budget[@]}" "$@"
check_rc=$?
say "== scripts/gpu_check.py: exit $check_rc"
if [ -d "$work/gpu-check" ] && tar -czf "$out/gpu-check.tar.gz" -C "$work" gpu-check \
        2>>"$log"; then
    # gpu_check.py's last line names $work/gpu-check, removed as this script ends
    say "== $work/gpu-check (run folders and stage logs) packed as $out/gpu-check.tar.gz; $work is removed"
else
    rm -f "$out/gpu-check.tar.gz"
    if [ "$signalled" -ne 0 ]; then
        say "device_check.sh: interrupted during scripts/gpu_check.py, before it wrote a run folder (exit $signalled)" >&2
        exit "$signalled"
    fi
    echo "device_check.sh: gpu_check.py left no run folder to pack" | tee -a "$log" >&2
fi
if [ "$signalled" -ne 0 ]; then
    say "device_check.sh: interrupted during scripts/gpu_check.py (exit $signalled)" >&2
    exit "$signalled"
fi
if [ "$check_rc" -ne 0 ]; then
    exit "$check_rc"
fi
[ "$tests_rc" -eq 0 ] || exit 1
exit 0
