"""The analytic byte model equals real encodings exactly, for 1 to 4,096 requests.

Messages are built by the scheduler's and the runner's own build paths (no
processes): the scheduler schedules a prefill step and then decode steps; the runner
receives each SchedulerOutput through the codec, as the runner process does, and
builds its ModelRunnerOutput. Prompt lengths straddle KV-block boundaries (so some
decode steps allocate blocks), ``num_computed_tokens`` spans 1-, 2- and 3-byte
widths, token ids span every width of a 128,256-token vocabulary, and some requests
finish early (so ``finished_req_ids`` is non-empty in a pure-decode step).
"""

from __future__ import annotations

import random

import pytest

from ipc_bench.analysis import bytemodel as bm
from ipc_bench.wire.codecs import messages_of, model_runner_output_codec, scheduler_output_codec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.workloads import REQ_ID_FORMATS, make_prompt, make_req_id

COUNTS = list(range(1, 17)) + [100, 255, 256, 1000, 4096]
PROMPT_LENS = [1, 15, 16, 17, 100, 127, 128, 255, 256, 300]


def decode_steps(num_reqs: int, policy: str, codec: str, req_id_format: str = "cmpl",
                 vocab_size: int = 128_256, seed: int = 0, num_steps: int = 3,
                 token_ids: str = "uniform", num_spec_tokens: int = 0):
    """(SchedulerOutput, its frame, ModelRunnerOutput, its frame) of each pure-decode step;
    ``token_ids``: the distribution of prompt and sampled ids; ``num_spec_tokens``:
    draft tokens per request (speculative decoding)."""
    cfg = SchedulerConfig(max_num_seqs=num_reqs, max_num_batched_tokens=num_reqs * 400,
                          max_model_len=512, num_blocks=num_reqs * 40,
                          num_spec_tokens=num_spec_tokens)
    sched = Scheduler(cfg, policy, messages_of(codec))
    runner = ModelRunner(cfg, ModelConfig(vocab_size=vocab_size, seed=seed,
                                          token_ids=token_ids), policy, messages_of(codec))
    s_codec = scheduler_output_codec(codec)
    r_codec = model_runner_output_codec(codec)
    rng = random.Random(seed)
    for i in range(num_reqs):
        sched.add_request(make_req_id(seed, i, req_id_format), i,
                          make_prompt(seed, i, rng.choice(PROMPT_LENS), vocab_size,
                                      token_ids),
                          rng.choice([1, 2, 50]))
    steps = []
    for _ in range(num_steps):
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        frame = s_codec.encode(so)
        out = runner.execute_model(s_codec.decode(frame))
        reply = r_codec.encode(out)
        sched.update_from_output(plan, r_codec.decode(reply))
        if plan.is_decode_only and plan.cached_reqs:
            steps.append((so, frame, out, reply))
    return steps


@pytest.mark.parametrize("codec", bm.MODELLED_CODECS)
@pytest.mark.parametrize("policy", ["send", "cached"])
def test_model_equals_payload_bytes(codec, policy):
    checked = 0
    finished_seen = False
    for n in COUNTS:
        steps = decode_steps(n, policy, codec)
        assert steps, f"no pure-decode step at {n} requests"
        for so, frame, out, reply in steps:
            assert bm.predict_scheduler_output(codec, so) == len(frame), (n, "s2r")
            assert bm.predict_model_runner_output(codec, out) == len(reply), (n, "r2s")
            finished_seen |= bool(so.finished_req_ids)
            checked += 1
    assert checked >= len(COUNTS)
    assert finished_seen


@pytest.mark.parametrize("codec", bm.MODELLED_CODECS)
@pytest.mark.parametrize("policy", ["send", "cached"])
@pytest.mark.parametrize("k", [1, 4, 20])
def test_model_equals_payload_bytes_with_draft_tokens(codec, policy, k):
    """Speculative decoding: num_scheduled_tokens of 1 + K, the drafts' map, 1 to K + 1
    sampled ids and K proposed drafts per row (K = 20: arrays over 15 items)."""
    checked = drafted = 0
    for n in (1, 3, 16, 256, 300):
        for so, frame, out, reply in decode_steps(n, policy, codec, num_steps=4,
                                                  num_spec_tokens=k):
            assert bm.predict_scheduler_output(codec, so) == len(frame), (n, "s2r")
            assert bm.predict_model_runner_output(codec, out) == len(reply), (n, "r2s")
            drafted += len(so.scheduled_spec_decode_tokens)
            checked += 1
    assert checked >= 5 and drafted > 256


