"""Tests for ipc_bench.engine.traces: the real Azure traces, every error kind, and a fuzz test.

The real traces are read from the shared data directory next to the checkout
(``<checkout>/../shared/traces``); they are never copied into the project. The expected
values come from that directory's README.md (computed there with pandas).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipc_bench.engine import traces
from ipc_bench.engine.traces import COLUMNS, Trace, TraceError, load_azure_trace

TRACE_DIR = Path(__file__).resolve().parents[3] / "shared" / "traces"
CONV = TRACE_DIR / "AzureLLMInferenceTrace_conv.csv"
CODE = TRACE_DIR / "AzureLLMInferenceTrace_code.csv"

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
ROW1 = "2023-11-16 18:15:46.6805900,374,44"
ROW2 = "2023-11-16 18:15:50.9951690,396,109"
ROW3 = "2023-11-16 18:15:51.2224670,879,55"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"Azure trace not found at {path} (expected in shared/traces next to the checkout)")
    return path


def write(tmp_path: Path, content: str | bytes, name: str = "trace.csv") -> Path:
    p = tmp_path / name
    p.write_bytes(content.encode("ascii") if isinstance(content, str) else content)
    return p


def csv_text(*lines: str, eol: str = "\r\n", final_eol: bool = False) -> str:
    return eol.join(lines) + (eol if final_eol else "")


def expect_error(path: Path, message: str, **kwargs) -> None:
    with pytest.raises(TraceError) as info:
        load_azure_trace(path, **kwargs)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


# --- the real traces -------------------------------------------------------------------


@pytest.fixture(scope="module")
def conv() -> Trace:
    return load_azure_trace(_need(CONV))


@pytest.fixture(scope="module")
def code() -> Trace:
    return load_azure_trace(_need(CODE))


def test_conv_trace_matches_readme(conv: Trace) -> None:
    assert len(conv) == 19_366
    assert conv.path == str(CONV)
    assert conv.arrival_s.dtype == np.float64
    assert conv.prompt_lens.dtype == np.int64 and conv.output_lens.dtype == np.int64
    assert conv.arrival_s.shape == conv.prompt_lens.shape == conv.output_lens.shape == (19_366,)
    assert (conv.prompt_lens[0], conv.output_lens[0]) == (374, 44)
    assert conv.arrival_s[0] == 0.0
    # 18:15:50.9951690 - 18:15:46.6805900 (rows 1 and 2 of the file).
    assert conv.arrival_s[1] == pytest.approx(4.314579, abs=1e-9)
    # last - first: 19:14:08.4025270 - 18:15:46.6805900.
    assert conv.arrival_s[-1] == pytest.approx(3501.721937, abs=1e-9)
    assert int(conv.prompt_lens.sum()) == 22_361_870
    assert int(conv.output_lens.sum()) == 4_088_665
    assert (conv.prompt_lens.min(), conv.prompt_lens.max()) == (2, 14050)
    assert (conv.output_lens.min(), conv.output_lens.max()) == (7, 1000)
    assert np.all(np.diff(conv.arrival_s) > 0)  # README: strictly increasing


def test_code_trace_matches_readme(code: Trace) -> None:
    assert len(code) == 8_819
    assert code.arrival_s[0] == 0.0
    assert code.arrival_s[-1] == pytest.approx(3435.948056, abs=1e-9)
    assert int(code.prompt_lens.sum()) == 18_059_974
    assert int(code.output_lens.sum()) == 245_896
    assert (code.prompt_lens.min(), code.prompt_lens.max()) == (3, 7437)
    assert float(np.diff(code.arrival_s).max()) == pytest.approx(217.2, abs=0.05)


def test_max_requests_reads_a_prefix(conv: Trace) -> None:
    part = load_azure_trace(CONV, max_requests=300)
    assert len(part) == 300
    np.testing.assert_array_equal(part.arrival_s, conv.arrival_s[:300])
    np.testing.assert_array_equal(part.prompt_lens, conv.prompt_lens[:300])
    np.testing.assert_array_equal(part.output_lens, conv.output_lens[:300])
    assert len(load_azure_trace(CONV, max_requests=10**9)) == 19_366


def test_head(conv: Trace) -> None:
    h = conv.head(5)
    assert isinstance(h, Trace) and len(h) == 5 and h.path == conv.path
    assert list(h.prompt_lens) == list(conv.prompt_lens[:5])
    assert h.arrival_s[0] == 0.0
    assert len(conv.head(0)) == 0
    assert len(conv.head(10**9)) == len(conv)
    with pytest.raises(ValueError):
        conv.head(-1)


def test_arrays_are_read_only(conv: Trace) -> None:
    with pytest.raises(ValueError):
        conv.prompt_lens[0] = 1
    with pytest.raises(ValueError):
        conv.head(3).arrival_s[0] = 1.0


# --- accepted variants -----------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\r\n", "\n", "\r"], ids=["crlf", "lf", "cr"])
@pytest.mark.parametrize("final_eol", [False, True], ids=["no-final-eol", "final-eol"])
@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
def test_line_endings_trailing_newline_and_bom(tmp_path, eol, final_eol, bom) -> None:
    text = csv_text(HEADER, ROW1, ROW2, ROW3, eol=eol, final_eol=final_eol)
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("ascii")
    t = load_azure_trace(write(tmp_path, data))
    assert len(t) == 3
    assert list(t.prompt_lens) == [374, 396, 879]
    assert list(t.output_lens) == [44, 109, 55]
    assert t.arrival_s[1] == pytest.approx(4.314579, abs=1e-12)
    assert t.arrival_s[2] == pytest.approx(4.541877, abs=1e-12)


def test_fractional_digits_parsed_exactly(tmp_path) -> None:
    rows = [
        "2023-11-16 23:59:59,1,1",
        "2023-11-16 23:59:59.0000001,1,1",
        "2023-11-16 23:59:59.1,1,1",
        "2023-11-16 23:59:59.123456789,1,1",
        "2023-11-17 00:00:00.000000001,1,1",  # crosses midnight
    ]
    t = load_azure_trace(write(tmp_path, csv_text(HEADER, *rows)))
    assert list(t.arrival_s) == [0.0, 1e-7, 0.1, 0.123456789, 1.000000001]


def test_equal_timestamps_allowed(tmp_path) -> None:
    t = load_azure_trace(write(tmp_path, csv_text(HEADER, ROW1, ROW1, ROW2)))
    assert list(t.arrival_s[:2]) == [0.0, 0.0]


def test_max_requests_stops_before_a_bad_row(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1, ROW2, "garbage", "x" * 5000))
    t = load_azure_trace(p, max_requests=2)
    assert len(t) == 2
    with pytest.raises(TraceError, match=r"line 4: expected 3 fields"):
        load_azure_trace(p)


def test_accepts_pathlike_and_str(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1))
    assert load_azure_trace(str(p)).path == str(p)
    assert load_azure_trace(p).path == str(p)


# --- one test per error kind -----------------------------------------------------------


def test_missing_file(tmp_path) -> None:
    p = tmp_path / "nope.csv"
    expect_error(p, f"no such trace file: {p}")
    expect_error(p / "below", f"no such trace file: {p / 'below'}")


def test_unreadable_file(tmp_path, monkeypatch) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1))

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(traces, "open", deny, raising=False)
    expect_error(p, f"cannot read trace file: {p} (Permission denied)")


def test_directory(tmp_path) -> None:
    expect_error(tmp_path, f"{tmp_path}: is a directory, not a trace file")


def test_empty_file(tmp_path) -> None:
    p = write(tmp_path, b"")
    expect_error(p, f"{p} line 1: empty file; expected header '{HEADER}'")


def test_header_missing(tmp_path) -> None:
    p = write(tmp_path, csv_text(ROW1, ROW2))
    expect_error(p, f"{p} line 1: header missing: expected '{HEADER}', found a data row '{ROW1}'")
    p = write(tmp_path, csv_text("", ROW1))
    expect_error(p, f"{p} line 1: header missing: expected '{HEADER}', found an empty line")


def test_header_wrong_column(tmp_path) -> None:
    p = write(tmp_path, csv_text("TIMESTAMP,ContextTokens,OutputTokens", ROW1))
    expect_error(
        p,
        f"{p} line 1: bad header: expected '{HEADER}', "
        "found 'TIMESTAMP,ContextTokens,OutputTokens' "
        "(missing GeneratedTokens; unexpected 'OutputTokens')",
    )


def test_header_missing_column(tmp_path) -> None:
    p = write(tmp_path, csv_text("TIMESTAMP,ContextTokens", ROW1))
    expect_error(
        p,
        f"{p} line 1: bad header: expected '{HEADER}', found 'TIMESTAMP,ContextTokens' "
        "(missing GeneratedTokens)",
    )


def test_header_extra_column(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER + ",Extra", ROW1))
    with pytest.raises(TraceError, match=re.escape(f"{p} line 1: bad header: ") + r".*unexpected 'Extra'"):
        load_azure_trace(p)


def test_header_wrong_order_or_case(tmp_path) -> None:
    p = write(tmp_path, csv_text("ContextTokens,TIMESTAMP,GeneratedTokens", ROW1))
    with pytest.raises(TraceError, match=r"line 1: bad header: .*\(columns repeated or in the wrong order\)$"):
        load_azure_trace(p)
    p = write(tmp_path, csv_text(HEADER.lower(), ROW1))
    with pytest.raises(TraceError, match=r"line 1: bad header: .*missing TIMESTAMP, ContextTokens, GeneratedTokens"):
        load_azure_trace(p)


@pytest.mark.parametrize("final_eol", [False, True])
def test_header_only(tmp_path, final_eol) -> None:
    p = write(tmp_path, csv_text(HEADER, final_eol=final_eol))
    expect_error(p, f"{p} line 2: no data rows after the header")


def test_wrong_number_of_fields(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1, "2023-11-16 18:15:50.9951690,396"))
    expect_error(
        p,
        f"{p} line 3: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), found 2: "
        "'2023-11-16 18:15:50.9951690,396'",
    )
    p = write(tmp_path, csv_text(HEADER, ROW1 + ","))
    expect_error(
        p,
        f"{p} line 2: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), found 4: '{ROW1},'",
    )


def test_blank_line(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1, "", ROW2))
    expect_error(p, f"{p} line 3: blank line; expected a data row")
    p = write(tmp_path, csv_text(HEADER, ROW1, "", "", ROW2, final_eol=True))
    expect_error(p, f"{p} line 3: blank line; expected a data row")
    # Blank lines at the end of the file (an editor's) end the rows.
    for text in (csv_text(HEADER, ROW1, "", final_eol=True),
                 csv_text(HEADER, ROW1, ROW2, "", "", "", eol="\n")):
        t = load_azure_trace(write(tmp_path, text))
        assert t.prompt_lens.tolist() == [374, 396][:len(t)] and len(t) in (1, 2)
    # CRLF endings converted twice (\r\r\n): each \r ends a line; the message says so
    p = write(tmp_path, csv_text(HEADER, ROW1, ROW2, eol="\r\r\n", final_eol=True))
    expect_error(p, f"{p} line 2: blank line; expected a data row (line 1 ends in "
                    "\\r\\r\\n: a carriage return doubled, as when CRLF endings are "
                    "converted twice?)")
    expect_error(write(tmp_path, csv_text(HEADER, "", "", final_eol=True)),
                 f"{tmp_path / 'trace.csv'} line 4: no data rows after the header")


def test_sha256_is_of_the_bytes_read(tmp_path) -> None:
    import hashlib
    import os

    text = csv_text(HEADER, ROW1, ROW2, ROW3, final_eol=True).encode()
    p = write(tmp_path, text)
    assert load_azure_trace(p).sha256 == hashlib.sha256(text).hexdigest()
    # with max_requests, the header and the rows replayed: the rows after are not read
    first_two = csv_text(HEADER, ROW1, ROW2, final_eol=True).encode()
    assert load_azure_trace(p, max_requests=2).sha256 == hashlib.sha256(first_two).hexdigest()
    # a pipe (a process substitution is one) is hashed as it is read, once
    r, w = os.pipe()
    os.write(w, text)
    os.close(w)
    try:
        piped = load_azure_trace(f"/dev/fd/{r}")
    finally:
        os.close(r)
    assert piped.sha256 == hashlib.sha256(text).hexdigest()
    assert piped.prompt_lens.tolist() == [374, 396, 879]
    assert load_azure_trace(p).head(2).sha256 is None  # not what was read


@pytest.mark.parametrize(
    "ts",
    [
        "2023/11/16 18:15:50.9951690",
        "2023-11-16T18:15:50.9951690",
        "2023-11-16 18:15:50.",
        "2023-11-16 18:15:50.1234567890",
        "2023-11-16 18:15",
        " 2023-11-16 18:15:50.9951690",
        '"2023-11-16 18:15:50.9951690"',
        "",
    ],
)
def test_bad_timestamp_format(tmp_path, ts) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1, f"{ts},1,1"))
    expect_error(p, f"{p} line 3: TIMESTAMP is not of the form 'YYYY-MM-DD HH:MM:SS.fffffff' "
                    f"(0 to 9 fractional digits, no time zone): {ts!r}")


def test_a_gzip_file_is_named_as_such(tmp_path) -> None:
    import gzip

    p = tmp_path / "trace.csv.gz"
    for rows in (1, 2_000):  # a header line, or more than 1 KiB before a line break
        p.write_bytes(gzip.compress(csv_text(HEADER, *[ROW1] * rows).encode()))
        expect_error(p, f"{p} line 1: a gzip file, not CSV text: decompress it first "
                        "(gunzip FILE, or --trace <(zcat FILE))")


@pytest.mark.parametrize(
    "ts, reason",
    [
        ("2023-13-16 18:15:50.9951690", "month must be in 1..12"),
        ("2023-02-30 18:15:50.9951690", "day is out of range for month"),
        ("2023-11-16 24:00:00.0000000", "hour must be in 0..23"),
        ("2023-11-16 18:15:60.0000000", "second must be in 0..59"),
    ],
)
def test_impossible_timestamp(tmp_path, ts, reason) -> None:
    p = write(tmp_path, csv_text(HEADER, f"{ts},1,1"))
    expect_error(p, f"{p} line 2: TIMESTAMP is not a valid date and time: {ts!r} ({reason})")


@pytest.mark.parametrize("column", [1, 2])
@pytest.mark.parametrize("value", ["abc", "-5", "1.5", "1e3", " 7", "+7", "", "٣"])
def test_token_count_not_a_positive_integer(tmp_path, column, value) -> None:
    fields = ["2023-11-16 18:15:46.6805900", "10", "10"]
    fields[column] = value
    p = write(tmp_path, csv_text(HEADER, ",".join(fields)).encode("utf-8"))
    expect_error(p, f"{p} line 2: {COLUMNS[column]} is not a positive integer (digits only): "
                    f"{value!r}")


def test_context_tokens_zero(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1, "2023-11-16 18:15:50.9951690,0,109"))
    expect_error(p, f"{p} line 3: ContextTokens is 0; a request needs at least one prompt token")


def test_generated_tokens_zero(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, "2023-11-16 18:15:50.9951690,12,000"))
    expect_error(p, f"{p} line 2: GeneratedTokens is 0; a request needs at least one output token")


def test_token_count_too_large_for_int64(tmp_path) -> None:
    big = str(2**63)
    p = write(tmp_path, csv_text(HEADER, f"2023-11-16 18:15:50.9951690,{big},1"))
    expect_error(p, f"{p} line 2: ContextTokens does not fit in int64: '{big}'")
    ok = write(tmp_path, csv_text(HEADER, f"2023-11-16 18:15:50.9951690,{2**63 - 1},1"), "ok.csv")
    assert int(load_azure_trace(ok).prompt_lens[0]) == 2**63 - 1


def test_timestamps_go_backwards(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1, ROW3, ROW2))
    expect_error(
        p,
        f"{p} line 4: timestamps are unsorted: TIMESTAMP '2023-11-16 18:15:50.9951690' "
        "is earlier than '2023-11-16 18:15:51.2224670' on line 3",
    )
    # 100 ns back is still backwards.
    p = write(tmp_path, csv_text(HEADER, "2023-11-16 18:15:46.6805901,1,1", "2023-11-16 18:15:46.68059,1,1"))
    with pytest.raises(TraceError, match=r"line 3: timestamps are unsorted"):
        load_azure_trace(p)


def test_huge_field(tmp_path) -> None:
    digits = "1" * 65
    p = write(tmp_path, csv_text(HEADER, f"2023-11-16 18:15:50.9951690,{digits},1"))
    expect_error(
        p,
        f"{p} line 2: huge row: ContextTokens is 65 characters long (limit 64): "
        f"'{'1' * 40}'... (65 characters)",
    )
    p = write(tmp_path, csv_text(HEADER, "1,2,3," + "x" * 100))
    with pytest.raises(TraceError, match=r"line 2: huge row: field 4 is 100 characters long"):
        load_azure_trace(p)


@pytest.mark.parametrize("eol", ["\r\n", "\n", "\r"], ids=["crlf", "lf", "cr"])
def test_huge_line(tmp_path, eol) -> None:
    line = ",".join(["x" * 60] * 17)  # 1036 characters, every field short
    p = write(tmp_path, csv_text(HEADER, ROW1, line, ROW2, eol=eol))
    expect_error(p, f"{p} line 3: huge row: line is longer than 1024 bytes")
    p = write(tmp_path, csv_text(HEADER + "," * 1100, ROW1, eol=eol))
    expect_error(p, f"{p} line 1: huge row: line is longer than 1024 bytes")
    # Exactly 1024 characters is not huge (it fails later, for its field count).
    p = write(tmp_path, csv_text(HEADER, ROW1, "x" * 4 + "," * 1020, eol=eol))
    with pytest.raises(TraceError, match=r"line 3: expected 3 fields .* found 1021"):
        load_azure_trace(p)


@pytest.mark.parametrize("bad", [0, -1])
def test_max_requests_below_one(tmp_path, bad) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1))
    expect_error(p, f"{p}: max_requests must be >= 1 or None, got {bad}", max_requests=bad)
    with pytest.raises(TypeError):
        load_azure_trace(p, max_requests=True)


def test_not_utf8(tmp_path) -> None:
    p = write(tmp_path, csv_text(HEADER, ROW1).encode("ascii") + b"\r\n2023\xff,1,1")
    expect_error(p, f"{p} line 3: not UTF-8 text (byte 5 of the line)")


def test_trace_validates_its_arrays() -> None:
    f = np.zeros(2, dtype=np.float64)
    i = np.ones(2, dtype=np.int64)
    with pytest.raises(TypeError):
        Trace("x", f, i.astype(np.int32), i)
    with pytest.raises(ValueError):
        Trace("x", f, i, i[:1])


# --- fuzz: anything either loads or raises TraceError ----------------------------------

_PIECES = st.sampled_from(
    [HEADER, ROW1, ROW2, ROW3, "", ",", "0", "-1", "1" * 70, "x" * 1030, "2023-11-16 18:15:4",
     '"', "\x00", "\ufeff", "é", "TIMESTAMP", "2023-11-16 18:15:46.6805900,1,1", "\r", "\n"]
)
_LINES = st.lists(st.one_of(_PIECES, st.text(max_size=40)), max_size=8)
_EOLS = st.sampled_from(["\r\n", "\n", "\r"])


def _load_or_trace_error(path: Path, max_requests) -> None:
    try:
        t = load_azure_trace(path, max_requests=max_requests)
    except TraceError as exc:
        msg = str(exc)
        assert "\n" not in msg and "\r" not in msg
        assert str(path) in msg
    else:
        assert len(t) >= 1 and t.arrival_s[0] == 0.0
        assert np.all(np.diff(t.arrival_s) >= 0)
        assert np.all(t.prompt_lens >= 1) and np.all(t.output_lens >= 1)
        if max_requests is not None:
            assert len(t) <= max_requests


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.builds(lambda head, body: head + body, st.sampled_from([b"", HEADER.encode() + b"\r\n"]),
                  st.binary(max_size=300)),
    ),
    max_requests=st.one_of(st.none(), st.integers(1, 5)),
)
def test_fuzz_random_bytes(tmp_path_factory, data, max_requests) -> None:
    p = tmp_path_factory.getbasetemp() / "fuzz_bytes.csv"
    p.write_bytes(data)
    _load_or_trace_error(p, max_requests)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_LINES, eol=_EOLS, with_header=st.booleans(), max_requests=st.one_of(st.none(), st.integers(1, 5)))
def test_fuzz_garbage_lines(tmp_path_factory, lines, eol, with_header, max_requests) -> None:
    p = tmp_path_factory.getbasetemp() / "fuzz_lines.csv"
    text = eol.join(([HEADER] if with_header else []) + lines)
    p.write_bytes(text.encode("utf-8", "surrogatepass"))
    _load_or_trace_error(p, max_requests)


def test_a_last_row_without_a_line_ending_in_a_crlf_file_is_marked(tmp_path) -> None:
    """The Azure files end every line in \\r\\n: a last row without one may be cut
    short (``...,381,8`` of ``...,381,84``), which the run's notes say
    (``scenario.replay_trace``); a file of \\n endings, or one ending in a line break,
    is not marked, nor is a row the replay stops before."""
    def cut(text: str, **kw):
        return load_azure_trace(write(tmp_path, text), **kw).unterminated_row

    assert cut(csv_text(HEADER, ROW1, ROW2)) == 3
    assert cut(csv_text(HEADER, ROW1, ROW2, final_eol=True)) is None
    assert cut(csv_text(HEADER, ROW1, ROW2, eol="\n")) is None
    assert cut(csv_text(HEADER, ROW1, ROW2), max_requests=1) is None
    # mixed endings (some \r\n, some \n): not a CRLF file, not marked
    assert cut(f"{HEADER}\r\n{ROW1}\n{ROW2}") is None
    assert cut(f"{HEADER}\n{ROW1}\r\n{ROW2}") is None

