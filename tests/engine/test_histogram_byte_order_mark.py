"""``--token-ids hist:PATH`` takes a file that starts with a UTF-8 byte-order mark, as
``--trace`` does, where it refused it (``expected 'token_id,count' (two integers), got
'\\ufeff5,10'``); a byte that is not UTF-8 on line 1 is counted after the mark, as a
trace's is."""

from __future__ import annotations

import pytest

from ipc_bench.engine.config import ConfigError
from ipc_bench.engine.token_ids import load_histogram, normalized_histogram

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("body", [b"5,10\n7,3\n", b"token_id,count\r\n5,10\r\n7,3\r\n",
                                  b"# ids\n5,10\n7,3"])
def test_a_histogram_with_a_byte_order_mark_reads_as_without(tmp_path, body):
    path = tmp_path / "hist.csv"
    path.write_bytes(BOM + body)
    assert normalized_histogram(load_histogram(str(path), 16)) == "5,10\n7,3\n"


def test_a_bad_byte_on_line_1_after_the_mark_is_counted_as_in_a_trace(tmp_path):
    path = tmp_path / "hist.csv"
    path.write_bytes(BOM + b"5,1\xff0\n")
    with pytest.raises(ConfigError) as bad:
        load_histogram(str(path), 16)
    assert str(bad.value) == f"token-id histogram {path} line 1: not UTF-8 text (byte 4 of the line)"
    path.write_bytes(BOM + b"5,10\n7,\xff\n")
    with pytest.raises(ConfigError) as bad:
        load_histogram(str(path), 16)
    assert str(bad.value) == f"token-id histogram {path} line 2: not UTF-8 text (byte 3 of the line)"


def test_a_mark_elsewhere_is_still_refused(tmp_path):
    path = tmp_path / "hist.csv"
    path.write_bytes(b"5,10\n" + BOM + b"7,3\n")
    with pytest.raises(ConfigError) as bad:
        load_histogram(str(path), 16)
    assert str(bad.value) == (f"token-id histogram {path} line 2: expected 'token_id,count' "
                              "(two integers), got '\\ufeff7,3'")