def test_known_message_with_draft_tokens():
    """One request ``a``, 10 computed tokens, drafts [1, 200], cached, msgpack: 28 bytes
    without drafts (11 + 4 A(1) + 1 + [2 S(a) + 1 + U(10) + 1 + A(0)] + M(1) + U(1) +
    A(0) + 1) plus S(a) + A(2) + U(1) + U(200) = 2 + 1 + 1 + 2 for the drafts' map (its
    empty map's byte becomes the 1-byte header) = 34; num_scheduled_tokens 3 and
    total 3 keep their 1-byte widths."""
    from ipc_bench.engine.messages import CachedRequestData, SchedulerOutput

    so = SchedulerOutput([], CachedRequestData(["a"], [False], [], [([],)], [10]), {"a": 3}, 3,
                         {"a": [1, 200]}, {}, [0], set(), [], {})
    assert len(scheduler_output_codec("msgpack").encode(so)) == 34
    assert bm.predict_scheduler_output("msgpack", so) == 34
    assert bm.scheduler_output_bytes("msgpack", ["a"], [10], [[]], None) == 28
    assert bm.scheduler_output_bytes("msgpack", ["a"], [10], [[]], None,
                                     spec_token_ids=[[1, 200]]) == 34
    # send adds [[t]] whatever the drafts: A(1) - A(0) + 1 + U(t)
    assert (bm.scheduler_output_bytes("msgpack", ["a"], [10], [[]], [70000],
                                      spec_token_ids=[[1, 200]]) == 34 + 6)


@pytest.mark.parametrize("req_id_format", REQ_ID_FORMATS)
@pytest.mark.parametrize("vocab_size", [32_000, 151_936])
def test_model_other_id_formats_and_vocabularies(req_id_format, vocab_size):
    for codec in bm.MODELLED_CODECS:
        for policy in ("send", "cached"):
            for so, frame, out, reply in decode_steps(300, policy, codec, req_id_format,
                                                      vocab_size):
                assert bm.predict_scheduler_output(codec, so) == len(frame)
                assert bm.predict_model_runner_output(codec, out) == len(reply)


def test_pickle_framing_is_modelled():
    # 4,096 requests: the SchedulerOutput pickle spans several 64 KiB frames
    so, frame, _, _ = decode_steps(4096, "send", "pickle", num_steps=2)[0]
    import pickletools
    frames = [arg for op, arg, _ in pickletools.genops(frame) if op.name == "FRAME"]
    assert len(frames) >= 3
    assert bm.predict_scheduler_output("pickle", so) == len(frame)


def test_send_minus_cached_matches_two_model_evaluations():
    rng = random.Random(7)
    for codec in ("msgpack", "pickle"):  # packed: test_packed_send_bytes_per_request
        for n in (1, 2, 3, 100, 999, 1000, 1001):
            ids = [make_req_id(1, i) for i in range(n)]
            toks = [rng.randrange(128_256) for _ in range(n)]
            args = (ids, [rng.randrange(4000) for _ in range(n)], [[]] * n)
            diff = (bm.scheduler_output_bytes(codec, *args, token_ids=toks)
                    - bm.scheduler_output_bytes(codec, *args, token_ids=None))
            assert diff == bm.send_minus_cached_bytes(codec, toks), (codec, n)


def test_widths():
    assert [bm.mp_uint(v) for v in (0, 127, 128, 255, 256, 65535, 65536, 2**32)] == \
        [1, 1, 2, 2, 3, 3, 5, 9]
    assert [bm.pk_int(v) for v in (0, 255, 256, 65535, 65536, 2**31 - 1, 2**31)] == \
        [2, 2, 3, 3, 5, 5, 7]
    assert bm.mp_str("x" * 31) == 32 and bm.mp_str("x" * 32) == 34
    assert bm.pk_str("cmpl-" + "0" * 32 + "-0") == 42
    assert bm.pk_get(255) == 2 and bm.pk_get(256) == 5


def test_expected_bytes_per_request():
    # uniform ids in [0, 128256): 128 ids take 1 msgpack byte, 128 take 2, 65280 take 3,
    # 62720 take 5
    assert bm.expected_token_bytes("msgpack", 128_256) == pytest.approx(
        (128 * 1 + 128 * 2 + 65_280 * 3 + 62_720 * 5) / 128_256)
    assert bm.per_request_send_bytes("msgpack", 128_256) == pytest.approx(4.97505, abs=1e-5)
    assert bm.per_request_send_bytes("pickle", 128_256) == pytest.approx(6.97605, abs=1e-5)
    assert bm.per_request_send_bytes("msgpack", 32_000) == pytest.approx(3.988)


