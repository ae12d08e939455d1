"""Case summaries of a tp-broadcast run for the tests of its figures (``tp_cases``:
send and cached at each N of each transport, codec and running-request count), the
bytes that reach the N ranks (``reaching``) and the lines a panel draws
(``drawn_lines``)."""

from __future__ import annotations

from typing import Callable

from test_withheld_timings import tp_summary


def tp_cases(figures: Callable[[dict], dict], n_cores: int,
             transports: tuple = (("ipc", (1, 2)),), codecs: tuple = ("msgpack",),
             num_running: tuple = (8,)) -> list[dict]:
    """``tp_summary``s on ``n_cores`` cores of send and cached at each N of each
    ``(transport, Ns)`` of ``transports``, for each codec and running-request count
    (the outermost loop), with ``figures(case)``'s figures (the case's policy, tp,
    transport, codec and num_running are there to read) over the summary's own. Case
    ids ``POLICY-TRANSPORT-CODEC-N-RUNNING``."""
    out = []
    for b in num_running:
        for codec in codecs:
            for transport, ns in transports:
                for n in ns:
                    for policy in ("send", "cached"):
                        case = tp_summary(
                            policy, n, n_cores, transport=transport, codec=codec,
                            num_running=b, case_id=f"{policy}-{transport}-{codec}-{n}-{b}",
                            workload=f"broadcast={transport},num_running={b},tp={n}")
                        out.append(dict(case, **figures(case)))
    return out


def reaching(case: dict, written: float) -> float:
    """The bytes that reach ``case``'s N ranks all together for ``written`` bytes
    written once: XPUB's frame N times over ipc, a ring's chunk once."""
    return written * (case["tp"] if case["transport"] == "ipc" else 1)


def drawn_lines(ax) -> dict[str, tuple[list, list]]:
    """The labelled lines the panel ``ax`` draws: label -> (x, y)."""
    return {ln.get_label(): (ln.get_xdata().tolist(), ln.get_ydata().tolist())
            for ln in ax.lines if not ln.get_label().startswith("_")}
