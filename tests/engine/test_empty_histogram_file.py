"""An empty ``--token-ids hist:PATH`` file said ``has no positive count``, where an empty
trace says ``line 1: empty file; expected header ...``: it says it is empty, in the same
form."""

from __future__ import annotations

import pytest

from ipc_bench.engine.config import ConfigError
from ipc_bench.engine.token_ids import token_id_distribution

V = 128_256


@pytest.mark.parametrize("text", ["", "\n\n", "  \r\n"])
def test_empty_histogram_file_says_empty(tmp_path, text):
    path = tmp_path / "hist.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        token_id_distribution(f"hist:{path}", V)
    assert str(exc.value) == (f"token-id histogram {path} line 1: empty file; expected "
                              "rows of 'token_id,count' (two integers)")


def test_header_only_histogram_still_has_no_positive_count(tmp_path):
    path = tmp_path / "hist.csv"
    path.write_text("token_id,count\n")
    with pytest.raises(ConfigError) as exc:
        token_id_distribution(f"hist:{path}", V)
    assert str(exc.value) == f"token-id histogram {path} has no positive count"