@pytest.mark.parametrize("codec", bm.MODELLED_CODECS)
@pytest.mark.parametrize("policy", ["send", "cached"])
def test_model_equals_payload_bytes_with_zipf_ids(codec, policy):
    widths = set()
    for n in (1, 2, 16, 100, 256, 1000):
        for so, frame, out, reply in decode_steps(n, policy, codec, token_ids="zipf"):
            assert bm.predict_scheduler_output(codec, so) == len(frame), (n, "s2r")
            assert bm.predict_model_runner_output(codec, out) == len(reply), (n, "r2s")
            widths |= {bm.mp_uint(t) for ids in out.sampled_token_ids for t in ids}
    assert widths == {1, 2, 3, 5}


#: (codec, policy, token_ids) -> bytes of the first pure-decode SchedulerOutput at 16
#: running requests of ``decode_steps`` (seed 0), as encoded and as the model predicts.
KNOWN_16 = {
    ("msgpack", "send", "uniform"): 1_198, ("msgpack", "cached", "uniform"): 1_146,
    ("msgpack", "send", "zipf"): 1_182, ("msgpack", "cached", "zipf"): 1_146,
    ("pickle", "send", "uniform"): 1_426, ("pickle", "cached", "uniform"): 1_352,
    ("pickle", "send", "zipf"): 1_412, ("pickle", "cached", "zipf"): 1_352,
}


@pytest.mark.parametrize("key", sorted(KNOWN_16))
def test_known_message_bytes_under_both_distributions(key):
    codec, policy, token_ids = key
    so, frame, _, _ = decode_steps(16, policy, codec, token_ids=token_ids)[0]
    assert (len(frame), bm.predict_scheduler_output(codec, so)) == (KNOWN_16[key],) * 2


def test_expected_bytes_per_request_with_zipf_ids():
    v = 128_256
    harmonic = [0.0]
    for k in range(1, v + 1):
        harmonic.append(harmonic[-1] + 1 / k)

    def share(lo, hi):  # probability of ids in [lo, hi) under 1/(rank+1)
        return (harmonic[hi] - harmonic[lo]) / harmonic[v]

    shares = [share(0, 128), share(128, 256), share(256, 65_536), share(65_536, v)]
    msgpack = 1 + sum(s * w for s, w in zip(shares, (1, 2, 3, 5)))
    pickle = 3 + sum(s * w for s, w in zip(shares, (2, 2, 3, 5)))
    assert bm.per_request_send_bytes("msgpack", v, "zipf") == pytest.approx(msgpack, abs=1e-12)
    assert bm.per_request_send_bytes("pickle", v, "zipf") == pytest.approx(pickle, abs=1e-12)
    assert round(msgpack, 4) == 3.1722 and round(pickle, 4) == 5.6125


