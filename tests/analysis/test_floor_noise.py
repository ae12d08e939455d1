"""A noisy floor (its 50-step mean floor step times spread over 10 % of their mean) is
warned about with the case, in the step-time noise warning's style; a steady one is not.
A send / cached pair whose floors differ by more than their frames explain is noted."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ipc_bench.analysis.summary import (FLOOR_PAIR_EXCESS, NOISY_FLOOR_BLOCK_CV,
                                        floor_figures, floor_noise_warning,
                                        floor_pair_notes, noise_warnings)

#: 200 floor steps: four 50-step blocks of 50, 50, 100 and 50 µs (block means 62.5 µs
#: on average, standard deviation 25 µs: 40 %).
NOISY = np.repeat([50_000, 50_000, 100_000, 50_000], 50).astype(np.int64)
#: 200 floor steps alternating 50 and 52 µs: every block's mean is 51 µs.
STEADY = np.tile([50_000, 52_000], 100).astype(np.int64)
NOISY_WARNING = ("the standard deviation of 50-step mean floor step times is 40.0 % of "
                 "their mean (> 10 %): the machine may be noisy, and the floor tok/s and "
                 "x floor with it")


def _case(floor_step_ns: np.ndarray) -> dict:
    """A two-process case of 200 counted steps of 100 µs, 800 output tokens, with the
    floor figures ``summarize_case`` writes for floor rows ``floor_step_ns``."""
    return dict(num_steps=200, step_ns_block_cv=0.01,
                **floor_figures(floor_step_ns, 800, 200 * 100_000))


def test_a_noisy_floor_carries_the_warning():
    case = _case(NOISY)
    assert case["floor_step_ns_block_cv"] == 0.4
    assert case["floor_step_ns_median"] == 50_000.0  # the median alone hides it
    assert noise_warnings(case) == [NOISY_WARNING]


def test_a_steady_floor_carries_none():
    case = _case(STEADY)
    assert case["floor_step_ns_block_cv"] == 0.0
    assert noise_warnings(case) == []


def test_the_threshold_is_exclusive_and_printed_above_it():
    assert NOISY_FLOOR_BLOCK_CV == 0.10
    assert floor_noise_warning(dict(floor_step_ns_block_cv=0.10)) is None
    assert floor_noise_warning(dict(floor_step_ns_block_cv=0.1004)).startswith(
        "the standard deviation of 50-step mean floor step times is 10.04 % of their mean")


def test_a_case_without_a_floor_of_three_blocks_is_not_checked():
    short = _case(NOISY[:149])  # two whole blocks
    assert short["floor_step_ns_block_cv"] is None
    assert noise_warnings(short) == []
    assert floor_noise_warning({}) is None  # no floor (--no-floor, timed replays)


def test_both_noise_warnings_are_given_apart():
    case = dict(_case(NOISY), step_ns_block_cv=0.2)
    assert noise_warnings(case) == [
        "the standard deviation of 50-step mean step times is 20.0 % of their mean "
        "(> 10 %): the machine may be noisy", NOISY_WARNING]


def _twin(policy: str, floor_ns: float, encode_ns: float, decode_ns: float) -> dict:
    """A summary entry of an azure-conv case of ``policy`` with a floor of mean
    ``floor_ns`` and its encode and decode per step (ns, both directions)."""
    return dict(case_id=f"trace=azure-conv:30/{policy}/msgpack#0", scenario="azure-conv",
                workload="trace=azure-conv:30", policy=policy, arm=policy, codec="msgpack",
                transport="ipc", repetition=0, async_scheduling=False,
                schedule_digest="a2decc0f", floor_step_ns_mean=floor_ns,
                encode_ns_per_step=encode_ns, decode_ns_per_step=decode_ns)


#: The floors of a trace run on a loaded machine: cached's 2.8x send's, although their
#: encode + decode per step make send's the longer, by 3.2 µs: 166.2 + 3.2 µs are noise.
LOADED = [_twin("send", 92_586.9, 6_271.6, 20_587.4), _twin("cached", 258_790.5, 5_957.7,
                                                            17_725.8)]
LOADED_NOTE = (
    "the floors of trace=azure-conv:30/send/msgpack#0 and "
    "trace=azure-conv:30/cached/msgpack#0 differ the other way from what their frames "
    "explain: mean "
    "floor step 92.6 µs against 258.8 µs (cached's 166.2 µs longer) while their encode + "
    "decode per step make send's 3.2 µs longer: the 169.4 µs the frames do not explain, "
    "over 25 % of the faster floor, are the machine's noise, so their floor tok/s and x "
    "floor are not comparable")


def test_twin_floors_apart_by_more_than_their_frames_are_noted():
    assert floor_pair_notes(LOADED) == [LOADED_NOTE]
    assert floor_pair_notes(LOADED[::-1]) == [LOADED_NOTE]  # send's first, whatever order


def test_the_note_says_whether_the_floors_differ_by_more_or_less_than_the_frames():
    """Send's floor longer than cached's, as the frames make it, by more than the frames
    explain, or by less (send's codec 40 µs longer, its floor 8 µs longer: 32 µs
    unexplained, over 25 % of a 50 µs floor)."""
    def pair(send_floor_ns, cached_floor_ns, send_decode_ns):
        return [_twin("send", send_floor_ns, 6_000.0, send_decode_ns),
                _twin("cached", cached_floor_ns, 6_000.0, 17_000.0)]
    (more,) = floor_pair_notes(pair(150_000.0, 50_000.0, 20_200.0))
    assert "differ by more than their frames explain: mean floor step 150.0 µs against " \
           "50.0 µs (send's 100.0 µs longer) while their encode + decode per step make " \
           "send's 3.2 µs longer: the 96.8 µs the frames" in more
    (less,) = floor_pair_notes(pair(58_000.0, 50_000.0, 57_000.0))
    assert "differ by less than their frames explain: mean floor step 58.0 µs against " \
           "50.0 µs (send's 8.0 µs longer) while their encode + decode per step make " \
           "send's 40.0 µs longer: the 32.0 µs the frames" in less


def test_twin_floors_within_the_excess_are_not_noted():
    # send's floor 20 µs longer, 3.2 µs of them the codec's: 16.8 µs under 25 % of 72.6
    # µs (18.1 µs)
    near = [LOADED[0], dict(LOADED[1], floor_step_ns_mean=72_586.9)]
    assert FLOOR_PAIR_EXCESS == 0.25
    assert floor_pair_notes(near) == []
    # cached's 15 µs longer while the codec makes send's 3.2 µs longer: 18.2 µs
    # unexplained, under 25 % of 92.6 µs (23.1 µs), not noted; 21 µs longer: 24.2 µs, noted
    assert floor_pair_notes([LOADED[0], dict(LOADED[1], floor_step_ns_mean=107_586.9)]) == []
    far = floor_pair_notes([LOADED[0], dict(LOADED[1], floor_step_ns_mean=113_586.9)])
    assert far == [LOADED_NOTE.replace("258.8", "113.6").replace("166.2", "21.0")
                   .replace("169.4", "24.2")]
    # a pair whose codecs differ as much as the floors: the frames explain it
    costly = [LOADED[0], dict(LOADED[1], decode_ns_per_step=17_725.8 + 170_000)]
    assert floor_pair_notes(costly) == []


def test_only_twins_of_the_same_batches_and_a_stateless_codec_are_compared():
    other = [LOADED[0], dict(LOADED[1], schedule_digest="0000")]
    assert floor_pair_notes(other) == []
    slots = [dict(c, codec="slots") for c in LOADED]
    assert floor_pair_notes(slots) == []
    no_floor = [LOADED[0], dict(LOADED[1], floor_step_ns_mean=float("nan"))]
    assert floor_pair_notes(no_floor) == []


def test_the_report_lists_the_note_under_measurement_warnings():
    import pandas as pd

    from ipc_bench.report.blocks import _warning_blocks

    cases = pd.DataFrame([dict(c, warnings=[]) for c in LOADED])
    cases.loc[0, "arm"] = float("nan")  # as a record of a case without an arm reads
    blocks = _warning_blocks(SimpleNamespace(cases=cases), 2)
    assert blocks == [("h", 2, "Measurement warnings"),
                      ("p", "Floors of send / cached twins (the run printed these as "
                            "`note:` lines):"),
                      ("ul", [LOADED_NOTE])]
    assert _warning_blocks(SimpleNamespace(cases=cases.iloc[:1]), 2) == []


def _tp_twins(n_cores: int) -> list[dict]:
    """``LOADED`` as the two cases of a ``--tp 2`` run on ``n_cores`` cores."""
    return [dict(c, scenario="tp-broadcast", tp=2, tp_cores=n_cores,
                 tp_timings_withheld=n_cores < 4) for c in LOADED]


def test_twins_whose_timings_are_withheld_are_not_noted():
    """A --tp / --pp pair on fewer than N + 2 cores shows floor tok/s and x floor as
    ``-`` already (``analysis.cores``): no note says they are not comparable, in the
    run's notes or the report's measurement warnings."""
    import pandas as pd

    from ipc_bench.report.blocks import _warning_blocks

    assert floor_pair_notes(_tp_twins(2)) == []
    assert floor_pair_notes(_tp_twins(4)) == [LOADED_NOTE]
    pp = [dict(c, tp=None, tp_cores=None, tp_timings_withheld=None, pp=2, pp_cores=2,
               pp_timings_withheld=True) for c in _tp_twins(2)]
    assert floor_pair_notes(pp) == []
    held = pd.DataFrame([dict(c, warnings=[]) for c in _tp_twins(2)])
    assert _warning_blocks(SimpleNamespace(cases=held), 2) == []