def test_expected_bytes_per_request_with_a_histogram(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("token_id,count\n13,2\n200,1\n279,1\n")
    # msgpack widths 1, 2, 3 with probabilities 1/2, 1/4, 1/4
    assert bm.expected_token_bytes("msgpack", 128_256, f"hist:{path}") == 1.75
    assert bm.per_request_send_bytes("pickle", 128_256, f"hist:{path}") == 3 + 2.25


def test_packed_send_bytes_per_request():
    """29 bytes per request once memo references take 5 bytes (about 252 requests), 20
    before, whatever the token ids; ``send_minus_cached_bytes`` refuses packed."""
    rng = random.Random(3)
    per_request = {}
    for n in (1, 100, 256, 1024):
        ids = [make_req_id(1, i) for i in range(n)]
        args = (ids, [rng.randrange(4000) for _ in range(n)], [[]] * n)
        for name, toks in (("small", [rng.randrange(128) for _ in range(n)]),
                           ("large", [rng.randrange(65_536, 128_256) for _ in range(n)])):
            per_request[n, name] = (bm.scheduler_output_bytes("packed", *args, token_ids=toks)
                                    - bm.scheduler_output_bytes("packed", *args,
                                                                token_ids=None))
    assert per_request == {(1, "small"): 21, (1, "large"): 21, (100, "small"): 2_299,
                           (100, "large"): 2_299, (256, "small"): 7_426,
                           (256, "large"): 7_426, (1024, "small"): 29_700,
                           (1024, "large"): 29_700}
    assert bm.per_request_send_bytes("packed", 128_256, "zipf") == 29.0
    with pytest.raises(ValueError, match="packed: send's bytes depend"):
        bm.send_minus_cached_bytes("packed", [1])


def test_bad_input():
    with pytest.raises(ValueError, match="unknown codec 'json'"):
        bm.scheduler_output_bytes("json", ["a"], [1], [[]], None)
    with pytest.raises(ValueError, match="one entry per request"):
        bm.scheduler_output_bytes("msgpack", ["a", "b"], [1], [[]], None)
    so = decode_steps(2, "send", "msgpack", num_steps=1)
    assert so == []  # the first step is a prefill
    cfg = SchedulerConfig(max_num_seqs=2)
    sched = Scheduler(cfg, "send")
    sched.add_request("a", 0, [1, 2], 4)
    prefill = sched.build_scheduler_output(sched.schedule())
    with pytest.raises(ValueError, match="not a pure-decode SchedulerOutput"):
        bm.predict_scheduler_output("msgpack", prefill)


def test_fit_linear_exact_line():
    fit = bm.fit_linear([1, 2, 4, 8], [13.0, 16.0, 22.0, 34.0])
    assert fit["fixed"] == pytest.approx(10.0)
    assert fit["per_unit"] == pytest.approx(3.0)
    assert fit["r2"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 3"):
        bm.fit_linear([1, 2], [1, 2])


def _summary(workload, policy, arm, codec="msgpack"):
    return dict(workload=workload, codec=codec, policy=policy, arm=arm, repetition=0)


def test_the_cached_arm_is_named_as_the_summaries_name_it():
    summaries = [_summary("b=4", "send", "send"), _summary("b=4", "cached", "cached"),
                 _summary("b=4,pp=2", "send", "send"), _summary("b=4,pp=2", "cached", "direct"),
                 _summary("b=8", "send", "send"), _summary("b=8", "send", "send'"),
                 _summary("b=9", "cached", "cached"), _summary("b=9", "cached", "async"),
                 _summary("b=9", "cached", "x"), _summary("b=9", "cached", "y", "pickle"),
                 _summary("b=9", "cached", "z", "pickle")]
    assert bm.cached_arm_of(summaries) == {("b=4", "msgpack"): "cached",
                                           ("b=4,pp=2", "msgpack"): "direct",
                                           ("b=9", "msgpack"): "cached"}


def test_the_byte_model_line_names_the_arms():
    from ipc_bench.report.tables import format_byte_model

    row = dict(workload="num_running=16,pp=2", codec="msgpack", arm="send", policy="send",
               vocab_size=128_256, token_ids="uniform", messages_checked=200, mismatches=0,
               model_send_minus_cached_bytes_per_request=4.95625,
               uniform_send_minus_cached_bytes_per_request=4.9750499,
               expected_send_minus_cached_bytes_per_request=4.9750499,
               cached_arm="direct", measured_send_minus_cached_bytes_per_request=4.95)
    assert format_byte_model([row]).splitlines()[-1] == (
        "  [num_running=16,pp=2] msgpack send: 200 of 200 messages exact (both directions); "
        "send - direct = 4.956 B per running request on these steps (uniform ids in a "
        "128,256 vocabulary: 4.975 per id with its own framing, not the outer list's; measured "
        "over the run: 4.950)")


def test_the_difference_names_only_what_ran():
    """The bytes send's ids add are named by the arms that ran beside the case, else by
    the policies where cached ran elsewhere (overhead: arms steps and totals), else by
    the send arm alone (--policies send, with or without --aa)."""
    assert bm.send_difference("send", "cached", True) == "send - cached"
    assert bm.send_difference("send", "direct", True) == "send - direct"
    assert bm.send_difference("steps", None, True) == "send - cached"
    assert bm.send_difference("send", None, False) == "token ids in send"
    assert bm.send_difference("send'", None, False) == "token ids in send'"


def test_the_byte_model_line_of_a_run_without_cached():
    from ipc_bench.report.tables import format_byte_model

    row = dict(workload="num_running=4,pp=1", codec="msgpack", arm="send", policy="send",
               vocab_size=128_256, token_ids="uniform", messages_checked=60, mismatches=0,
               model_send_minus_cached_bytes_per_request=4.95625,
               uniform_send_minus_cached_bytes_per_request=4.9750499,
               expected_send_minus_cached_bytes_per_request=4.9750499,
               cached_arm=None, difference="token ids in send")
    assert format_byte_model([row]).splitlines()[-1] == (
        "  [num_running=4,pp=1] msgpack send: 60 of 60 messages exact (both directions); "
        "token ids in send = 4.956 B per running request on these steps (uniform ids in a "
        "128,256 vocabulary: 4.975 per id with its own framing, not the outer list's)")
